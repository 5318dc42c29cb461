"""Poison and scan: one launch fills every padding region of every persistent buffer with a
sentinel; one launch counts which elements still hold it after a replay.

Regions are given as a device table of (address, start element, end element, element size,
sentinel bit pattern) rows, so buffers of any dtype and shape go in the same launch: the
sentinel is written as a raw integer of the element's width (an out-of-range index for
integer buffers, a NaN or huge-value bit pattern for float buffers).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from eaglegraph.kernels._triton import by_backend, check_device, tl, triton

FIELDS = 5
_BLOCK_GPU = 1024
_BLOCK_CPU = 1 << 14


@dataclass(frozen=True)
class Region:
    """Elements [start, end) of a tensor's storage, to be filled with `pattern`."""

    tensor: torch.Tensor
    start: int
    end: int
    pattern: int

    @property
    def length(self) -> int:
        return max(0, self.end - self.start)


def region_table(regions: list[Region], device: torch.device) -> torch.Tensor:
    rows = []
    for r in regions:
        t = r.tensor
        if not t.is_contiguous():
            raise ValueError("poison regions need contiguous tensors")
        rows.append([t.data_ptr(), r.start, r.end, t.element_size(), r.pattern])
    return torch.tensor(rows or [[0, 0, 0, 1, 0]], dtype=torch.int64, device=device)


@triton.jit
def _poison_kernel(table_ptr, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64) * 5
    addr = tl.load(table_ptr + i)
    start = tl.load(table_ptr + i + 1)
    end = tl.load(table_ptr + i + 2)
    esize = tl.load(table_ptr + i + 3)
    pattern = tl.load(table_ptr + i + 4)
    for s in range(start, end, BLOCK):
        offs = s + tl.arange(0, BLOCK)
        m = offs < end
        if esize == 8:
            tl.store(
                addr.to(tl.pointer_type(tl.int64)) + offs,
                tl.zeros([BLOCK], tl.int64) + pattern,
                mask=m,
            )
        elif esize == 4:
            tl.store(
                addr.to(tl.pointer_type(tl.int32)) + offs,
                (tl.zeros([BLOCK], tl.int64) + pattern).to(tl.int32),
                mask=m,
            )
        elif esize == 2:
            tl.store(
                addr.to(tl.pointer_type(tl.int16)) + offs,
                (tl.zeros([BLOCK], tl.int64) + pattern).to(tl.int16),
                mask=m,
            )
        else:
            tl.store(
                addr.to(tl.pointer_type(tl.int8)) + offs,
                (tl.zeros([BLOCK], tl.int64) + pattern).to(tl.int8),
                mask=m,
            )


@triton.jit
def _scan_kernel(table_ptr, out_ptr, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    i = r.to(tl.int64) * 5
    addr = tl.load(table_ptr + i)
    start = tl.load(table_ptr + i + 1)
    end = tl.load(table_ptr + i + 2)
    esize = tl.load(table_ptr + i + 3)
    pattern = tl.load(table_ptr + i + 4)
    count = tl.zeros([BLOCK], tl.int64)
    for s in range(start, end, BLOCK):
        offs = s + tl.arange(0, BLOCK)
        m = offs < end
        # each branch keeps its own loaded block: compiled Triton needs one type per name
        if esize == 8:
            v8 = tl.load(addr.to(tl.pointer_type(tl.int64)) + offs, mask=m, other=0)
            hit = v8 == pattern
        elif esize == 4:
            v4 = tl.load(addr.to(tl.pointer_type(tl.int32)) + offs, mask=m, other=0)
            hit = v4 == pattern.to(tl.int32)
        elif esize == 2:
            v2 = tl.load(addr.to(tl.pointer_type(tl.int16)) + offs, mask=m, other=0)
            hit = v2 == pattern.to(tl.int16)
        else:
            v1 = tl.load(addr.to(tl.pointer_type(tl.int8)) + offs, mask=m, other=0)
            hit = v1 == pattern.to(tl.int8)
        count += (hit & m).to(tl.int64)
    tl.store(out_ptr + r, tl.sum(count, 0))


def poison(table: torch.Tensor) -> None:
    """Fill every region of `table` (from `region_table`) with its pattern: one launch."""
    check_device(table)
    n = table.shape[0]
    if n:
        _poison_kernel[(n,)](table, BLOCK=by_backend(_BLOCK_GPU, _BLOCK_CPU))


def scan(table: torch.Tensor) -> torch.Tensor:
    """Per region, how many elements still hold the pattern (int64 [regions]): one launch."""
    check_device(table)
    n = table.shape[0]
    out = torch.zeros(n, dtype=torch.int64, device=table.device)
    if n:
        _scan_kernel[(n,)](table, out, BLOCK=by_backend(_BLOCK_GPU, _BLOCK_CPU))
    return out


def float_pattern(dtype: torch.dtype, nan: bool) -> int:
    """The bit pattern of NaN (run A) or of a large negative finite value (run B) as an int."""
    value = float("nan") if nan else -60000.0
    t = torch.tensor([value], dtype=dtype)
    width = {2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return int(t.view(width).item())
