"""The attention entry points dispatch on the meta's layout: one launch of the layout's kernel,
reported under the name run files and findings have always carried."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

from eaglegraph.kernels import launch as kernel_launch
from eaglegraph.kernels.attention import (
    PagedMeta,
    block_table_meta,
    csr,
    csr_decode_meta,
    csr_meta,
    paged_attention,
    paged_prefill,
)
from eaglegraph.kernels.guard import KERNEL_NAMES, GuardArgs
from eaglegraph.kernels.mla import _mla_kernel, mla_attention

from .reference import randn

I32 = torch.int32


def _metas(device: torch.device) -> dict[str, PagedMeta]:
    """Two requests (3 + 1 query rows) over pages 0..3 in every layout; decode: 2 rows."""

    def t(*values: int) -> torch.Tensor:
        return torch.tensor(values, dtype=I32, device=device)

    block_table = t(0, 1, 2, 3).view(2, 2)
    return {
        "block_table": block_table_meta(t(0, 3, 4), t(5, 6), block_table, 2),
        "csr": csr_meta(t(0, 3, 4), t(0, 2, 4), t(0, 1, 2, 3), t(1, 2), 2),
        "csr_decode": csr_decode_meta(t(0, 2, 4), t(0, 1, 2, 3), t(1, 2), 2),
    }


@pytest.fixture
def launches() -> Iterator[list[tuple[Any, str]]]:
    """Every launch while the test runs: (the Triton kernel, the name its guard logs under)."""
    seen: list[tuple[Any, str]] = []

    def record(kernel: Any, guard: GuardArgs | None) -> None:
        assert guard is not None
        seen.append((kernel, KERNEL_NAMES[guard.kernel_id]))

    kernel_launch.on_launch = record
    try:
        yield seen
    finally:
        kernel_launch.on_launch = None


PAGED = {
    "block_table": (paged_prefill._paged_prefill_kernel, "varlen_paged_attention"),
    "csr": (paged_prefill._paged_prefill_kernel, "csr_paged_prefill"),
    "csr_decode": (csr._csr_decode_kernel, "csr_paged_decode"),
}
MLA = {
    "block_table": "mla_varlen_attention",
    "csr": "mla_csr_prefill",
    "csr_decode": "mla_csr_decode",
}


@pytest.mark.parametrize("layout", list(PAGED))
def test_paged_attention_launches_the_layouts_kernel_once(
    device: torch.device, gen: torch.Generator, launches: list[tuple[Any, str]], layout: str
) -> None:
    meta = _metas(device)[layout]
    assert str(meta.layout) == layout
    k_cache = randn((4, 4, 1, 16), gen, torch.float32, device)
    q = randn((4, 2, 16), gen, torch.float32, device)
    paged_attention(q, k_cache, k_cache, torch.zeros_like(q), meta, max_query_len=3, scale=0.25)
    assert launches == [PAGED[layout]]


@pytest.mark.parametrize("layout", list(MLA))
def test_mla_attention_launches_one_kernel_under_the_layouts_name(
    device: torch.device, gen: torch.Generator, launches: list[tuple[Any, str]], layout: str
) -> None:
    meta = _metas(device)[layout]
    cache = randn((4, 4, 1, 48), gen, torch.float32, device)
    q = randn((4, 2, 48), gen, torch.float32, device)
    out = torch.zeros((4, 2, 32), device=device)
    mla_attention(q, cache, out, meta, max_query_len=3)
    assert launches == [(_mla_kernel, MLA[layout])]


def _decode_call(
    entry: str, q_rows: int, device: torch.device, gen: torch.Generator
) -> Callable[[], None]:
    meta = _metas(device)["csr_decode"]
    if entry == "mla":
        cache = randn((4, 4, 1, 48), gen, torch.float32, device)
        q = randn((q_rows, 2, 48), gen, torch.float32, device)
        out = torch.zeros((q_rows, 2, 32), device=device)
        return lambda: mla_attention(q, cache, out, meta, max_query_len=1)
    k_cache = randn((4, 4, 1, 16), gen, torch.float32, device)
    q = randn((q_rows, 2, 16), gen, torch.float32, device)
    out = torch.zeros_like(q)
    return lambda: paged_attention(q, k_cache, k_cache, out, meta, max_query_len=1, scale=0.25)


@pytest.mark.parametrize("entry", ["paged", "mla"])
def test_a_decode_batch_needs_a_query_row_per_request(
    device: torch.device, gen: torch.Generator, entry: str
) -> None:
    with pytest.raises(ValueError, match="batch_size 2 exceeds q rows 1"):
        _decode_call(entry, 1, device, gen)()
    _decode_call(entry, 2, device, gen)()  # as many rows as requests: runs


def test_meta_builders_name_the_guard_roles_and_refuse_short_buffers(
    device: torch.device,
) -> None:
    metas = _metas(device)
    assert metas["block_table"].roles == ("query_start_loc", "seq_lens", "block_table", "")
    assert metas["csr"].roles == ("qo_indptr", "last_page_len", "kv_indices", "kv_indptr")
    assert metas["csr_decode"].roles == ("", "last_page_len", "kv_indices", "kv_indptr")
    assert [m.decode for m in metas.values()] == [False, False, True]
    assert [m.csr for m in metas.values()] == [False, True, True]
    short = torch.zeros(2, dtype=I32, device=device)
    pages = torch.zeros(4, dtype=I32, device=device)
    with pytest.raises(ValueError, match="qo_indptr needs num_reqs"):
        csr_meta(short, pages, pages, pages, 2)
    with pytest.raises(ValueError, match="kv_indptr needs num_reqs"):
        csr_decode_meta(short, pages, pages, 2)
    with pytest.raises(ValueError, match="row-major"):
        block_table_meta(pages, pages, pages, 2)
