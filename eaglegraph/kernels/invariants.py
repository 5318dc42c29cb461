"""Metadata invariants: every check of one phase in one launch.

A guard sees an index only when it is out of bounds or a sentinel; a metadata bug that leaves
a wrong but plausible value inside the valid extent (a CSR offset from the previous build, a
length carried over from the previous draft position, a device table not refreshed from the
host) passes every guard. These checks compare metadata against what the schedule implies.

A check is a row of a device table: (address, element size, count, op, reference address,
reference element size, offset of its expected values in a shared int64 array). The ops:

* ``EQ``       ``v[i] == exp[i]``
* ``RANGE``    ``exp[i] <= v[i] < exp[n + i]``
* ``REL_EQ``   ``v[i] == ref[i] + exp[i]`` (e.g. seq_lens == positions + 1)
* ``REL_IN``   ``ref[i] <= v[i] < ref[i + 1]`` (e.g. last_token_indices inside its query)

Per check the kernel returns (violations, first violating element, its value).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from eaglegraph.kernels._triton import by_backend, check_device, tl, triton

EQ, RANGE, REL_EQ, REL_IN = 0, 1, 2, 3
FIELDS = 7
_BLOCK_GPU = 256
_BLOCK_CPU = 1 << 12


@dataclass(frozen=True)
class Check:
    """Elements [0, count) of `tensor` under `op`; `expected` per op (see the module doc)."""

    tensor: torch.Tensor
    count: int
    op: int
    expected: tuple[int, ...] = ()
    ref: torch.Tensor | None = None


@dataclass(frozen=True)
class Outcome:
    violations: int
    first: int
    value: int


@triton.jit
def _load_int(addr, esize, offs, m):
    if esize == 8:
        v = tl.load(addr.to(tl.pointer_type(tl.int64)) + offs, mask=m, other=0)
    else:
        v = tl.load(addr.to(tl.pointer_type(tl.int32)) + offs, mask=m, other=0).to(tl.int64)
    return v


@triton.jit
def _invariants_kernel(table_ptr, expected_ptr, out_ptr, BLOCK: tl.constexpr):
    c = tl.program_id(0)
    i = c.to(tl.int64) * 7
    addr = tl.load(table_ptr + i)
    esize = tl.load(table_ptr + i + 1)
    n = tl.load(table_ptr + i + 2)
    op = tl.load(table_ptr + i + 3)
    ref = tl.load(table_ptr + i + 4)
    ref_esize = tl.load(table_ptr + i + 5)
    exp_off = tl.load(table_ptr + i + 6)
    bad_count = tl.zeros([BLOCK], tl.int64)
    first = tl.zeros([BLOCK], tl.int64) + (1 << 62)
    for s in range(0, n, BLOCK):
        offs = s + tl.arange(0, BLOCK)
        m = offs < n
        v = _load_int(addr, esize, offs, m)
        if op == 0:
            want = tl.load(expected_ptr + exp_off + offs, mask=m, other=0)
            bad = v != want
        elif op == 1:
            lo = tl.load(expected_ptr + exp_off + offs, mask=m, other=0)
            hi = tl.load(expected_ptr + exp_off + n + offs, mask=m, other=0)
            bad = (v < lo) | (v >= hi)
        elif op == 2:
            base = _load_int(ref, ref_esize, offs, m)
            delta = tl.load(expected_ptr + exp_off + offs, mask=m, other=0)
            bad = v != base + delta
        else:
            lo = _load_int(ref, ref_esize, offs, m)
            hi = _load_int(ref, ref_esize, offs + 1, m)
            bad = (v < lo) | (v >= hi)
        bad = bad & m
        bad_count += bad.to(tl.int64)
        first = tl.minimum(first, tl.where(bad, offs.to(tl.int64), 1 << 62))
    total = tl.sum(bad_count, 0)
    at = tl.min(first, 0)
    tl.store(out_ptr + c * 3, total)
    tl.store(out_ptr + c * 3 + 1, at)
    lane = tl.arange(0, 2)
    one = (lane < 1) & ((tl.zeros([2], tl.int64) + total) > 0)
    safe = tl.where(one, at + lane, 0)
    value = _load_int(addr, esize, safe, one)
    tl.store(out_ptr + c * 3 + 2, tl.sum(tl.where(one, value, 0), 0))


def run_checks(checks: list[Check], device: torch.device) -> list[Outcome]:
    """Evaluate every check in one launch; one synchronising read of the results."""
    if not checks:
        return []
    rows: list[list[int]] = []
    expected: list[int] = []
    for ch in checks:
        t = ch.tensor
        if not t.is_contiguous() or t.element_size() not in (4, 8) or t.is_floating_point():
            raise ValueError("invariant checks need contiguous int32/int64 tensors")
        if ch.count > t.numel():
            raise ValueError(f"check of {ch.count} elements on a tensor of {t.numel()}")
        ref = ch.ref if ch.ref is not None else t
        want = {EQ: ch.count, RANGE: 2 * ch.count, REL_EQ: ch.count, REL_IN: 0}[ch.op]
        if len(ch.expected) != want:
            raise ValueError(f"op {ch.op} needs {want} expected values, got {len(ch.expected)}")
        rows.append(
            [t.data_ptr(), t.element_size(), ch.count, ch.op, ref.data_ptr(),
             ref.element_size(), len(expected)]
        )  # fmt: skip
        expected.extend(ch.expected)
    table = torch.tensor(rows, dtype=torch.int64, device=device)
    exp = torch.tensor(expected or [0], dtype=torch.int64, device=device)
    out = torch.zeros((len(checks), 3), dtype=torch.int64, device=device)
    check_device(table, exp, out)
    block = by_backend(_BLOCK_GPU, _BLOCK_CPU)
    _invariants_kernel[(len(checks),)](table, exp, out, BLOCK=block)
    return [Outcome(int(a), int(b), int(c)) for a, b, c in out.cpu().tolist()]
