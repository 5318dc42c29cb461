"""A request batch's paged-attention metadata in any layout, checked once for every kernel.

The entry points (:func:`~eaglegraph.kernels.attention.paged.paged_attention`,
:func:`~eaglegraph.kernels.mla.mla_attention`) take a :class:`PagedMeta` and launch the
prefill or the decode kernel its layout names, so a caller builds the meta once per batch and
every layer's call reads it. The kernels read queries, KV lengths and pages through the same
four buffers (see ``request.request_kv``): flash-attn style
``query_start_loc``/``seq_lens``/block table, or FlashInfer style CSR
``qo_indptr``/``last_page_len``/``kv_indices``/``kv_indptr``. A builder here checks the
buffers' sizes and says which guard role each buffer is read in; another engine's metadata is
one more builder, not more entry points.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from eaglegraph.known.enums import StrEnum


class PagedLayout(StrEnum):
    """How a batch lists its queries and pages."""

    BLOCK_TABLE = "block_table"  # flash-attn: query_start_loc, seq_lens, a block table
    CSR = "csr"  # FlashInfer prefill/verify: qo_indptr and CSR page lists
    CSR_DECODE = "csr_decode"  # FlashInfer decode: one query row per request, no qo_indptr


@dataclass(frozen=True)
class PagedMeta:
    """The metadata arguments of the paged kernels, in the kernels' order."""

    layout: PagedLayout
    qo: torch.Tensor  # query_start_loc / qo_indptr [R+1] (CSR decode: kv_indptr, unused)
    lens: torch.Tensor  # flash-attn: seq_lens [R]; CSR: last_page_len [R]
    pages: torch.Tensor  # flash-attn: block_table [R, n_cols]; CSR: kv_indices
    kv_indptr: torch.Tensor  # CSR only (flash-attn: query_start_loc, unused)
    pages_extent: int  # flash-attn: n_cols; CSR: kv_indices.numel()
    bt_stride: int
    num_reqs: int  # CSR decode: the batch size, one query row each
    roles: tuple[str, str, str, str]  # guard roles of qo, lens, pages, kv_indptr

    @property
    def csr(self) -> bool:
        """Pages are CSR lists (``kv_indptr``/``kv_indices``), not block-table rows."""
        return self.layout is not PagedLayout.BLOCK_TABLE

    @property
    def decode(self) -> bool:
        """One query row per request, the batch size taken from the rows (FlashInfer decode)."""
        return self.layout is PagedLayout.CSR_DECODE

    @property
    def tensors(self) -> tuple[torch.Tensor, ...]:
        return (self.qo, self.lens, self.pages, self.kv_indptr)

    def check_query_rows(self, rows: int) -> None:
        """A decode batch reads one query row per request: no more requests than ``q`` has
        rows. (Other layouts' query extents are device values, which the guard checks.)"""
        if self.decode and self.num_reqs > rows:
            raise ValueError(f"batch_size {self.num_reqs} exceeds q rows {rows}")


def block_table_meta(
    query_start_loc: torch.Tensor, seq_lens: torch.Tensor, block_table: torch.Tensor, num_reqs: int
) -> PagedMeta:
    """Flash-attn style metadata (guard roles ``"query_start_loc"``, ``"seq_lens"``,
    ``"block_table"``)."""
    if query_start_loc.numel() < num_reqs + 1 or seq_lens.numel() < num_reqs:
        raise ValueError("query_start_loc needs num_reqs + 1 entries and seq_lens num_reqs")
    if block_table.dim() != 2 or block_table.shape[0] < num_reqs or block_table.stride(1) != 1:
        raise ValueError("block_table must be a row-major [>= num_reqs, n_cols] tensor")
    return PagedMeta(
        layout=PagedLayout.BLOCK_TABLE,
        qo=query_start_loc,
        lens=seq_lens,
        pages=block_table,
        kv_indptr=query_start_loc,
        pages_extent=block_table.shape[1],
        bt_stride=block_table.stride(0),
        num_reqs=num_reqs,
        roles=("query_start_loc", "seq_lens", "block_table", ""),  # no kv_indptr
    )


def csr_meta(
    qo_indptr: torch.Tensor,
    kv_indptr: torch.Tensor,
    kv_indices: torch.Tensor,
    last_page_len: torch.Tensor,
    num_reqs: int,
) -> PagedMeta:
    """FlashInfer style prefill metadata (guard roles ``"qo_indptr"``, ``"last_page_len"``,
    ``"kv_indices"``, ``"kv_indptr"``)."""
    if qo_indptr.numel() < num_reqs + 1:
        raise ValueError("qo_indptr needs num_reqs + 1 entries")
    return _csr(PagedLayout.CSR, qo_indptr, kv_indptr, kv_indices, last_page_len, num_reqs)


def csr_decode_meta(
    kv_indptr: torch.Tensor,
    kv_indices: torch.Tensor,
    last_page_len: torch.Tensor,
    batch_size: int,
) -> PagedMeta:
    """FlashInfer style decode metadata: one query row per request, ``batch_size`` rows (the
    entry points check ``q`` has them); ``kv_indptr`` stands in for the query-start array,
    which no role names."""
    return _csr(PagedLayout.CSR_DECODE, kv_indptr, kv_indptr, kv_indices, last_page_len, batch_size)


def _csr(
    layout: PagedLayout,
    qo: torch.Tensor,
    kv_indptr: torch.Tensor,
    kv_indices: torch.Tensor,
    last_page_len: torch.Tensor,
    num_reqs: int,
) -> PagedMeta:
    if kv_indptr.numel() < num_reqs + 1 or last_page_len.numel() < num_reqs:
        raise ValueError("kv_indptr needs num_reqs + 1 entries and last_page_len num_reqs")
    if kv_indices.dim() != 1:
        raise ValueError("kv_indices must be 1-D")
    qo_role = "" if layout is PagedLayout.CSR_DECODE else "qo_indptr"
    return PagedMeta(
        layout=layout,
        qo=qo,
        lens=last_page_len,
        pages=kv_indices,
        kv_indptr=kv_indptr,
        pages_extent=kv_indices.numel(),
        bt_stride=0,
        num_reqs=num_reqs,
        roles=(qo_role, "last_page_len", "kv_indices", "kv_indptr"),
    )
