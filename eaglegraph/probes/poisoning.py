"""Poison plans for one probed step: which elements of which buffer, with which sentinel.

The padding region of a buffer is everything past its valid extent for the step's real
counts. Integers get a value outside every index range (+2^30+17 in run A, its negative in run
B); floats get NaN (run A) or a large negative value (run B). KV blocks owned by no request
(except the reserved null block) are canaries filled with NaN in both runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from eaglegraph.kernels.poison import Region, float_pattern, region_table
from eaglegraph.rig.buffers import PersistentBuffer, StepCounts

SENTINEL = (1 << 30) + 17


def sentinel_for(dtype: torch.dtype, run: str) -> int:
    if dtype.is_floating_point:
        return float_pattern(dtype, nan=run == "A")
    return SENTINEL if run == "A" else -SENTINEL


def is_sentinel(value: int) -> bool:
    return abs(int(value)) == SENTINEL


@dataclass
class PaddingRegion:
    buffer: PersistentBuffer
    first_row: int
    region: Region

    @property
    def rows(self) -> int:
        return self.buffer.capacity - self.first_row


def padding_regions(
    buffers: list[PersistentBuffer], counts: dict[str, StepCounts], run: str
) -> list[PaddingRegion]:
    out = []
    for buf in buffers:
        if buf.extent == "all" or buf.phase not in counts:
            continue
        valid = buf.valid_rows(counts[buf.phase])
        if valid >= buf.capacity:
            continue
        t = buf.tensor
        row = t[0].numel() if t.dim() > 1 else 1
        region = Region(t, valid * row, t.numel(), sentinel_for(t.dtype, run))
        out.append(PaddingRegion(buf, valid, region))
    return out


def canary_regions(
    kv_caches: list[tuple[torch.Tensor, torch.Tensor]], unowned: list[int]
) -> list[tuple[int, Region]]:
    """Contiguous runs of unowned blocks, per cache tensor: (first block, region)."""
    runs: list[tuple[int, int]] = []
    for block in sorted(unowned):
        if runs and runs[-1][1] == block:
            runs[-1] = (runs[-1][0], block + 1)
        else:
            runs.append((block, block + 1))
    out = []
    for k_cache, v_cache in kv_caches:
        for cache in (k_cache,) if v_cache is k_cache else (k_cache, v_cache):  # MLA: one
            per_block = cache[0].numel()
            pattern = float_pattern(cache.dtype, nan=True)
            for start, end in runs:
                out.append((start, Region(cache, start * per_block, end * per_block, pattern)))
    return out


def table(regions: list[Region], device: torch.device) -> torch.Tensor:
    return region_table(regions, device)
