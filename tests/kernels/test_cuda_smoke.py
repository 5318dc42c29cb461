"""The kernel checks on a real GPU: compiled kernels, realistic shapes, CUDA-graph capture.

Skipped without CUDA. On a GPU machine the rest of ``tests/kernels`` already runs on
``cuda`` through the ``device`` fixture; this module adds what only a GPU can show: the
checks at serving-like shapes (bf16, head_dim 128, block size 16, GQA 32/8), and that every
wrapper can be captured into a ``torch.cuda.CUDAGraph`` (no host sync, grid from Python ints)
and replayed over new buffer contents with the same results as eager calls.
"""

from __future__ import annotations

import pytest
import torch

from eaglegraph.kernels.attention import block_table_meta, csr_decode_meta, paged_attention
from eaglegraph.kernels.eagle import prepare_eagle_inputs, update_eagle_draft_inputs
from eaglegraph.kernels.gather import gather_rows
from eaglegraph.kernels.guard import Guard, GuardLog
from eaglegraph.kernels.kv_cache import write_kv
from eaglegraph.kernels.sampling import argmax_rows

from .guard_cases import CASES
from .reference import TOL, csr_from_reqs, randn, ref_attention, scale_for
from .test_attention import check_csr_decode, check_csr_prefill, check_varlen, make_batch
from .test_block_table import check_compute_slot_mappings, check_gather_block_tables
from .test_eagle import (
    check_prepare_eagle_decode,
    check_prepare_eagle_inputs,
    check_update_eagle_draft_inputs,
)
from .test_kv_cache import check_write_kv
from .test_sampling import check_argmax, check_greedy_verify

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

CUDA = torch.device("cuda")
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


@pytest.fixture
def gen() -> torch.Generator:
    return torch.Generator().manual_seed(99)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_attention_checks(dtype: torch.dtype, gen: torch.Generator) -> None:
    check_varlen(CUDA, dtype, gen)
    check_csr_prefill(CUDA, dtype, gen)
    check_csr_decode(CUDA, dtype, gen)
    check_write_kv(CUDA, dtype, gen)


def test_metadata_and_eagle_checks(gen: torch.Generator) -> None:
    check_gather_block_tables(CUDA, gen)
    check_compute_slot_mappings(CUDA, gen)
    check_prepare_eagle_inputs(CUDA, gen, pad_lti=True)
    check_prepare_eagle_inputs(CUDA, gen, pad_lti=False)
    check_prepare_eagle_decode(CUDA, gen)
    check_update_eagle_draft_inputs(CUDA, gen)
    check_argmax(CUDA, gen, vocab=128256)
    check_greedy_verify(CUDA, gen)


@pytest.mark.parametrize("name", list(CASES))
def test_guard_cases_on_gpu(name: str, gen: torch.Generator) -> None:
    case = CASES[name](CUDA, gen)
    case.plant(case.buffers)
    log = GuardLog(32, CUDA)
    ids = {role: i for i, role in enumerate(sorted({r for r, _, _ in case.expected}))}
    case.run(Guard(log, ids))
    got = sorted((v.kernel, v.buffer_id, v.row, v.value) for v in log.read())
    assert got == sorted((case.kernel, ids[r], row, val) for r, row, val in case.expected)
    if case.fallback is not None:
        case.fallback(case.buffers)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_serving_shapes(dtype: torch.dtype, gen: torch.Generator) -> None:
    """Llama-8B-like attention: 32 q heads, 8 kv heads, head_dim 128, block size 16."""
    nb, bs, nh, nkv, hd = 512, 16, 32, 8, 128
    q_lens, ctx = [4, 4, 4, 300, 4, 1], [100, 1000, 17, 250, 2040, 64]
    reqs = make_batch(gen, q_lens, ctx, nb, bs)
    T, n_cols = sum(q_lens) + 8, 160
    k_cache = randn((nb, bs, nkv, hd), gen, dtype, CUDA)
    v_cache = randn((nb, bs, nkv, hd), gen, dtype, CUDA)
    q = randn((T, nh, hd), gen, dtype, CUDA)
    out = torch.zeros_like(q)
    bt = torch.zeros((len(reqs), n_cols), dtype=torch.int32)
    for i, r in enumerate(reqs):
        bt[i, : len(r.pages)] = torch.tensor(r.pages, dtype=torch.int32)
    qsl = torch.tensor([0, *torch.tensor(q_lens).cumsum(0).tolist()], dtype=torch.int32)
    seq = torch.tensor([r.kv_len for r in reqs], dtype=torch.int32)
    meta = block_table_meta(qsl.to(CUDA), seq.to(CUDA), bt.to(CUDA), len(reqs))
    paged_attention(q, k_cache, v_cache, out, meta, max_query_len=max(q_lens), scale=scale_for(hd))
    expected = ref_attention(q, k_cache, v_cache, torch.zeros_like(q), reqs, scale_for(hd))
    torch.testing.assert_close(out.cpu(), expected.cpu(), **TOL[dtype])


def test_wrappers_capture_and_replay_in_a_cuda_graph(gen: torch.Generator) -> None:
    """One draft-like step captured with guards on, replayed over new buffer contents."""
    nb, bs, nh, nkv, hd, H, V, R, K = 64, 16, 8, 2, 64, 256, 1000, 4, 3
    T = R * (K + 1)
    dt = torch.bfloat16
    reqs = make_batch(gen, [1] * R, [40, 7, 90, 15], nb, bs)
    indptr, indices, last = csr_from_reqs(reqs, bs)
    buf = {
        "k_cache": randn((nb, bs, nkv, hd), gen, dt, CUDA),
        "v_cache": randn((nb, bs, nkv, hd), gen, dt, CUDA),
        "q": randn((R, nh, hd), gen, dt, CUDA),
        "k": randn((R, nkv, hd), gen, dt, CUDA),
        "slots": torch.tensor(
            [r.pages[(r.kv_len - 1) // bs] * bs + (r.kv_len - 1) % bs for r in reqs], device=CUDA
        ),
        "kv_indptr": torch.tensor(indptr, dtype=torch.int32, device=CUDA),
        "kv_indices": torch.tensor(indices, dtype=torch.int32, device=CUDA),
        "last": torch.tensor(last, dtype=torch.int32, device=CUDA),
        "attn_out": torch.zeros((R, nh, hd), dtype=dt, device=CUDA),
        "hidden": randn((T, H), gen, dt, CUDA),
        "lti": torch.tensor([3, 7, 11, 15], device=CUDA),
        "gathered": torch.zeros((R, H), dtype=dt, device=CUDA),
        "logits": randn((R, V), gen, torch.float32, CUDA),
        "sampled": torch.zeros(R, dtype=torch.int64, device=CUDA),
        "draft_tokens": torch.zeros((R, K), dtype=torch.int64, device=CUDA),
        "ids": torch.zeros(T, dtype=torch.int32, device=CUDA),
        "e_hidden": torch.zeros((T, H), dtype=dt, device=CUDA),
        "positions": torch.arange(T, device=CUDA),
        "seq_lens": torch.tensor([r.kv_len for r in reqs], dtype=torch.int32, device=CUDA),
        "step": torch.tensor(1, device=CUDA),
        "t_qsl": torch.arange(0, T + 1, K + 1, dtype=torch.int32, device=CUDA),
        "t_ids": torch.randint(1, V, (T,), generator=gen).int().to(CUDA),
        "num_rej": torch.tensor([0, 1, 3, 2], dtype=torch.int32, device=CUDA),
        "next": torch.randint(1, V, (R,), generator=gen).to(CUDA),
        "e_ids": torch.zeros(T, dtype=torch.int32, device=CUDA),
        "e_pos": torch.zeros(T, dtype=torch.int64, device=CUDA),
        "e_qsl": torch.zeros(R + 1, dtype=torch.int32, device=CUDA),
        "e_seq": torch.zeros(R, dtype=torch.int32, device=CUDA),
        "e_lti": torch.zeros(R, dtype=torch.int64, device=CUDA),
        "e_step": torch.tensor(9, device=CUDA),
    }
    log = GuardLog(64, CUDA)
    guard = Guard(log)
    b = buf
    decode = csr_decode_meta(b["kv_indptr"], b["kv_indices"], b["last"], R)

    def step() -> None:
        prepare_eagle_inputs(
            b["t_qsl"],
            b["seq_lens"],
            b["t_ids"],
            b["positions"],
            b["num_rej"],
            b["next"],
            b["e_ids"],
            b["e_pos"],
            b["e_qsl"],
            b["e_seq"],
            b["e_lti"],
            b["e_step"],
            R,
            R,
            guard=guard,
        )
        write_kv(b["k"], b["k"], b["k_cache"], b["v_cache"], b["slots"], R, guard=guard)
        paged_attention(
            b["q"],
            b["k_cache"],
            b["v_cache"],
            b["attn_out"],
            decode,
            max_query_len=1,
            scale=scale_for(hd),
            guard=guard,
        )
        gather_rows(b["hidden"], b["lti"], b["gathered"], R, T, guard=guard)
        argmax_rows(b["logits"], b["sampled"], R)
        update_eagle_draft_inputs(
            b["sampled"],
            b["gathered"],
            b["draft_tokens"],
            b["ids"],
            b["e_hidden"],
            b["positions"],
            b["seq_lens"],
            b["step"],
            R,
            K,
            4096,
        )

    initial = {k: v.clone() for k, v in buf.items()}
    outputs = [
        "attn_out",
        "gathered",
        "sampled",
        "draft_tokens",
        "e_ids",
        "e_pos",
        "e_qsl",
        "e_seq",
        "e_lti",
        "e_hidden",
        "k_cache",
    ]

    # Warm up (compiles) on a side stream, as torch recommends before capture.
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        step()
    torch.cuda.current_stream().wait_stream(stream)
    for k, v in initial.items():
        buf[k].copy_(v)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()

    # New contents in the same buffers: eager and replay must agree.
    new_q = randn((R, nh, hd), gen, dt, CUDA)
    new_logits = randn((R, V), gen, torch.float32, CUDA)
    for k, v in initial.items():
        buf[k].copy_(v)
    buf["q"].copy_(new_q)
    buf["logits"].copy_(new_logits)
    step()
    eager = {k: buf[k].clone() for k in outputs}
    for k, v in initial.items():
        buf[k].copy_(v)
    buf["q"].copy_(new_q)
    buf["logits"].copy_(new_logits)
    log.reset()
    graph.replay()
    torch.cuda.synchronize()
    for k in outputs:
        assert torch.equal(buf[k], eager[k]), k
    assert log.read() == []
    # A stale index planted after capture is caught by the captured guard.
    buf["lti"][2] = T + 5
    graph.replay()
    assert [(v.kernel, v.row, v.value) for v in log.read()] == [("gather_rows", 2, T + 5)]
    assert torch.isnan(buf["gathered"][2]).all()
