"""Benchmark: every kernel wrapper under Triton's CPU interpreter, at the rig's tiny shapes.

Under the interpreter each executed ``tl`` operation costs ~0.1 ms whatever its block width,
so a launch costs about programs x operations-per-program; this measures what the rig's CPU
test suite pays per call. Shapes: 4 q heads, 2 kv heads, head_dim 16, block size 16, a
256-token block-table row; a verify batch of 4 requests x (K+1=4) tokens, a 64-token
prefill, a 4-row draft decode. Each timed repetition makes 8 calls (8 layers' worth).

Run: python benchmarks/bench_kernels_cpu.py [--repeat 3] [--only NAME] [--against REF]
``--against REF`` (e.g. ``HEAD``) also runs the kernels of git revision REF (its
``eaglegraph`` package, exported to a temporary directory) and prints both and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"  # this benchmark is about the interpreter, GPU or not
ROOT = Path(__file__).resolve().parents[1]
if "EAGLEGRAPH_BENCH_ROOT" in os.environ:  # a baseline export (see --against)
    sys.path.insert(0, os.environ["EAGLEGRAPH_BENCH_ROOT"])
else:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import eaglegraph.kernels  # noqa: E402, F401  (chooses the interpreter before triton)
from eaglegraph.kernels.attention import (  # noqa: E402
    PagedMeta,
    block_table_meta,
    build_csr_page_indices,
    csr_decode_meta,
    csr_meta,
    paged_attention,
)
from eaglegraph.kernels.block_table import (  # noqa: E402
    compute_slot_mappings,
    compute_slot_mappings_padded_rows,
    gather_block_tables,
)
from eaglegraph.kernels.eagle import (  # noqa: E402
    prepare_eagle_decode,
    prepare_eagle_inputs,
    update_eagle_draft_inputs,
)
from eaglegraph.kernels.embedding import embedding_lookup  # noqa: E402
from eaglegraph.kernels.gather import gather_rows  # noqa: E402
from eaglegraph.kernels.guard import Guard, GuardLog  # noqa: E402
from eaglegraph.kernels.kv_cache import write_kv  # noqa: E402
from eaglegraph.kernels.rope import apply_rotary  # noqa: E402
from eaglegraph.kernels.sampling import (  # noqa: E402
    argmax_map_draft,
    argmax_rows,
    greedy_verify,
)

NH, NKV, HD, BS, NCOLS, NBLOCKS = 4, 2, 16, 16, 16, 64
HIDDEN, VOCAB, DRAFT_VOCAB, K = 64, 256, 128, 3
LAYERS = 8
CPU = torch.device("cpu")
i32, i64 = torch.int32, torch.int64


class Batch:
    """Requests with disjoint pages: query lengths, KV lengths, both metadata styles."""

    def __init__(self, q_lens: list[int], kv_lens: list[int], gen: torch.Generator) -> None:
        self.q_lens, self.kv_lens = q_lens, kv_lens
        self.num_reqs, self.tokens = len(q_lens), sum(q_lens)
        perm = torch.randperm(NBLOCKS, generator=gen).tolist()
        self.block_table = torch.zeros((4, NCOLS), dtype=i32)
        indptr, indices, last, at = [0], [], [], 0
        for r, n in enumerate(kv_lens):
            pages = perm[at : at + -(-n // BS)]
            at += len(pages)
            self.block_table[r, : len(pages)] = torch.tensor(pages, dtype=i32)
            indices += pages
            indptr.append(indptr[-1] + len(pages))
            last.append(n - (len(pages) - 1) * BS if pages else 0)
        pad = 4 - self.num_reqs
        self.qsl = torch.tensor([0, *torch.tensor(q_lens).cumsum(0).tolist()] + [self.tokens] * pad)
        self.qsl = self.qsl.to(i32)
        self.seq_lens = torch.tensor(kv_lens + [0] * pad, dtype=i32)
        self.kv_indptr = torch.tensor(indptr + [indptr[-1]] * pad, dtype=i32)
        self.kv_indices = torch.tensor(indices + [0] * (NBLOCKS - len(indices)), dtype=i32)
        self.last_page_len = torch.tensor(last + [0] * pad, dtype=i32)
        positions = [kv - q + i for q, kv in zip(q_lens, kv_lens, strict=True) for i in range(q)]
        self.positions = torch.tensor(positions + [0] * (64 - len(positions)), dtype=i64)
        slots = []
        for r, (q, kv) in enumerate(zip(q_lens, kv_lens, strict=True)):
            for p in range(kv - q, kv):
                slots.append(int(self.block_table[r, p // BS]) * BS + p % BS)
        self.slots = torch.tensor(slots + [-1] * (64 - len(slots)), dtype=i64)
        self.max_q = max(q_lens)


def cases(guarded: bool) -> dict[str, Callable[[], None]]:
    """name -> one call, over buffers built once."""
    gen = torch.Generator().manual_seed(0)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=gen)

    log = GuardLog(1 << 12, CPU) if guarded else None

    def g() -> Guard | None:
        return Guard(log) if log is not None else None

    verify = Batch([K + 1] * 4, [21, 34, 48, 61], gen)
    prefill = Batch([64], [64], gen)
    decode = Batch([1] * 4, [22, 35, 49, 62], gen)
    k_cache, v_cache = randn(NBLOCKS, BS, NKV, HD), randn(NBLOCKS, BS, NKV, HD)
    q64, out64 = randn(64, NH, HD), torch.zeros(64, NH, HD)
    k64, v64 = randn(64, NKV, HD), randn(64, NKV, HD)
    scale = HD**-0.5
    logits, draft_logits = randn(64, VOCAB), randn(4, DRAFT_VOCAB)
    d2t = torch.randint(0, VOCAB - DRAFT_VOCAB, (DRAFT_VOCAB,), generator=gen)
    argmax_out = torch.zeros(64, dtype=i64)
    hidden = randn(64, HIDDEN)
    hidden_out = torch.zeros(64, HIDDEN)
    last_idx = torch.tensor([3, 7, 11, 15], dtype=i64)
    cos_sin = randn(256, HD)
    embed = randn(VOCAB, HIDDEN)
    ids = torch.randint(0, VOCAB, (64,), generator=gen)
    kv_indices = torch.zeros(NBLOCKS, dtype=i32)
    bt_src = torch.randint(0, NBLOCKS, (8, NCOLS), generator=gen).to(i32)
    bt_dst = torch.zeros(4, NCOLS, dtype=i32)
    idx_mapping = torch.tensor([5, 1, 6, 2], dtype=i32)
    slot_out = torch.zeros(64, dtype=i64)
    drafts = torch.randint(0, VOCAB, (4, K), generator=gen)
    n_acc, n_rej, next_tok = (torch.zeros(4, dtype=dt) for dt in (i32, i32, i64))
    accepted = torch.zeros(4, K + 1, dtype=i64)
    e_ids, e_pos = torch.zeros(64, dtype=i32), torch.zeros(64, dtype=i64)
    e_qsl, e_seq = torch.zeros(5, dtype=i32), torch.zeros(4, dtype=i32)
    e_last, step = torch.zeros(4, dtype=i64), torch.zeros(1, dtype=i64)
    rejected = torch.tensor([1, 0, 2, 3], dtype=i32)
    next_tokens = torch.randint(0, VOCAB, (4,), generator=gen)
    target_ids = torch.randint(0, VOCAB, (64,), generator=gen).to(i32)

    def attention(meta: PagedMeta, max_q: int) -> Callable[[], None]:
        return lambda: paged_attention(
            q64, k_cache, v_cache, out64, meta, max_query_len=max_q, scale=scale, guard=g()
        )

    def varlen(b: Batch) -> Callable[[], None]:
        return attention(block_table_meta(b.qsl, b.seq_lens, b.block_table, b.num_reqs), b.max_q)

    def csr(b: Batch) -> Callable[[], None]:
        meta = csr_meta(b.qsl, b.kv_indptr, b.kv_indices, b.last_page_len, b.num_reqs)
        return attention(meta, b.max_q)

    def kv(b: Batch) -> Callable[[], None]:
        return lambda: write_kv(k64, v64, k_cache, v_cache, b.slots, b.tokens, g())

    def slots(b: Batch) -> Callable[[], None]:
        return lambda: compute_slot_mappings(
            b.block_table, b.qsl, b.positions, slot_out, b.num_reqs, 64, BS, NBLOCKS, g()
        )

    return {
        "varlen_attention verify 4x4": varlen(verify),
        "varlen_attention prefill 64": varlen(prefill),
        "csr_prefill verify 4x4": csr(verify),
        "csr_prefill prefill 64": csr(prefill),
        "csr_decode 4 rows": attention(
            csr_decode_meta(decode.kv_indptr, decode.kv_indices, decode.last_page_len, 4), 1
        ),
        "write_kv 16 tokens": kv(verify),
        "write_kv 64 tokens": kv(prefill),
        "argmax_rows 16 rows": lambda: argmax_rows(logits, argmax_out, 16),
        "argmax_rows 64 rows": lambda: argmax_rows(logits, argmax_out, 64),
        "argmax_map_draft 4 rows": lambda: argmax_map_draft(draft_logits, d2t, argmax_out, 4),
        "gather_rows 4x64": lambda: gather_rows(hidden, last_idx, hidden_out, 4, 16, g()),
        "gather_rows 4 (1-D)": lambda: gather_rows(e_pos, last_idx, slot_out, 4, 16, g()),
        "compute_slot_mappings verify": slots(verify),
        "compute_slot_mappings prefill": slots(prefill),
        "slot_mappings_padded_rows 4": lambda: compute_slot_mappings_padded_rows(
            decode.block_table, decode.positions, slot_out, 4, BS, NBLOCKS, g()
        ),
        "gather_block_tables 4": lambda: gather_block_tables(
            bt_src, idx_mapping, bt_dst, 3, 4, g()
        ),
        "build_csr_page_indices 4": lambda: build_csr_page_indices(
            kv_indices, verify.block_table, verify.kv_indptr, 4, g()
        ),
        "greedy_verify 4": lambda: greedy_verify(
            argmax_out, drafts, verify.qsl, 4, K, n_acc, n_rej, next_tok, accepted
        ),
        "prepare_eagle_inputs 4": lambda: prepare_eagle_inputs(
            verify.qsl,
            verify.seq_lens,
            target_ids,
            verify.positions,
            rejected,
            next_tokens,
            e_ids,
            e_pos,
            e_qsl,
            e_seq,
            e_last,
            step,
            4,
            4,
            True,
            g(),
        ),
        "prepare_eagle_decode 4": lambda: prepare_eagle_decode(
            drafts, verify.seq_lens, rejected, e_ids, e_pos, e_qsl, e_seq, 4, 4, 256
        ),
        "update_eagle_draft_inputs 4": lambda: update_eagle_draft_inputs(
            argmax_out, hidden, drafts, e_ids, hidden_out, e_pos, e_seq, step, 4, K, 256
        ),
        "rope 16 tokens": lambda: apply_rotary(q64, k64, verify.positions, cos_sin, 16),
        "embedding 16 tokens": lambda: embedding_lookup(embed, ids, hidden_out, 16),
    }


def measure(repeat: int, only: str | None) -> dict[str, dict[str, float]]:
    """{variant: {case: ms per call}}: the best of ``repeat`` runs of LAYERS calls each (the
    least disturbed by other load on the machine)."""
    torch.set_num_threads(1)
    results: dict[str, dict[str, float]] = {}
    for variant, guarded in (("unguarded", False), ("guarded", True)):
        timings: dict[str, float] = {}
        for name, call in cases(guarded).items():
            if only and only not in name:
                continue
            call()  # warm-up: first-launch costs (AST rewriting) are not per call
            runs = []
            for _ in range(repeat):
                start = time.perf_counter()
                for _ in range(LAYERS):
                    call()
                runs.append((time.perf_counter() - start) * 1000 / LAYERS)
            timings[name] = min(runs)
        results[variant] = timings
    return results


def baseline(ref: str, repeat: int, only: str | None) -> dict[str, dict[str, float]]:
    """Run this script against the ``eaglegraph`` package of git revision ``ref``."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "archive", ref, "eaglegraph"], cwd=ROOT, check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        cmd = [sys.executable, __file__, "--json", "--repeat", str(repeat)]
        if only:
            cmd += ["--only", only]
        env = {**os.environ, "EAGLEGRAPH_BENCH_ROOT": tmp}
        proc = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
        return json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", help="run only cases whose name contains this")
    parser.add_argument("--against", metavar="REF", help="git revision to compare with")
    parser.add_argument("--json", action="store_true", help="print the timings as JSON")
    args = parser.parse_args()
    before = baseline(args.against, args.repeat, args.only) if args.against else None
    after = measure(args.repeat, args.only)
    if args.json:
        print(json.dumps(after))
        return
    for variant, timings in after.items():
        print(f"\n{variant} (ms per call, interpreter)")
        if before is None:
            for name, ms in timings.items():
                print(f"  {name:32s} {ms:9.2f}")
            print(f"  {'total':32s} {sum(timings.values()):9.2f}")
            continue
        print(f"  {'':32s} {args.against:>9s} {'now':>9s} {'ratio':>7s}")
        old_total = new_total = 0.0
        for name, ms in timings.items():
            old = before.get(variant, {}).get(name)
            if old is None:
                print(f"  {name:32s} {'-':>9s} {ms:9.2f}")
                continue
            old_total, new_total = old_total + old, new_total + ms
            print(f"  {name:32s} {old:9.2f} {ms:9.2f} {old / ms:6.1f}x")
        ratio = old_total / new_total if new_total else float("nan")
        print(f"  {'total':32s} {old_total:9.2f} {new_total:9.2f} {ratio:6.1f}x")


if __name__ == "__main__":
    main()
