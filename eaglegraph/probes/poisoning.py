"""Poison plans for one probed step: which elements of which buffer, with which sentinel.

The padding region of a buffer is everything past its valid extent for the step's real
counts; for state registered with extent "all" it is every row no running request owns.
Integers get a value outside every index range (+2^30+17 in run A, its negative in run B);
floats get NaN (run A) or a large negative value (run B). KV blocks owned by no request are
canaries filled with NaN in both runs, and so is the reserved null block except its first
K slots (the pad slots SGLang's padded draft rows write by design).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from eaglegraph.kernels.poison import Region, float_pattern, region_table
from eaglegraph.rig.buffers import PersistentBuffer, StepCounts
from eaglegraph.rig.kv_cache import NULL_BLOCK

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
    end_row: int | None = None

    @property
    def rows(self) -> int:
        return (self.end_row or self.buffer.capacity) - self.first_row


def _runs(rows: list[int]) -> list[tuple[int, int]]:
    """Contiguous [start, end) runs of sorted row numbers."""
    runs: list[tuple[int, int]] = []
    for row in sorted(rows):
        if runs and runs[-1][1] == row:
            runs[-1] = (runs[-1][0], row + 1)
        else:
            runs.append((row, row + 1))
    return runs


def per_slot_rows(
    buffers: list[PersistentBuffer], max_num_seqs: int, slots: set[int]
) -> dict[str, set[int]]:
    """State kept per request slot (extent "all", one row per slot: the device block table,
    MTP's cached draft inputs) is owned row by row: the running requests' slots."""
    return {
        b.name: set(slots)
        for b in buffers
        if b.extent == "all" and b.tensor.dim() >= 1 and b.capacity == max_num_seqs
    }


def padding_regions(
    buffers: list[PersistentBuffer],
    counts: dict[str, StepCounts],
    run: str,
    owned_rows: dict[str, set[int]] | None = None,
    reach: int | None = None,
) -> list[PaddingRegion]:
    """`owned_rows`: for extent-"all" state, the rows running requests own (by name).

    `reach`: the most token rows any step or captured graph of the run has touched. Float
    per-token rows past it were never written (they hold their initial zeros, nothing stale),
    so they are left out: those buffers are max_num_batched_tokens rows long and poisoning
    and scanning all of them dominated a case on CPU. Index buffers are poisoned whole."""
    out = []
    for buf in buffers:
        if buf.phase not in counts:
            continue
        if buf.extent == "all":
            owned = (owned_rows or {}).get(buf.name)
            if owned is None:
                continue  # not per-request state (a step counter): all of it is valid
            t = buf.tensor
            row = t[0].numel() if t.dim() > 1 else 1
            free = [i for i in range(buf.capacity) if i not in owned]
            for start, end in _runs(free):
                region = Region(t, start * row, end * row, sentinel_for(t.dtype, run))
                out.append(PaddingRegion(buf, start, region, end))
            continue
        valid = buf.valid_rows(counts[buf.phase])
        if valid >= buf.capacity:
            continue
        t = buf.tensor
        row = t[0].numel() if t.dim() > 1 else 1
        end = buf.capacity
        if reach is not None and t.dtype.is_floating_point and buf.extent == "num_tokens":
            end = max(valid, min(end, reach))
            if end == valid:
                continue
        region = Region(t, valid * row, end * row, sentinel_for(t.dtype, run))
        out.append(PaddingRegion(buf, valid, region, end))
    return out


@dataclass(frozen=True)
class Canary:
    first_block: int
    region: Region
    null_block: bool = False


def canary_regions(
    kv_caches: list[tuple[torch.Tensor, torch.Tensor]], unowned: list[int]
) -> list[Canary]:
    """Contiguous runs of unowned blocks, per cache tensor."""
    out = []
    for k_cache, v_cache in kv_caches:
        for cache in (k_cache,) if v_cache is k_cache else (k_cache, v_cache):  # MLA: one
            per_block = cache[0].numel()
            pattern = float_pattern(cache.dtype, nan=True)
            for start, end in _runs(unowned):
                out.append(
                    Canary(start, Region(cache, start * per_block, end * per_block, pattern))
                )
    return out


def null_block_regions(
    kv_caches: list[tuple[torch.Tensor, torch.Tensor]], pad_slots: int
) -> list[Canary]:
    """The null block past its first `pad_slots` slots, per cache tensor: SGLang's padded
    draft rows start at position 0 in the reserved row and advance one slot per draft step,
    so slots [0, K) are theirs by design (vLLM's pad slot is -1: it has none); nothing may
    write past them."""
    out = []
    for k_cache, v_cache in kv_caches:
        for cache in (k_cache,) if v_cache is k_cache else (k_cache, v_cache):
            per_block = cache[0].numel()
            per_slot = cache[0, 0].numel() * min(max(pad_slots, 0), cache.shape[1])
            base = NULL_BLOCK * per_block
            pattern = float_pattern(cache.dtype, nan=True)
            out.append(
                Canary(NULL_BLOCK, Region(cache, base + per_slot, base + per_block, pattern), True)
            )
    return out


def unmapped_buffer(kernel: str) -> str:
    """A guard role no caller mapped to a registered buffer: name what the kernel reads."""
    return f"{kernel} (unmapped input)"


def table(regions: list[Region], device: torch.device) -> torch.Tensor:
    return region_table(regions, device)
