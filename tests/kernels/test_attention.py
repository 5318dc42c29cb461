"""Paged attention kernels against a dense float64 reference, padded batches included."""

from __future__ import annotations

import inspect
import math
from typing import Any

import pytest
import torch

import eaglegraph.kernels.attention.tiles as tiles
from eaglegraph.kernels.attention import (
    block_table_meta,
    build_csr_page_indices,
    csr,
    csr_decode_meta,
    csr_meta,
    paged_attention,
    paged_prefill,
)

from .reference import (
    TOL,
    Req,
    csr_from_reqs,
    disjoint_pages,
    randint,
    randn,
    ref_attention,
    scale_for,
)

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
SENTINEL = 7.0


def make_batch(
    gen: torch.Generator,
    q_lens: list[int],
    ctx_lens: list[int],
    num_blocks: int,
    block_size: int,
    extra_pages: int = 1,
) -> list[Req]:
    """Requests with uneven queries, kv_len = context + query, shuffled disjoint pages.

    Each request owns ``extra_pages`` more pages than it uses, so a kernel that reads past
    ``kv_len`` would pick up valid-looking but wrong KV.
    """
    kv_lens = [c + q for c, q in zip(ctx_lens, q_lens, strict=True)]
    counts = [math.ceil(k / block_size) + extra_pages for k in kv_lens]
    pages = disjoint_pages(num_blocks, counts, gen)
    reqs, start = [], 0
    for q_len, kv_len, p in zip(q_lens, kv_lens, pages, strict=True):
        reqs.append(Req(start, q_len, kv_len, p))
        start += q_len
    return reqs


def check_varlen(
    device: torch.device,
    dtype: torch.dtype,
    gen: torch.Generator,
    head_dim: int = 16,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    block_size: int = 4,
) -> None:
    """num_reqs=3 of R=5 slots; padding of qsl/seq_lens/block_table holds plausible stale values."""
    num_blocks, n_cols, R = 40, 6, 5
    q_lens, ctx = [3, 1, 6], [5, 14, 0]
    reqs = make_batch(gen, q_lens, ctx, num_blocks, block_size)
    num_reqs, T = len(reqs), 14  # 10 real tokens + 4 padded rows
    k_cache = randn((num_blocks, block_size, num_kv_heads, head_dim), gen, dtype, device)
    v_cache = randn((num_blocks, block_size, num_kv_heads, head_dim), gen, dtype, device)
    q = randn((T, num_heads, head_dim), gen, dtype, device)
    out = torch.full_like(q, SENTINEL)
    qsl = [0]
    for r in reqs:
        qsl.append(qsl[-1] + r.q_len)
    qsl += [12, 13]  # stale: would make "requests" over the padded rows
    seq_lens = [r.kv_len for r in reqs] + [9, 11]  # stale
    bt = randint(0, num_blocks, (R, n_cols), gen, torch.int32, "cpu")  # stale everywhere
    for i, r in enumerate(reqs):
        bt[i, : len(r.pages)] = torch.tensor(r.pages, dtype=torch.int32)
    qsl_t = torch.tensor(qsl, dtype=torch.int32, device=device)
    seq_t = torch.tensor(seq_lens, dtype=torch.int32, device=device)
    scale = scale_for(head_dim)
    meta = block_table_meta(qsl_t, seq_t, bt.to(device), num_reqs)
    paged_attention(q, k_cache, v_cache, out, meta, max_query_len=max(q_lens), scale=scale)
    expected = ref_attention(q, k_cache, v_cache, torch.full_like(q, SENTINEL), reqs, scale)
    torch.testing.assert_close(out.cpu(), expected.cpu(), **TOL[dtype])
    assert torch.all(out[qsl[num_reqs] :] == SENTINEL)  # padded rows untouched


def check_csr_prefill(
    device: torch.device,
    dtype: torch.dtype,
    gen: torch.Generator,
    head_dim: int = 16,
    block_size: int = 4,
    num_heads: int = 4,
    num_kv_heads: int = 1,
) -> None:
    num_blocks = 40
    q_lens, ctx = [4, 4, 2], [9, 0, 3]
    reqs = make_batch(gen, q_lens, ctx, num_blocks, block_size)
    num_reqs, T = len(reqs), 12
    k_cache = randn((num_blocks, block_size, num_kv_heads, head_dim), gen, dtype, device)
    v_cache = randn((num_blocks, block_size, num_kv_heads, head_dim), gen, dtype, device)
    q = randn((T, num_heads, head_dim), gen, dtype, device)
    out = torch.full_like(q, SENTINEL)
    indptr, indices, last = csr_from_reqs(reqs, block_size)
    qo = [0, 4, 8, 10, 11, 12]  # stale tail: 11, 12
    kv_indptr = [*indptr, indptr[-1] + 3, indptr[-1] + 5]  # stale tail
    kv_indices = indices + randint(0, num_blocks, (8,), gen, torch.int64, "cpu").tolist()
    last += [2, 3]
    args = [
        torch.tensor(x, dtype=torch.int32, device=device) for x in (qo, kv_indptr, kv_indices, last)
    ]
    scale = scale_for(head_dim)
    meta = csr_meta(*args, num_reqs)
    paged_attention(q, k_cache, v_cache, out, meta, max_query_len=max(q_lens), scale=scale)
    expected = ref_attention(q, k_cache, v_cache, torch.full_like(q, SENTINEL), reqs, scale)
    torch.testing.assert_close(out.cpu(), expected.cpu(), **TOL[dtype])
    assert torch.all(out[qo[num_reqs] :] == SENTINEL)


def check_csr_decode(
    device: torch.device,
    dtype: torch.dtype,
    gen: torch.Generator,
    head_dim: int = 16,
    block_size: int = 4,
    num_heads: int = 4,
    num_kv_heads: int = 2,
) -> None:
    """batch_size rows, one query each, padded rows with empty (FULL-padded) metadata."""
    num_blocks = 40
    kv_lens = [5, 1, 12, 8]
    reqs = make_batch(gen, [1] * len(kv_lens), [k - 1 for k in kv_lens], num_blocks, block_size)
    batch_size, T = 6, 8  # 4 real rows + 2 request-padded rows (empty), 2 rows never touched
    reqs += [Req(4, 1, 0, []), Req(5, 1, 0, [])]
    q = randn((T, num_heads, head_dim), gen, dtype, device)
    k_cache = randn((num_blocks, block_size, num_kv_heads, head_dim), gen, dtype, device)
    v_cache = randn((num_blocks, block_size, num_kv_heads, head_dim), gen, dtype, device)
    out = torch.full_like(q, SENTINEL)
    indptr, indices, last = csr_from_reqs(reqs, block_size)
    kv_indptr = [*indptr, indptr[-1] + 2]  # stale entry past batch_size
    kv_indices = indices + randint(0, num_blocks, (6,), gen, torch.int64, "cpu").tolist()
    last += [3]
    args = [
        torch.tensor(x, dtype=torch.int32, device=device) for x in (kv_indptr, kv_indices, last)
    ]
    scale = scale_for(head_dim)
    meta = csr_decode_meta(*args, batch_size)
    paged_attention(q, k_cache, v_cache, out, meta, max_query_len=1, scale=scale)
    expected = ref_attention(q, k_cache, v_cache, torch.full_like(q, SENTINEL), reqs, scale)
    torch.testing.assert_close(out.cpu(), expected.cpu(), **TOL[dtype])
    assert torch.all(out[batch_size:] == SENTINEL)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_varlen_paged_attention(
    device: torch.device, dtype: torch.dtype, gen: torch.Generator
) -> None:
    check_varlen(device, dtype, gen)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_csr_paged_prefill(device: torch.device, dtype: torch.dtype, gen: torch.Generator) -> None:
    check_csr_prefill(device, dtype, gen)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_csr_paged_decode(device: torch.device, dtype: torch.dtype, gen: torch.Generator) -> None:
    check_csr_decode(device, dtype, gen)


@pytest.mark.parametrize("head_dim", [24, 64])
def test_other_head_dims(device: torch.device, gen: torch.Generator, head_dim: int) -> None:
    """A non-power-of-two head_dim is masked; a larger one uses wider tiles."""
    check_varlen(device, torch.float32, gen, head_dim=head_dim, num_heads=2, num_kv_heads=2)
    check_csr_decode(device, torch.float32, gen, head_dim=head_dim)


def test_block_size_16_and_mha(device: torch.device, gen: torch.Generator) -> None:
    check_varlen(device, torch.float32, gen, num_heads=2, num_kv_heads=2, block_size=16)
    check_csr_prefill(device, torch.float32, gen, block_size=16)


# (num_heads, num_kv_heads): a group that is not a power of two (its tile rows are padded),
# a kv-head count that is not one (one program per kv head under the interpreter too), several
# kv heads per interpreted program, a group wider than the 16-row minimum, MHA.
HEAD_LAYOUTS = [(6, 2), (6, 3), (8, 4), (32, 1), (4, 4)]


@pytest.mark.parametrize(("num_heads", "num_kv_heads"), HEAD_LAYOUTS)
def test_gqa_head_layouts(
    device: torch.device, gen: torch.Generator, num_heads: int, num_kv_heads: int
) -> None:
    """Every query head reads its own kv head, whatever the group folding does."""
    heads = {"num_heads": num_heads, "num_kv_heads": num_kv_heads}
    check_varlen(device, torch.float32, gen, **heads)
    check_csr_prefill(device, torch.float32, gen, **heads)
    check_csr_decode(device, torch.float32, gen, **heads)


@pytest.mark.parametrize(("num_heads", "num_kv_heads"), [(4, 2), (3, 1)])
def test_long_queries_span_query_and_kv_blocks(
    device: torch.device, gen: torch.Generator, num_heads: int, num_kv_heads: int
) -> None:
    """Queries and KV far longer than one tile: several query blocks, several KV steps."""
    num_blocks, bs, hd, n_cols = 96, 16, 16, 32
    reqs = make_batch(gen, [300, 5, 1], [100, 250, 0], num_blocks, bs, extra_pages=0)
    T = sum(r.q_len for r in reqs) + 3
    k_cache = randn((num_blocks, bs, num_kv_heads, hd), gen, torch.float32, device)
    v_cache = randn((num_blocks, bs, num_kv_heads, hd), gen, torch.float32, device)
    q = randn((T, num_heads, hd), gen, torch.float32, device)
    scale = scale_for(hd)
    expected = ref_attention(q, k_cache, v_cache, torch.full_like(q, SENTINEL), reqs, scale)
    bt = torch.zeros((len(reqs), n_cols), dtype=torch.int32)
    for i, r in enumerate(reqs):
        bt[i, : len(r.pages)] = torch.tensor(r.pages, dtype=torch.int32)
    qsl = [0, *torch.tensor([r.q_len for r in reqs]).cumsum(0).tolist()]
    meta = [
        torch.tensor(x, dtype=torch.int32, device=device) for x in (qsl, [r.kv_len for r in reqs])
    ]
    out = torch.full_like(q, SENTINEL)
    paged = block_table_meta(*meta, bt.to(device), 3)
    paged_attention(q, k_cache, v_cache, out, paged, max_query_len=300, scale=scale)
    torch.testing.assert_close(out.cpu(), expected.cpu(), **TOL[torch.float32])
    indptr, indices, last = csr_from_reqs(reqs, bs)
    csr = [torch.tensor(x, dtype=torch.int32, device=device) for x in (indptr, indices, last)]
    out = torch.full_like(q, SENTINEL)
    paged = csr_meta(meta[0], *csr, 3)
    paged_attention(q, k_cache, v_cache, out, paged, max_query_len=300, scale=scale)
    torch.testing.assert_close(out.cpu(), expected.cpu(), **TOL[torch.float32])
    # Decode over the same long KV: one query row per request, its last position.
    dec = [Req(i, 1, r.kv_len, r.pages) for i, r in enumerate(reqs)]
    q_dec = randn((3, num_heads, hd), gen, torch.float32, device)
    out = torch.full_like(q_dec, SENTINEL)
    paged_attention(
        q_dec, k_cache, v_cache, out, csr_decode_meta(*csr, 3), max_query_len=1, scale=scale
    )
    want = ref_attention(q_dec, k_cache, v_cache, torch.full_like(q_dec, SENTINEL), dec, scale)
    torch.testing.assert_close(out.cpu(), want.cpu(), **TOL[torch.float32])


@pytest.mark.parametrize("interpreted", [False, True], ids=["compiled", "interpreted"])
def test_tile_choices(monkeypatch: pytest.MonkeyPatch, interpreted: bool) -> None:
    """Tiles are powers of two, >= 16 wide for tl.dot, hold whole GQA groups, and (for the
    interpreter) keep a dot small enough for numpy's single-threaded path."""
    monkeypatch.setattr(tiles, "interpreting", lambda: interpreted)
    for head_dim in (16, 24, 64, 128, 256):
        for nkv, group in ((1, 1), (2, 2), (3, 2), (8, 4), (4, 7), (1, 32), (1, 64)):
            for max_q in (1, 4, 37, 300):
                for max_kv in (1, 64, 256, 4096):
                    bm, gp2, kvh, bn, bd = tiles.prefill_tiles(head_dim, nkv, group, max_q, max_kv)
                    rows = bm * kvh * gp2
                    for x in (bm, gp2, kvh, bn, bd):
                        assert x & (x - 1) == 0, (head_dim, nkv, group, max_q, max_kv)
                    assert gp2 >= group and rows >= 16 and bn >= 16 and bd >= max(head_dim, 16)
                    assert nkv % kvh == 0
                    if not interpreted:
                        assert kvh == 1 and rows <= max(64, gp2)
                    elif rows > max(16, kvh * gp2) or bn > 16:
                        assert rows * bn * kvh * bd <= tiles.INTERP_MAX_DOT
                kvh, bh, bn, bd = tiles.decode_tiles(head_dim, nkv, group, max_kv)
                assert nkv % kvh == 0 and bh >= max(16, kvh * group) and bn >= 16
                assert not interpreted or bn == 16 or bh * bn * kvh * bd <= tiles.INTERP_MAX_DOT


def _constexpr_names(kernel: Any) -> set[str]:
    params = inspect.signature(kernel.fn).parameters.values()
    return {p.name for p in params if "constexpr" in str(p.annotation)}


@pytest.mark.parametrize("interpreted", [False, True], ids=["compiled", "interpreted"])
def test_tiles_name_their_kernels_constants(
    monkeypatch: pytest.MonkeyPatch, interpreted: bool
) -> None:
    """`Tiles.constexprs()` and what each launch adds itself (the metadata style, causality,
    the guard switch) are exactly the kernel's compile-time parameters, and the tile rows
    are the ones each kernel's warp count was chosen for."""
    monkeypatch.setattr(tiles, "interpreting", lambda: interpreted)
    heads = tiles.Heads(num_kv_heads=4, group=3, head_dim=24, page_size=4, dot_f32=True)
    prefill = tiles.Tiles.prefill(heads, 37, 256)
    decode = tiles.Tiles.decode(heads, 256)
    for kernel, tile, own in (
        (paged_prefill._paged_prefill_kernel, prefill, {"CSR", "CAUSAL", "GUARD"}),
        (csr._csr_decode_kernel, decode, {"GUARD"}),
    ):
        names = set(tile.constexprs()) - {"num_warps"}
        assert names.isdisjoint(own) and names | own == _constexpr_names(kernel)
        assert tile.constexprs()["GROUP_P2"] == 4 and tile.kv_head_programs * tile.kv_heads == 4
    assert prefill.rows == prefill.block_rows * prefill.kv_heads * 4
    assert decode.rows == decode.block_rows >= max(16, decode.kv_heads * 4)


def test_varlen_empty_and_long_queries(device: torch.device, gen: torch.Generator) -> None:
    """Zero-length requests (FULL-padded) do nothing; a query longer than BLOCK_M spans blocks."""
    num_blocks, bs, hd = 48, 4, 16
    reqs = make_batch(gen, [0, 37, 0], [0, 6, 0], num_blocks, bs)
    reqs[0].kv_len = reqs[2].kv_len = 0
    k_cache = randn((num_blocks, bs, 1, hd), gen, torch.float32, device)
    v_cache = randn((num_blocks, bs, 1, hd), gen, torch.float32, device)
    q = randn((40, 2, hd), gen, torch.float32, device)
    out = torch.full_like(q, SENTINEL)
    bt = torch.zeros((3, 16), dtype=torch.int32)
    bt[1, : len(reqs[1].pages)] = torch.tensor(reqs[1].pages, dtype=torch.int32)
    qsl = torch.tensor([0, 0, 37, 37], dtype=torch.int32, device=device)
    seq = torch.tensor([0, 43, 0], dtype=torch.int32, device=device)
    meta = block_table_meta(qsl, seq, bt.to(device), 3)
    paged_attention(q, k_cache, v_cache, out, meta, max_query_len=37, scale=scale_for(hd))
    expected = ref_attention(q, k_cache, v_cache, torch.full_like(q, SENTINEL), reqs, scale_for(hd))
    torch.testing.assert_close(out.cpu(), expected.cpu(), **TOL[torch.float32])


def test_strided_q_view(device: torch.device, gen: torch.Generator) -> None:
    """q may be a strided view of a fused qkv projection, as in a real forward."""
    num_blocks, bs, hd, nh, nkv = 24, 4, 16, 4, 2
    reqs = make_batch(gen, [2, 3], [3, 2], num_blocks, bs)
    k_cache = randn((num_blocks, bs, nkv, hd), gen, torch.float32, device)
    v_cache = randn((num_blocks, bs, nkv, hd), gen, torch.float32, device)
    qkv = randn((5, (nh + 2 * nkv) * hd), gen, torch.float32, device)
    q = qkv[:, : nh * hd].view(5, nh, hd)
    out = torch.full((5, nh, hd), SENTINEL, device=device)
    indptr, indices, last = csr_from_reqs(reqs, bs)
    args = [
        torch.tensor(x, dtype=torch.int32, device=device)
        for x in ([0, 2, 5], indptr, indices, last)
    ]
    meta = csr_meta(*args, 2)
    paged_attention(q, k_cache, v_cache, out, meta, max_query_len=3, scale=scale_for(hd))
    expected = ref_attention(
        q, k_cache, v_cache, torch.full_like(out, SENTINEL), reqs, scale_for(hd)
    )
    torch.testing.assert_close(out.cpu(), expected.cpu(), **TOL[torch.float32])


def test_nan_in_read_kv_propagates(device: torch.device, gen: torch.Generator) -> None:
    """A NaN in KV a request legitimately reads poisons its rows (the probe relies on it);
    NaN in pages nobody reads changes nothing."""
    num_blocks, bs, hd = 24, 4, 16
    reqs = make_batch(gen, [1, 1], [6, 3], num_blocks, bs)
    k_cache = randn((num_blocks, bs, 1, hd), gen, torch.float32, device)
    v_cache = randn((num_blocks, bs, 1, hd), gen, torch.float32, device)
    used = {p for r in reqs for p in r.pages[: math.ceil(r.kv_len / bs)]}
    unused = [b for b in range(num_blocks) if b not in used]
    k_cache[unused] = float("nan")
    v_cache[unused] = float("nan")
    k_cache[reqs[0].pages[0], 1] = float("nan")  # position 1 of request 0
    q = randn((2, 2, hd), gen, torch.float32, device)
    out = torch.zeros_like(q)
    indptr, indices, last = csr_from_reqs(reqs, bs)
    args = [torch.tensor(x, dtype=torch.int32, device=device) for x in (indptr, indices, last)]
    meta = csr_decode_meta(*args, 2)
    paged_attention(q, k_cache, v_cache, out, meta, max_query_len=1, scale=scale_for(hd))
    assert torch.isnan(out[0]).all()
    assert not torch.isnan(out[1]).any()


def test_build_csr_page_indices(device: torch.device, gen: torch.Generator) -> None:
    num_reqs, R, n_cols = 3, 5, 6
    bt = randint(1, 100, (R, n_cols), gen, torch.int32, device)
    counts = [2, 0, 6]
    indptr = torch.tensor([0, 2, 2, 8, 99, 99], dtype=torch.int32, device=device)  # stale tail
    kv_indices = torch.full((12,), -5, dtype=torch.int32, device=device)
    build_csr_page_indices(kv_indices, bt, indptr, num_reqs)
    expected = torch.full((12,), -5, dtype=torch.int32)
    at = 0
    for r, c in enumerate(counts):
        expected[at : at + c] = bt[r, :c].cpu()
        at += c
    assert torch.equal(kv_indices.cpu(), expected)


@pytest.mark.parametrize("seed", range(5))
def test_random_padded_batches(device: torch.device, seed: int) -> None:
    """Random request counts, query/context lengths and GQA; garbage in every padding region."""
    gen = torch.Generator().manual_seed(seed)
    bs, hd, num_blocks, n_cols = 4, 16, 64, 8
    nkv = int(torch.randint(1, 3, (1,), generator=gen))
    nh = nkv * int(torch.randint(1, 3, (1,), generator=gen))
    R = int(torch.randint(3, 7, (1,), generator=gen))
    num_reqs = int(torch.randint(2, R, (1,), generator=gen))  # always some padded slots
    q_lens = torch.randint(0, 7, (num_reqs,), generator=gen).tolist()
    ctx = torch.randint(0, n_cols * bs - 6, (num_reqs,), generator=gen).tolist()
    reqs = make_batch(gen, q_lens, ctx, num_blocks, bs, extra_pages=0)
    T = sum(q_lens) + 5
    k_cache = randn((num_blocks, bs, nkv, hd), gen, torch.float32, device)
    v_cache = randn((num_blocks, bs, nkv, hd), gen, torch.float32, device)
    q = randn((T, nh, hd), gen, torch.float32, device)
    scale = scale_for(hd)
    expected = ref_attention(q, k_cache, v_cache, torch.full_like(q, SENTINEL), reqs, scale)
    max_q = max(max(q_lens), 1)

    # flash-attn style: stale (but in-range) values past num_reqs everywhere
    qsl = [0, *torch.tensor(q_lens).cumsum(0).tolist()]
    qsl_t = randint(0, T + 1, (R + 1,), gen, torch.int32, "cpu")
    qsl_t[: num_reqs + 1] = torch.tensor(qsl, dtype=torch.int32)
    seq_t = randint(0, n_cols * bs, (R,), gen, torch.int32, "cpu")
    seq_t[:num_reqs] = torch.tensor([r.kv_len for r in reqs], dtype=torch.int32)
    bt = randint(0, num_blocks, (R, n_cols), gen, torch.int32, "cpu")
    for i, r in enumerate(reqs):
        bt[i, : len(r.pages)] = torch.tensor(r.pages, dtype=torch.int32)
    out = torch.full_like(q, SENTINEL)
    meta = block_table_meta(qsl_t.to(device), seq_t.to(device), bt.to(device), num_reqs)
    paged_attention(q, k_cache, v_cache, out, meta, max_query_len=max_q, scale=scale)
    torch.testing.assert_close(out.cpu(), expected.cpu(), **TOL[torch.float32])

    # FlashInfer style over the same requests, stale tails in the CSR arrays
    indptr, indices, last = csr_from_reqs(reqs, bs)
    pad = R - num_reqs
    stale = randint(0, len(indices) + 1, (pad,), gen, torch.int64, "cpu").tolist()
    args = [
        torch.tensor(x, dtype=torch.int32, device=device)
        for x in (
            qsl + [T] * pad,
            indptr + sorted(stale),
            indices + randint(0, num_blocks, (4,), gen, torch.int64, "cpu").tolist(),
            last + [bs] * pad,
        )
    ]
    out = torch.full_like(q, SENTINEL)
    meta = csr_meta(*args, num_reqs)
    paged_attention(q, k_cache, v_cache, out, meta, max_query_len=max_q, scale=scale)
    torch.testing.assert_close(out.cpu(), expected.cpu(), **TOL[torch.float32])


def test_non_causal_block_attends_whole_kv(device: torch.device, gen: torch.Generator) -> None:
    """DFlash blocks: every query row attends every KV position of its request."""
    reqs = make_batch(gen, [4, 3], [6, 9], 40, 4)
    k_cache = randn((40, 4, 2, 16), gen, torch.float32, device)
    v_cache = randn((40, 4, 2, 16), gen, torch.float32, device)
    q = randn((7, 4, 16), gen, torch.float32, device)
    out = torch.zeros_like(q)
    bt = torch.zeros((2, 6), dtype=torch.int32)
    for i, r in enumerate(reqs):
        bt[i, : len(r.pages)] = torch.tensor(r.pages, dtype=torch.int32)
    qsl = torch.tensor([0, 4, 7], dtype=torch.int32, device=device)
    sl = torch.tensor([r.kv_len for r in reqs], dtype=torch.int32, device=device)
    meta = block_table_meta(qsl, sl, bt.to(device), 2)
    paged_attention(
        q, k_cache, v_cache, out, meta, max_query_len=4, scale=scale_for(16), causal=False
    )
    # a non-causal request equals causal rows that all sit at the last position
    want = torch.zeros_like(q)
    for req in reqs:
        for i in range(req.q_len):
            row = Req(req.q_start + i, 1, req.kv_len, req.pages)
            want = ref_attention(q, k_cache, v_cache, want, [row], scale_for(16))
    torch.testing.assert_close(out.cpu(), want.cpu(), **TOL[torch.float32])
