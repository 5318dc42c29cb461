"""A request batch's paged-attention metadata in either style, checked once for every kernel.

The prefill kernel (``paged_prefill.py``) and the MLA kernel (``mla.py``) read queries, KV
lengths and pages through the same four buffers (see ``request.request_kv``): flash-attn style
``query_start_loc``/``seq_lens``/block table, or FlashInfer style CSR
``qo_indptr``/``last_page_len``/``kv_indices``/``kv_indptr``. The public wrappers of both
kernels build a :class:`PagedMeta` here, which checks the buffers' sizes and says which guard
role each buffer is read in.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class PagedMeta:
    """The metadata arguments of the paged kernels, in the kernels' order."""

    csr: bool
    qo: torch.Tensor  # query_start_loc / qo_indptr [R+1] (CSR decode: kv_indptr, unused)
    lens: torch.Tensor  # flash-attn: seq_lens [R]; CSR: last_page_len [R]
    pages: torch.Tensor  # flash-attn: block_table [R, n_cols]; CSR: kv_indices
    kv_indptr: torch.Tensor  # CSR only (flash-attn: query_start_loc, unused)
    pages_extent: int  # flash-attn: n_cols; CSR: kv_indices.numel()
    bt_stride: int
    num_reqs: int
    roles: tuple[str, str, str, str]  # guard roles of qo, lens, pages, kv_indptr

    @property
    def tensors(self) -> tuple[torch.Tensor, ...]:
        return (self.qo, self.lens, self.pages, self.kv_indptr)


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
        csr=False,
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
    qo_role: str = "qo_indptr",
) -> PagedMeta:
    """FlashInfer style prefill metadata (guard roles ``"qo_indptr"``, ``"last_page_len"``,
    ``"kv_indices"``, ``"kv_indptr"``)."""
    if qo_indptr.numel() < num_reqs + 1 or kv_indptr.numel() < num_reqs + 1:
        raise ValueError("qo_indptr and kv_indptr need num_reqs + 1 entries")
    if last_page_len.numel() < num_reqs or kv_indices.dim() != 1:
        raise ValueError("last_page_len needs num_reqs entries; kv_indices must be 1-D")
    return PagedMeta(
        csr=True,
        qo=qo_indptr,
        lens=last_page_len,
        pages=kv_indices,
        kv_indptr=kv_indptr,
        pages_extent=kv_indices.numel(),
        bt_stride=0,
        num_reqs=num_reqs,
        roles=(qo_role, "last_page_len", "kv_indices", "kv_indptr"),
    )


def csr_decode_meta(
    q: torch.Tensor,
    kv_indptr: torch.Tensor,
    kv_indices: torch.Tensor,
    last_page_len: torch.Tensor,
    batch_size: int,
) -> PagedMeta:
    """FlashInfer style decode metadata: one query row per request, ``batch_size`` of ``q``'s
    rows; ``kv_indptr`` stands in for the query-start array, which no role names."""
    if batch_size > q.shape[0]:
        raise ValueError(f"batch_size {batch_size} exceeds q rows {q.shape[0]}")
    if kv_indptr.numel() < batch_size + 1 or last_page_len.numel() < batch_size:
        raise ValueError("kv_indptr needs batch_size + 1 entries and last_page_len batch_size")
    if kv_indices.dim() != 1:
        raise ValueError("kv_indices must be 1-D")
    return csr_meta(kv_indptr, kv_indptr, kv_indices, last_page_len, batch_size, qo_role="")
