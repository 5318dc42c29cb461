"""The GPU a plan is for: compute capability and memory, which drive the engines' GPU rules.

Support engineers plan for the customer's GPU, not the one they run on: `--gpu B200` on a
laptop must give the plan a B200 server would build (capture ceiling, attention backend
support, default batch limits). The cards are data (`known.gpus`); a card the table lacks is
described by its memory and capability (`--gpu-memory`, `--capability`).
"""

from __future__ import annotations

from dataclasses import replace

from eaglegraph.errors import BadInput, unknown_choice
from eaglegraph.known.gpus import GPU_NAMES, GPU_TABLE, GpuSpec, find_gpu

__all__ = ["DEFAULT_GPU", "GPUS", "GpuSpec", "get_gpu"]

GPUS: dict[str, GpuSpec] = {g.name: g for g in GPU_TABLE}

DEFAULT_GPU = "H100"


def get_gpu(
    name: str | None,
    memory_gib: float | None = None,
    capability: tuple[int, int] | None = None,
) -> GpuSpec:
    """A GPU by name (any spelling `known.gpus` lists; H100 when none is given), with its
    memory and capability replaced where the user gave them; an unknown name gets the closest
    names."""
    if name is None:
        gpu = GPUS[DEFAULT_GPU]
        if memory_gib is not None or capability is not None:
            gpu = replace(gpu, name="custom GPU", note="described by --gpu-memory/--capability")
    else:
        found = find_gpu(name)
        if found is None:
            if memory_gib is None or capability is None:
                raise unknown_choice("GPU", name, GPU_NAMES)
            found = GpuSpec(name.strip(), capability, memory_gib, "described by the user")
        gpu = found
    if memory_gib is not None:
        if not 0 < memory_gib < 10_000:
            raise BadInput(f"GPU memory must be between 0 and 10000 GiB, got {memory_gib:g}")
        gpu = replace(gpu, memory_gib=memory_gib)
    if capability is not None:
        gpu = replace(gpu, capability=capability)
    return gpu
