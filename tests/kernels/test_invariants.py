"""The invariant kernel: every op, both integer widths, first violation and its value."""

from __future__ import annotations

import pytest
import torch

from eaglegraph.kernels.invariants import EQ, RANGE, REL_EQ, REL_IN, Check, run_checks


def test_every_op_in_one_launch(device: torch.device) -> None:
    qsl = torch.tensor([0, 3, 5, 9], dtype=torch.int32, device=device)
    last = torch.tensor([2, 4, 9], dtype=torch.int64, device=device)
    lens = torch.tensor([4, 6, 10], dtype=torch.int32, device=device)
    pos = torch.tensor([3, 5, 8], dtype=torch.int64, device=device)
    out = run_checks(
        [
            Check(qsl, 4, EQ, (0, 3, 5, 9)),
            Check(qsl, 4, EQ, (0, 3, 6, 9)),
            Check(last, 3, REL_IN, ref=qsl),
            Check(last, 3, RANGE, (0, 0, 0, 3, 5, 10)),
            Check(lens, 3, REL_EQ, (1, 1, 1), ref=pos),
        ],
        device,
    )
    assert [o.violations for o in out] == [0, 1, 1, 0, 1]
    assert (out[1].first, out[1].value) == (2, 5)
    assert (out[2].first, out[2].value) == (2, 9)  # 9 is not inside [5, 9)
    assert (out[4].first, out[4].value) == (2, 10)  # seq_len 10 but position 8


def test_long_buffers_span_blocks(device: torch.device) -> None:
    t = torch.arange(10_000, dtype=torch.int64, device=device)
    want = list(range(10_000))
    want[9_000] = -1
    (o,) = run_checks([Check(t, 10_000, EQ, tuple(want))], device)
    assert (o.violations, o.first, o.value) == (1, 9_000, 9_000)


def test_bad_checks_are_refused(device: torch.device) -> None:
    f = torch.zeros(4, device=device)
    with pytest.raises(ValueError):
        run_checks([Check(f, 4, EQ, (0, 0, 0, 0))], device)
    i = torch.zeros(4, dtype=torch.int32, device=device)
    with pytest.raises(ValueError):
        run_checks([Check(i, 4, EQ, (0,))], device)
