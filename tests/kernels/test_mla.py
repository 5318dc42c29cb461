"""Paged MLA kernels against a dense float64 reference: absorbed attention over the latent
cache row (key = latent + rope part, value = latent), padded batches and guards included."""

from __future__ import annotations

import pytest
import torch

from eaglegraph.kernels.attention import block_table_meta, csr_decode_meta, csr_meta
from eaglegraph.kernels.guard import Guard, GuardLog
from eaglegraph.kernels.mla import mla_attention

from .reference import TOL, Req, csr_from_reqs, randint, randn, ref_attention, scale_for
from .test_attention import make_batch

DTYPES = [torch.float32, torch.bfloat16]
SENTINEL = 7.0
LATENT, ROPE, HEADS = 32, 16, 4


def _expected(
    q: torch.Tensor, cache: torch.Tensor, out: torch.Tensor, reqs: list[Req], scale: float
) -> torch.Tensor:
    """MQA over the whole row for the score, the latent prefix as the value."""
    return ref_attention(q, cache, cache[..., :LATENT], out, reqs, scale)


def _inputs(
    gen: torch.Generator, dtype: torch.dtype, device: torch.device, rows: int, num_blocks: int = 40
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    cache = randn((num_blocks, 4, 1, LATENT + ROPE), gen, dtype, device)
    q = randn((rows, HEADS, LATENT + ROPE), gen, dtype, device)
    out = torch.full((rows, HEADS, LATENT), SENTINEL, dtype=dtype, device=device)
    return cache, q, out


@pytest.mark.parametrize("dtype", DTYPES)
def test_mla_varlen(device: torch.device, dtype: torch.dtype, gen: torch.Generator) -> None:
    q_lens, ctx = [3, 1, 6], [5, 14, 0]
    reqs = make_batch(gen, q_lens, ctx, 40, 4)
    cache, q, out = _inputs(gen, dtype, device, 14)
    qsl = [0, 3, 4, 10, 12, 13]  # stale tail past num_reqs
    seq_lens = [r.kv_len for r in reqs] + [9, 11]
    bt = randint(0, 40, (5, 6), gen, torch.int32, "cpu")
    for i, r in enumerate(reqs):
        bt[i, : len(r.pages)] = torch.tensor(r.pages, dtype=torch.int32)
    args = [torch.tensor(x, dtype=torch.int32, device=device) for x in (qsl, seq_lens)]
    scale = scale_for(LATENT + ROPE)
    mla_attention(q, cache, out, block_table_meta(*args, bt.to(device), 3), max_query_len=6)
    want = _expected(q, cache, torch.full_like(out, SENTINEL), reqs, scale)
    torch.testing.assert_close(out.cpu(), want.cpu(), **TOL[dtype])
    assert torch.all(out[10:] == SENTINEL)  # padded rows untouched


@pytest.mark.parametrize("dtype", DTYPES)
def test_mla_csr_prefill_and_decode(
    device: torch.device, dtype: torch.dtype, gen: torch.Generator
) -> None:
    q_lens, ctx = [4, 4, 2], [9, 0, 3]
    reqs = make_batch(gen, q_lens, ctx, 40, 4)
    cache, q, out = _inputs(gen, dtype, device, 12)
    indptr, indices, last = csr_from_reqs(reqs, 4)
    qo = [0, 4, 8, 10]
    t = [torch.tensor(x, dtype=torch.int32, device=device) for x in (qo, indptr, indices, last)]
    scale = scale_for(LATENT + ROPE)
    mla_attention(q, cache, out, csr_meta(*t, 3), max_query_len=4, scale=scale)
    want = _expected(q, cache, torch.full_like(out, SENTINEL), reqs, scale)
    torch.testing.assert_close(out.cpu(), want.cpu(), **TOL[dtype])

    # decode: one query per request, the query is the last KV position
    dec = [Req(i, 1, r.kv_len, r.pages) for i, r in enumerate(reqs)]
    out_d = torch.full((3, HEADS, LATENT), SENTINEL, dtype=dtype, device=device)
    decode = csr_decode_meta(t[1], t[2], t[3], 3)
    mla_attention(q[:3].contiguous(), cache, out_d, decode, max_query_len=1)
    want_d = _expected(q[:3], cache, torch.full_like(out_d, SENTINEL), dec, scale)
    torch.testing.assert_close(out_d.cpu(), want_d.cpu(), **TOL[dtype])


def test_mla_many_heads_and_long_kv(device: torch.device, gen: torch.Generator) -> None:
    """More heads than one tile row group and KV spanning several key blocks."""
    dtype = torch.float32
    reqs = make_batch(gen, [5, 2], [300, 40], 200, 4)
    cache = randn((200, 4, 1, LATENT + ROPE), gen, dtype, device)
    q = randn((7, 24, LATENT + ROPE), gen, dtype, device)
    out = torch.full((7, 24, LATENT), SENTINEL, dtype=dtype, device=device)
    bt = torch.zeros((2, 80), dtype=torch.int32)
    for i, r in enumerate(reqs):
        bt[i, : len(r.pages)] = torch.tensor(r.pages, dtype=torch.int32)
    qsl = torch.tensor([0, 5, 7], dtype=torch.int32, device=device)
    sl = torch.tensor([r.kv_len for r in reqs], dtype=torch.int32, device=device)
    mla_attention(
        q, cache, out, block_table_meta(qsl, sl, bt.to(device), 2), max_query_len=5, scale=0.3
    )
    want = _expected(q, cache, torch.full_like(out, SENTINEL), reqs, 0.3)
    torch.testing.assert_close(out.cpu(), want.cpu(), **TOL[dtype])


def test_mla_decode_guard_logs_stale_padded_rows(
    device: torch.device, gen: torch.Generator
) -> None:
    """A decode over 4 rows with 2 real requests reads the CSR entries of rows 2 and 3."""
    reqs = make_batch(gen, [1, 1], [6, 3], 40, 4)
    cache, q, out = _inputs(gen, torch.float32, device, 4)
    indptr, indices, last = csr_from_reqs(reqs, 4)
    bad = 1 << 30
    kv_indptr = [*indptr, bad, -bad]
    last_page_len = [*last, bad, -bad]
    log = GuardLog(16, device)
    guard = Guard(log, {"kv_indptr": 3, "last_page_len": 4, "kv_indices": 5})
    t = [
        torch.tensor(x, dtype=torch.int32, device=device)
        for x in (kv_indptr, indices, last_page_len)
    ]
    mla_attention(q, cache, out, csr_decode_meta(*t, 4), max_query_len=1, guard=guard)
    seen = {(v.kernel, v.buffer_id, v.row) for v in log.read()}
    assert ("mla_csr_decode", 3, 3) in seen  # kv_indptr[num_reqs + 1]
    assert ("mla_csr_decode", 4, 2) in seen and ("mla_csr_decode", 4, 3) in seen
    assert torch.all(out[2:] == SENTINEL)  # bad rows skipped, not faulted
    dec = [Req(i, 1, r.kv_len, r.pages) for i, r in enumerate(reqs)]
    want = _expected(q[:2], cache, torch.full_like(out[:2], SENTINEL), dec, scale_for(48))
    torch.testing.assert_close(out[:2].cpu(), want.cpu(), **TOL[torch.float32])


def test_mla_varlen_guard_logs_bad_block_ids(device: torch.device, gen: torch.Generator) -> None:
    reqs = make_batch(gen, [2], [5], 40, 4)
    cache, q, out = _inputs(gen, torch.float32, device, 2)
    bt = torch.zeros((1, 4), dtype=torch.int32)
    bt[0, :2] = torch.tensor(reqs[0].pages[:2], dtype=torch.int32)
    bt[0, 1] = 1 << 20  # a poisoned page id
    log = GuardLog(16, device)
    guard = Guard(log, {"block_table": 9})
    qsl = torch.tensor([0, 2], dtype=torch.int32, device=device)
    sl = torch.tensor([7], dtype=torch.int32, device=device)
    meta = block_table_meta(qsl, sl, bt.to(device), 1)
    mla_attention(q, cache, out, meta, max_query_len=2, guard=guard)
    assert [(v.kernel, v.buffer_id, v.row, v.value) for v in log.read()] == [
        ("mla_varlen_attention", 9, 1, 1 << 20)
    ]
    assert torch.isfinite(out).all()


def test_mla_bad_shapes_are_refused(device: torch.device) -> None:
    cache = torch.zeros((4, 4, 2, 48), device=device)
    q = torch.zeros((2, 4, 48), device=device)
    out = torch.zeros((2, 4, 32), device=device)
    one = torch.zeros(3, dtype=torch.int32, device=device)
    with pytest.raises(ValueError, match="must be \\[num_blocks, block_size, 1, L\\+R\\]"):
        mla_attention(q, cache, out, block_table_meta(one, one, one.view(3, 1), 1), max_query_len=1)
