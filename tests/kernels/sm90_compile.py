"""Compile every kernel for an H100 (sm_90) without a GPU, through the wrappers' own launches.

Triton's CPU interpreter executes kernels as Python and accepts code the GPU compiler
rejects (loop-carried type changes, dot shapes, constexpr misuse). This script runs each
wrapper with ``meta`` tensors at serving-like shapes while ``JITFunction.run`` is replaced by
a full ``triton.compile`` for ``GPUTarget("cuda", 90, 32)`` (frontend, TTGIR, PTX, ptxas), so
nothing is launched. Run it in a fresh process with ``TRITON_INTERPRET=0``; it prints one
line per compiled variant and exits non-zero if any failed.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

os.environ["TRITON_INTERPRET"] = "0"
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.jit import JITFunction

import eaglegraph.kernels._triton as kt

TARGET = GPUTarget("cuda", 90, 32)
TYPES = {
    torch.float32: "fp32",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.int32: "i32",
    torch.int64: "i64",
}
RESULTS: list[tuple[str, dict[str, Any], str]] = []


def _arg_type(v: Any, path: tuple[int, ...], specialize: bool, constexprs: dict) -> Any:
    """The signature entry of runtime argument ``v`` at ``path`` (a tuple argument, such as the
    guard log, gives a tuple of its elements' entries); constants go into ``constexprs``."""
    if isinstance(v, tuple):
        return tuple(_arg_type(x, (*path, j), specialize, constexprs) for j, x in enumerate(v))
    if isinstance(v, torch.Tensor):
        return "*" + TYPES[v.dtype]
    if isinstance(v, bool):
        return "i1"
    if isinstance(v, int) and v == 1 and specialize:
        constexprs[path] = 1  # the JIT specialises ints equal to 1
        return "constexpr"
    if isinstance(v, int):
        return "i64" if abs(v) >= 2**31 else "i32"
    return "fp32"


def _compile_instead_of_launch(self: JITFunction, *args: Any, grid: Any, warmup: bool, **kw: Any):
    bound = dict(zip(self.arg_names, args, strict=False))
    bound.update({k: v for k, v in kw.items() if k in self.arg_names})
    signature: dict[str, Any] = {}
    constexprs: dict[tuple[int, ...], Any] = {}
    for i, p in enumerate(self.params):
        v = bound[p.name]
        if p.is_constexpr:
            signature[p.name] = "constexpr"
            constexprs[(i,)] = v
        else:
            specialize = not getattr(p, "do_not_specialize", False)
            signature[p.name] = _arg_type(v, (i,), specialize, constexprs)
    consts = {
        self.params[i[0]].name + "".join(f"[{j}]" for j in i[1:]): v for i, v in constexprs.items()
    }
    try:
        triton.compile(
            ASTSource(self, signature, constexprs),
            target=TARGET,
            options={"num_warps": kw.get("num_warps", 4)},
        )
        RESULTS.append((self.__name__, consts, "ok"))
    except Exception as e:  # report every failure, not just the first
        detail = "".join(traceback.format_exception(e))[-3000:]
        RESULTS.append((self.__name__, consts, f"FAILED: {type(e).__name__}: {detail}"))


def _launch_all(z: Any, guard: Any, n: int) -> None:
    """Every wrapper once, at serving-like shapes with ``n`` requests (GQA unless n == 1)."""
    from eaglegraph.kernels import attention, block_table, eagle, gather, kv_cache, sampling

    i32, i64, bf16 = torch.int32, torch.int64, torch.bfloat16
    nkv = 8 if n > 1 else 32
    for dt, hd in ((bf16, 128), (torch.float32, 64))[: 2 if n > 1 else 1]:
        q, out = z(64, 32, hd, dtype=dt), z(64, 32, hd, dtype=dt)
        kc = z(100, 16, nkv, hd, dtype=dt)
        varlen = attention.block_table_meta(
            z(9, dtype=i32), z(8, dtype=i32), z(8, 64, dtype=i32), n
        )
        attention.paged_attention(q, kc, kc, out, varlen, max_query_len=8, scale=0.1, guard=guard)
        csr = attention.csr_meta(
            z(9, dtype=i32), z(9, dtype=i32), z(400, dtype=i32), z(8, dtype=i32), n
        )
        # long-query tiles in bf16; fp32 (ieee dots) is slow to build
        long_q = 100 if dt is bf16 else 8
        attention.paged_attention(q, kc, kc, out, csr, max_query_len=long_q, scale=0.1, guard=guard)
        decode = attention.csr_decode_meta(z(65, dtype=i32), z(400, dtype=i32), z(64, dtype=i32), n)
        attention.paged_attention(q, kc, kc, out, decode, max_query_len=1, scale=0.1, guard=guard)
        kv_cache.write_kv(
            z(64, nkv, hd, dtype=dt),
            z(64, nkv, hd, dtype=dt),
            kc,
            kc,
            z(64, dtype=i64),
            n,
            guard=guard,
        )
    attention.build_csr_page_indices(
        z(400, dtype=i32), z(8, 64, dtype=i32), z(9, dtype=i32), n, guard=guard
    )
    block_table.gather_block_tables(
        z(16, 64, dtype=i32), z(8, dtype=i32), z(8, 64, dtype=i32), n, n, guard=guard
    )
    block_table.compute_slot_mappings(
        z(8, 64, dtype=i32),
        z(9, dtype=i32),
        z(512, dtype=i64),
        z(512, dtype=i64),
        n,
        512,
        16,
        100,
        guard=guard,
    )
    block_table.compute_slot_mappings_padded_rows(
        z(8, 64, dtype=i32), z(512, dtype=i64), z(512, dtype=i64), n, 16, 100, guard=guard
    )
    for pad in (True, False):
        eagle.prepare_eagle_inputs(
            z(9, dtype=i32),
            z(8, dtype=i32),
            z(512, dtype=i32),
            z(512, dtype=i64),
            z(8, dtype=i32),
            z(8, dtype=i64),
            z(512, dtype=i32),
            z(512, dtype=i64),
            z(9, dtype=i32),
            z(8, dtype=i32),
            z(8, dtype=i64),
            z(dtype=i64),
            n,
            8,
            pad,
            guard=guard,
        )
    eagle.prepare_eagle_decode(
        z(8, 4, dtype=i64),
        z(8, dtype=i32),
        z(8, dtype=i32),
        z(512, dtype=i32),
        z(512, dtype=i64),
        z(9, dtype=i32),
        z(8, dtype=i32),
        n,
        8,
        4096,
    )
    eagle.update_eagle_draft_inputs(
        z(8, dtype=i64),
        z(64, 4096, dtype=bf16),
        z(8, 4, dtype=i64),
        z(512, dtype=i32),
        z(512, 4096, dtype=bf16),
        z(512, dtype=i64),
        z(8, dtype=i32),
        z(dtype=i64),
        n,
        4,
        4096,
    )
    gather.gather_rows(
        z(512, 4096, dtype=bf16), z(8, dtype=i64), z(8, 4096, dtype=bf16), n, 512, guard=guard
    )
    gather.gather_rows(z(512, dtype=i64), z(8, dtype=i64), z(8, dtype=i64), n, 512, guard=guard)
    sampling.argmax_rows(z(8, 128256), z(8, dtype=i64), n)
    sampling.argmax_map_draft(z(8, 32000), z(32000, dtype=i64), z(8, dtype=i64), n)
    sampling.greedy_verify(
        z(40, dtype=i64),
        z(8, 4, dtype=i64),
        z(9, dtype=i32),
        n,
        4 if n > 1 else 1,
        z(8, dtype=i32),
        z(8, dtype=i32),
        z(8, dtype=i64),
        z(8, 5, dtype=i64),
    )
    sampling.greedy_verify(  # per-request draft counts, read on the device
        z(40, dtype=i64),
        z(8, 4, dtype=i64),
        z(9, dtype=i32),
        n,
        z(8, dtype=i32),
        z(8, dtype=i32),
        z(8, dtype=i32),
        z(8, dtype=i64),
        z(8, 5, dtype=i64),
    )
    if n > 1:  # GQA groups that are not a power of two or wider than 16 rows; narrow KV rows
        for nh, nkv in ((12, 4), (32, 1)):
            q, out, kc = (
                z(64, nh, 128, dtype=bf16),
                z(64, nh, 128, dtype=bf16),
                z(100, 16, nkv, 128, dtype=bf16),
            )
            varlen = attention.block_table_meta(
                z(9, dtype=i32), z(8, dtype=i32), z(8, 64, dtype=i32), n
            )
            attention.paged_attention(q, kc, kc, out, varlen, max_query_len=4, scale=0.1)
            decode = attention.csr_decode_meta(
                z(65, dtype=i32), z(400, dtype=i32), z(64, dtype=i32), n
            )
            attention.paged_attention(
                q, kc, kc, out, decode, max_query_len=1, scale=0.1, guard=guard
            )
        kc = z(100, 16, 2, 64, dtype=bf16)  # 128 elements per token: several tokens a program
        kv_cache.write_kv(
            z(64, 2, 64, dtype=bf16), z(64, 2, 64, dtype=bf16), kc, kc, z(64, dtype=i64), 20
        )
    if n > 1:  # unguarded variants of the guarded kernels (the GUARD=False path)
        gather.gather_rows(
            z(512, 4096, dtype=bf16), z(8, dtype=i64), z(8, 4096, dtype=bf16), n, 512
        )
        attention.paged_attention(
            z(64, 32, 128, dtype=bf16),
            z(100, 16, 8, 128, dtype=bf16),
            z(100, 16, 8, 128, dtype=bf16),
            z(64, 32, 128, dtype=bf16),
            attention.csr_decode_meta(z(65, dtype=i32), z(400, dtype=i32), z(64, dtype=i32), n),
            max_query_len=1,
            scale=0.1,
        )


def main() -> int:
    from eaglegraph.kernels import attention, block_table, eagle, gather, kv_cache, sampling
    from eaglegraph.kernels.guard import Guard, GuardLog

    JITFunction.run = _compile_instead_of_launch  # type: ignore[method-assign]
    for mod in (attention, block_table, eagle, gather, kv_cache, sampling, kt):
        mod.check_device = lambda *tensors: None  # meta tensors are fine: nothing runs

    def z(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.empty(shape, dtype=dtype, device="meta")

    t0 = time.time()
    _launch_all(z, guard=Guard(GuardLog(64, "meta")), n=5)
    # Counts of 1 (one request, MHA) are specialised into constexprs: compile those too.
    _launch_all(z, guard=Guard(GuardLog(64, "meta")), n=1)
    failed = 0
    for name, consts, status in RESULTS:
        print(name, consts, status)
        failed += status != "ok"
    print(f"compiled {len(RESULTS) - failed}/{len(RESULTS)} variants in {time.time() - t0:.0f}s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
