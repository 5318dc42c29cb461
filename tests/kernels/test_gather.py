"""gather_rows against torch indexing, 1-D and 2-D, float and integer."""

from __future__ import annotations

import pytest
import torch

from eaglegraph.kernels.gather import gather_rows

from .reference import randint, randn


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.int64, torch.int32], ids=str
)
@pytest.mark.parametrize("width", [None, 1, 40, 1500])
def test_gather_rows(
    device: torch.device, gen: torch.Generator, dtype: torch.dtype, width: int | None
) -> None:
    n_src, m, num_rows = 12, 6, 4
    shape = (n_src,) if width is None else (n_src, width)
    if dtype.is_floating_point:
        src = randn(shape, gen, dtype, device)
    else:
        src = randint(1, 1000, shape, gen, dtype, device)
    indices = randint(0, n_src, (m,), gen, torch.int64, device)
    out = torch.full((m,) if width is None else (m, width), 3, dtype=dtype, device=device)
    before = out.clone()
    gather_rows(src, indices, out, num_rows, n_src)
    assert torch.equal(out[:num_rows], src[indices[:num_rows]])
    assert torch.equal(out[num_rows:], before[num_rows:])


def test_gather_rows_int32_indices_and_strided_src(
    device: torch.device, gen: torch.Generator
) -> None:
    big = randn((10, 64), gen, torch.float32, device)
    src = big[:, 8:40]  # row stride 64, width 32
    indices = torch.tensor([9, 0, 4], dtype=torch.int32, device=device)
    out = torch.empty((3, 32), device=device)
    gather_rows(src, indices, out, 3, 10)
    assert torch.equal(out, src[indices.long()])
