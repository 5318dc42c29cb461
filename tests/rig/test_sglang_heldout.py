"""Held-out check of SGLang plans across 0.5.x: `inspect --json` per phase against the engine.

The sixteen configurations (release, GPU, K, topk, max_running_requests, backend, TP) were
chosen before any plan was computed, to cover each change the release deltas record. For each,
the batch-size list is what the release's own functions return, executed from the wheel with
the configuration's inputs (cuda_graph_max_bs from the memory tier read in that release's
`_handle_gpu_memory_settings` / `handle_gpu_memory_settings`, GPU memory in MiB as
`known.gpus` gives it):

- 0.5.1-0.5.2: `srt/model_executor/cuda_graph_runner.py::get_batch_sizes_to_capture`;
- 0.5.3-0.5.13: `srt/server_args.py::ServerArgs._generate_cuda_graph_batch_sizes`, then
  `cuda_graph_runner.py::get_batch_sizes_to_capture` (capped at req_to_token_pool.size);
- 0.5.14-0.5.18: `server_args.py::ServerArgs._generate_decode_cuda_graph_batch_sizes`, then
  `runner/base_cuda_graph_runner.py::get_batch_sizes_to_capture`;
- 0.5.19+: `arg_groups/cuda_graph_hook.py::generate_decode_cuda_graph_batch_sizes`, then
  `runner/base_cuda_graph_runner.py::get_batch_sizes_to_capture`.

Per phase, read from the same wheel:
- target: TARGET_VERIFY FULL graphs, speculative_num_draft_tokens per request
  (`cuda_graph_runner.py::CudaGraphRunner.__init__`: num_tokens_per_bs);
- draft_decode: `EAGLEDraftCudaGraphRunner` (topk per request, `__init__`), built by the
  worker's `init_cuda_graphs` only when speculative_num_steps > 1 from 0.5.3 (always before);
- draft_prefill (the draft extend after verify): spec v1 `eagle_worker.py::EAGLEWorker.
  init_cuda_graphs` (default to 0.5.10; trees to 0.5.12) builds `EAGLEDraftExtendCudaGraphRunner`
  for any backend with a draft-extend backend, at speculative_num_steps + 1 tokens per request
  (`__init__`: num_tokens_per_bs, to 0.5.12); `eagle_worker_v2.py::EAGLEWorkerV2` only for its
  allowlist (Triton from 0.5.10, FlashInfer from 0.5.14, FlashAttention from 0.5.23), at
  num_draft_tokens per request from 0.5.13 (`resolve_num_tokens_per_req`); without the runner,
  the breakable prefill graphs when the draft has them (`init_prefill_cuda_graph(
  force_for_draft_worker=True)`, default from 0.5.15, ladder `generate_prefill_cuda_graph_
  batch_sizes` up to the chunked-prefill size), else eager.

All sixteen held when this table was first run (every phase's mode and descriptors); the run
used the tiny Llama preset, whose 4 heads refuse TP 8, so the table inspects the Llama-3.1-8B
EAGLE-3 preset (32 heads), which the planning inputs (architecture, MHA) do not change. The
four launch lines without a backend (`DEFAULT_ROWS`, chosen the same way) held too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli

pytestmark = pytest.mark.fast

_SPEC = [*range(1, 9), *range(10, 33, 2)]  # 1-8, then 10-32 by 2: every list's head
_FIXED = [*_SPEC, 40, 48, 56, *range(80, 161, 16)]  # 0.5.1-0.5.2 fixed list to 160
_TO_64 = [*_SPEC, *range(40, 65, 4)]
_TO_256 = [*_TO_64, *range(72, 257, 8)]
# generate_prefill_cuda_graph_batch_sizes(8192), executed from the 0.5.16 wheel
_LADDER_8192 = [
    *range(4, 33, 4),
    *range(48, 257, 16),
    *range(288, 513, 32),
    *range(576, 1025, 64),
    *range(1280, 4097, 256),
    *range(4608, 8193, 512),
]


@dataclass(frozen=True)
class Row:
    engine: str
    gpu: str
    k: int
    mrr: int | None  # --max-running-requests (None: the EAGLE default, 48)
    backend: str  # SGLang's own name
    bs: list[int]  # the engine's capture list, executed from the wheel
    target: int  # tokens per request of the verify graphs
    decode: int | None  # tokens per request of the draft-decode graphs; None: no runner
    extend: str  # draft_prefill mode: FULL, BREAKABLE or NONE
    extend_width: int = 0  # FULL: tokens per request
    topk: int = 1
    ndt: int | None = None
    tp: int = 1


ROWS = {
    # 0.5.2 fixed list to 160, cut at the pool (48); EAGLEWorker: fa3 extend graph
    "0.5.2-h100-fa3": Row("0.5.2", "H100", 3, None, "fa3", [*_SPEC, 40, 48], 4, 1, "FULL", 4),
    # 0.5.2 above 90 GiB: + 160-256 by 8
    "0.5.2-h200-flashinfer": Row(
        "0.5.2", "H200", 3, 256, "flashinfer", [*_FIXED, *range(168, 257, 8)], 4, 1, "FULL", 4
    ),
    # 0.5.2 above 160000 MiB: + 256-512 by 16
    "0.5.2-b200-triton": Row(
        "0.5.2",
        "B200",
        4,
        512,
        "triton",
        [*_FIXED, *range(168, 257, 8), *range(272, 513, 16)],
        5,
        1,
        "FULL",
        5,
    ),
    # 0.5.3: 40-60 by 4, no 64; pool 128 caps the 72-256 stretch
    "0.5.3-h100-fa3": Row(
        "0.5.3",
        "H100",
        3,
        128,
        "fa3",
        [*_SPEC, *range(40, 61, 4), *range(72, 129, 8)],
        4,
        1,
        "FULL",
        4,
    ),
    "0.5.6-h100-flashinfer-k5": Row(
        "0.5.6", "H100", 5, 128, "flashinfer", [*_TO_64, *range(72, 129, 8)], 6, 1, "FULL", 6
    ),
    # TP 4: cuda_graph_max_bs 512, the pool (48) decides
    "0.5.9-h200-triton-tp4": Row(
        "0.5.9", "H200", 3, 48, "triton", [*_SPEC, 40, 44, 48], 4, 1, "FULL", 4, tp=4
    ),
    # L4 (22 GiB): max_bs 24 from 0.5.4; 0.5.10 still EAGLEWorker
    "0.5.10-l4-fa3": Row("0.5.10", "L4", 3, 64, "fa3", _SPEC[:16], 4, 1, "FULL", 4),
    # EAGLEWorkerV2 by default: no fa3 extend runner, no draft BCG before 0.5.13
    "0.5.12-h100-fa3-k2": Row("0.5.12", "H100", 2, 16, "fa3", _SPEC[:12], 3, 1, "NONE"),
    # a tree falls back to EAGLEWorker in 0.5.12: extend graph at num_steps + 1 tokens
    "0.5.12-h100-fa3-tree": Row(
        "0.5.12", "H100", 3, 32, "fa3", _SPEC, 8, 4, "FULL", 4, topk=4, ndt=8
    ),
    "0.5.14-h100-flashinfer": Row(
        "0.5.14", "H100", 3, None, "flashinfer", [*_SPEC, 40, 44, 48], 4, 1, "FULL", 4
    ),
    # RTX 4090 (23.6 GiB): max_bs 24 until 0.5.19, 48 from 0.5.20
    "0.5.18-4090-triton": Row("0.5.18", "RTX-4090", 3, 96, "triton", _SPEC[:16], 4, 1, "FULL", 4),
    "0.5.22-4090-triton": Row(
        "0.5.22", "RTX-4090", 3, 96, "triton", [*_SPEC, 40, 44, 48], 4, 1, "FULL", 4
    ),
    # TP 8 on B200: max_bs 512 under a pool of 600; one step: no draft-decode runner
    "0.5.20-b200-triton-tp8-k1": Row(
        "0.5.20",
        "B200",
        1,
        600,
        "triton",
        [*_TO_256, *range(272, 513, 16)],
        2,
        None,
        "FULL",
        2,
        tp=8,
    ),
    # TP 4 on H100: max_bs 512, pool 300 appended; fa3 extend on the draft's breakable graphs
    "0.5.16-h100-fa3-tp4": Row(
        "0.5.16", "H100", 3, 300, "fa3", [*_TO_256, 272, 288, 300], 4, 1, "BREAKABLE", tp=4
    ),
    # 0.5.1 on L4: cuda_graph_max_bs 8
    "0.5.1-l4-triton-k2": Row("0.5.1", "L4", 2, None, "triton", _SPEC[:8], 3, 1, "FULL", 3),
    # 0.5.13: trees on EAGLEWorkerV2, extend at num_draft_tokens
    "0.5.13-h100-triton-tree": Row(
        "0.5.13", "H100", 3, 24, "triton", _SPEC[:16], 6, 2, "FULL", 6, topk=2, ndt=6
    ),
}


def _inspect(row: Row) -> dict[str, dict]:
    args = ["inspect", "llama3.1-8b-eagle3", "--json", "--engine", f"sglang=={row.engine}"]
    args += ["--gpu", row.gpu, "-K", str(row.k), "--attention-backend", row.backend]
    args += ["--tp", str(row.tp)]
    if row.mrr is not None:
        args += ["--max-num-seqs", str(row.mrr)]
    if row.topk > 1:
        args += ["--speculative-eagle-topk", str(row.topk)]
        args += ["--speculative-num-draft-tokens", str(row.ndt)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code in (0, 1), result.stderr
    return {p["phase"]: p for p in json.loads(result.stdout)["plan"]["phases"]}


def _per_bs(bs: list[int], width: int) -> list[list[int]]:
    return [[b * width, b] for b in bs]


@pytest.mark.parametrize("name", list(ROWS))
def test_inspect_equals_the_engine_plan(name: str) -> None:
    row = ROWS[name]
    phases = _inspect(row)
    assert phases["target"]["mode"] == "FULL"
    assert phases["target"]["descriptors"] == _per_bs(row.bs, row.target)
    decode = phases["draft_decode"]
    if row.decode is None:
        assert (decode["mode"], decode["descriptors"]) == ("NONE", [])
    else:
        assert decode["mode"] == "FULL"
        assert decode["descriptors"] == _per_bs(row.bs, row.decode)
    extend = phases["draft_prefill"]
    assert extend["mode"] == row.extend
    expected = {
        "FULL": _per_bs(row.bs, row.extend_width),
        "BREAKABLE": [[n, None] for n in _LADDER_8192],
        "NONE": [],
    }[row.extend]
    assert extend["descriptors"] == expected


def test_the_table_covers_each_recorded_change() -> None:
    # releases on both sides of every SGLang delta this table pins
    engines = {row.engine for row in ROWS.values()}
    assert {"0.5.2", "0.5.3", "0.5.6", "0.5.10", "0.5.12", "0.5.13", "0.5.14"} <= engines
    assert {"0.5.16", "0.5.18", "0.5.20", "0.5.22"} <= engines
    assert {row.tp for row in ROWS.values()} == {1, 4, 8}


# Launch lines that name no backend (chosen with the table above): the release's default
# (`_get_default_attn_backend` and its predecessors, see known/sglang_backends.py) and the
# draft extend it gets; (engine, GPU, --speculative-eagle-topk, backend, draft_prefill mode)
DEFAULT_ROWS = [
    ("0.5.5", "B200", None, "flashinfer", "FULL"),  # no trtllm_mha default yet; EAGLEWorker
    ("0.5.7", "B200", None, "flashinfer", "FULL"),  # trtllm_mha needs the topk given
    ("0.5.12", "H100", None, "fa3", "NONE"),  # EAGLEWorkerV2: fa3 not allowlisted, no BCG
    ("0.5.16", "B200", 1, "trtllm_mha", "FULL"),  # TRTLLMHAAttnBackend allowlisted (0.5.13)
]


@pytest.mark.parametrize(("engine", "gpu", "topk", "backend", "mode"), DEFAULT_ROWS)
def test_default_backend_and_its_draft_extend(
    engine: str, gpu: str, topk: int | None, backend: str, mode: str
) -> None:
    args = ["inspect", "llama3.1-8b-eagle3", "--json", "--engine", f"sglang=={engine}"]
    args += ["--gpu", gpu, "-K", "3", "--max-num-seqs", "8"]
    if topk is not None:
        args += ["--speculative-eagle-topk", str(topk)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code in (0, 1), result.stderr
    plan = json.loads(result.stdout)["plan"]
    assert any(d.startswith(f"attention backend {backend} ") for d in plan["defaults"])
    extend = next(p for p in plan["phases"] if p["phase"] == "draft_prefill")
    assert extend["mode"] == mode
    assert extend["descriptors"] == (_per_bs(_SPEC[:8], 4) if mode == "FULL" else [])
