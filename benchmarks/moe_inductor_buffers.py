"""What Inductor keeps alive for the routed experts: traced loop vs the opaque op (CPU).

Compiles `RoutedMoE` (DeepSeek-V3's expert count and routing, narrower widths so it runs on a
CPU) twice with Inductor's CPU backend — the expert loop traced by Dynamo, and the
`eaglegraph::routed_experts` op the compiled target calls — and reads the generated wrapper:
the peak of the buffers it allocates (`empty_strided`, minus `del`, following reuse) and the
matmuls it launches. Inductor's buffer planning is the same for its CPU and CUDA wrappers;
widths scale it linearly. Run: PYTHONPATH=. python3 benchmarks/moe_inductor_buffers.py
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from torch._inductor import codecache

import eaglegraph.models.moe as moe_module
from eaglegraph.pair import load_pair
from eaglegraph.pair.mla import moe_dims
from eaglegraph.pair.presets import materialize

TOKENS, HIDDEN, INTER = 512, 1024, 256


def wrapper_code(traced_loop: bool) -> str:
    cfg = moe_dims(load_pair(materialize("deepseek-v3-mtp-4l")).target.config)
    assert cfg is not None
    cfg = dataclasses.replace(cfg, moe_intermediate_size=INTER)
    layer = moe_module.RoutedMoE(HIDDEN, cfg, 1e-6, torch.float32, torch.device("cpu"))
    for p in layer.parameters():
        torch.nn.init.normal_(p, std=0.02)
    codes: list[str] = []
    load = codecache.PyCodeCache.load_by_key_path
    opaque = moe_module.routed_experts

    def spy(key: str, path: str, *args: object, **kwargs: object) -> object:
        codes.append(Path(path).read_text())
        return load(key, path, *args, **kwargs)

    codecache.PyCodeCache.load_by_key_path = spy  # type: ignore[method-assign]
    if traced_loop:
        moe_module.routed_experts = moe_module.experts  # type: ignore[assignment]
    try:
        torch._dynamo.reset()
        with torch.inference_mode():
            torch.compile(layer, fullgraph=True)(torch.randn(TOKENS, HIDDEN))
    finally:
        codecache.PyCodeCache.load_by_key_path = load  # type: ignore[method-assign]
        moe_module.routed_experts = opaque
    code = codes[-1]
    return code[code.index("def call(") :]


def peak_bytes(call: str) -> int:
    live = top = 0
    sizes: dict[str, int] = {}
    for line in call.splitlines():
        made = re.search(r"(buf\d+) = empty_strided_cpu\(\(([\d, ]+)\),.*torch\.(\w+)\)", line)
        if made:
            n = torch.tensor([], dtype=getattr(torch, made.group(3))).element_size()
            for dim in filter(None, (d.strip() for d in made.group(2).split(","))):
                n *= int(dim)
            sizes[made.group(1)] = n
            live += n
            top = max(top, live)
        for name in re.findall(r"del (buf\d+)", line):
            if name not in sizes:
                continue
            if f"= {name}; del {name}" in line:  # reused under a new name
                sizes[line.split("=")[0].strip()] = sizes.pop(name)
            else:
                live -= sizes.pop(name)
    return top


def main() -> None:
    print(f"RoutedMoE, {TOKENS} tokens, hidden {HIDDEN}, expert width {INTER}, fp32")
    for name, loop in (("expert loop traced", True), ("opaque routed_experts op", False)):
        call = wrapper_code(loop)
        print(
            f"  {name:26} Inductor buffers peak {peak_bytes(call) / 2**20:6.1f} MiB, "
            f"{call.count('extern_kernels.mm')} matmuls in compiled code"
        )


if __name__ == "__main__":
    main()
