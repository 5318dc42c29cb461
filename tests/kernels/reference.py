"""Plain-torch references and input builders for the kernel tests.

References are written the obvious way (Python loops over requests, dense gathers of the KV
cache, float64 softmax attention) so they are easy to trust; inputs are random and never
zero, block tables are shuffled and non-contiguous, and padding regions are filled with
stale garbage that a correct kernel must not read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

TOL = {
    torch.float32: {"atol": 1e-5, "rtol": 1e-5},
    torch.float16: {"atol": 3e-3, "rtol": 3e-3},
    torch.bfloat16: {"atol": 3e-2, "rtol": 3e-2},
}


def scale_for(head_dim: int) -> float:
    return 1.0 / math.sqrt(head_dim)


def randn(
    shape: tuple[int, ...], gen: torch.Generator, dtype: torch.dtype, device: torch.device
) -> torch.Tensor:
    return torch.randn(shape, generator=gen).to(dtype).to(device)


def randint(
    low: int,
    high: int,
    shape: tuple[int, ...],
    gen: torch.Generator,
    dtype: torch.dtype,
    device: torch.device,
) -> torch.Tensor:
    return torch.randint(low, high, shape, generator=gen).to(dtype).to(device)


def disjoint_pages(num_blocks: int, counts: list[int], gen: torch.Generator) -> list[list[int]]:
    """Shuffled, non-contiguous, disjoint page lists, one per request."""
    if sum(counts) > num_blocks:
        raise ValueError(f"{sum(counts)} pages requested from {num_blocks} blocks")
    perm = torch.randperm(num_blocks, generator=gen).tolist()
    pages, at = [], 0
    for c in counts:
        pages.append(perm[at : at + c])
        at += c
    return pages


@dataclass
class Req:
    """One request of an attention batch: its query rows and its KV pages."""

    q_start: int
    q_len: int
    kv_len: int
    pages: list[int]


def ref_attention(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    out: torch.Tensor,
    reqs: list[Req],
    scale: float,
) -> torch.Tensor:
    """``out`` with every request's rows replaced by causal attention over its pages."""
    expected = out.clone()
    bs = k_cache.shape[1]
    nh, nkv = q.shape[1], k_cache.shape[2]
    for req in reqs:
        if req.q_len == 0:
            continue
        pos = torch.arange(req.kv_len)
        pages = torch.tensor(req.pages, dtype=torch.long)[pos // bs] if req.kv_len else pos
        k = k_cache.cpu().double()[pages, pos % bs].repeat_interleave(nh // nkv, dim=1)
        v = v_cache.cpu().double()[pages, pos % bs].repeat_interleave(nh // nkv, dim=1)
        qq = q.cpu().double()[req.q_start : req.q_start + req.q_len]
        s = torch.einsum("qhd,khd->hqk", qq, k) * scale
        q_pos = req.kv_len - req.q_len + torch.arange(req.q_len)
        allowed = pos[None, :] <= q_pos[:, None]
        s = s.masked_fill(~allowed[None], float("-inf"))
        p = torch.softmax(s, dim=-1).nan_to_num(0.0)  # rows with nothing to attend -> 0
        o = torch.einsum("hqk,khd->qhd", p, v)
        expected[req.q_start : req.q_start + req.q_len] = o.to(out.dtype).to(out.device)
    return expected


def csr_from_reqs(reqs: list[Req], block_size: int) -> tuple[list[int], list[int], list[int]]:
    """FlashInfer-style (kv_indptr, kv_indices, last_page_len) for the requests."""
    indptr, indices, last = [0], [], []
    for req in reqs:
        n_pages = math.ceil(req.kv_len / block_size)
        indices += req.pages[:n_pages]
        indptr.append(indptr[-1] + n_pages)
        last.append(0 if req.kv_len == 0 else (req.kv_len - 1) % block_size + 1)
    return indptr, indices, last


def ref_slots(
    block_table: torch.Tensor, row: int, positions: list[int], block_size: int
) -> list[int]:
    bt = block_table.cpu()
    return [int(bt[row, p // block_size]) * block_size + p % block_size for p in positions]
