"""Plans pinned to what the engines' own code builds, release by release.

`data/vllm_plans.json` rows follow vLLM's `_set_cudagraph_sizes`, the backend's
`get_cudagraph_support`, `resolve_cudagraph_mode_and_sizes` (and, where a release has it,
`adjust_cudagraph_sizes_for_spec_decode`), `CudaGraphManager._init_candidates` and the
speculator's `init_cudagraph_manager` in each release wheel's source, on stub configurations
(each row cites the functions it came from); eaglegraph's plan for the same profile, GPU, backend
and request must match mode, descriptors and graph count per phase.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.known.choose import profile_for_engine, profile_for_version
from eaglegraph.rig.options import PlanChoices, resolve_plan_options
from eaglegraph.rig.plan import build_plan

ROWS = json.loads((Path(__file__).parent / "data" / "vllm_plans.json").read_text())["rows"]


def _key(row: dict) -> str:
    return (
        f"{row['profile']}-{row['gpu']}-{row['attention_backend']}-{row['requested_mode']}-"
        f"R{row['max_num_seqs']}-K{row['num_speculative_tokens']}"
    )


def _sorted(descs: list[list[int | None]]) -> list[list[int | None]]:
    return sorted(descs, key=lambda d: (d[0], d[1] is None, d[1] or 0))


@pytest.mark.parametrize("row", ROWS, ids=_key)
def test_vllm_plan_matches_engine(row: dict) -> None:
    opts = resolve_plan_options(
        PlanChoices(
            behavior=row["profile"],
            gpu=row["gpu"],
            attention_backend=row["attention_backend"],
            mode=row["requested_mode"],
            max_num_seqs=row["max_num_seqs"],
            num_speculative_tokens=row["num_speculative_tokens"],
            max_num_batched_tokens=row["max_num_batched_tokens"],
        )
    )
    plan = build_plan(opts)
    assert plan.attention_support["level"] == row["support"]
    for name, want in row["phases"].items():
        got = plan.phase(name)
        assert got.mode.name == want["mode"], name
        assert _sorted([[d.num_tokens, d.num_reqs] for d in got.descriptors]) == want["descriptors"]
        assert got.graph_count == want["graphs"], name


def test_table_covers_the_required_configurations() -> None:
    cases = {
        (r["max_num_seqs"], r["num_speculative_tokens"], r["attention_backend"], r["gpu"])
        for r in ROWS
        if r["profile"] == "vllm-current"
    }
    for rk in ((1024, 5), (16, 5), (3, 3), (128, 3)):
        for backend in ("flash_attn", "flashinfer"):
            for gpu in ("H100", "B200"):
                assert (*rk, backend, gpu) in cases
    modes = {r["requested_mode"] for r in ROWS}
    assert {"PIECEWISE", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"} <= modes
    assert all(r["cite"] for r in ROWS)
    assert all("::" in c for r in ROWS for c in r["cite"])


def test_every_vllm_release_profile_has_rows() -> None:
    """Each profile a vLLM release maps to is pinned, at every required R/K/backend/GPU."""
    released = {profile_for_version("vllm", f"0.{minor}.0").name for minor in range(20, 34)}
    for name in released:
        cases = {
            (r["max_num_seqs"], r["num_speculative_tokens"], r["attention_backend"], r["gpu"])
            for r in ROWS
            if r["profile"] == name
        }
        assert len(cases) >= 16, name
        version = next(r["version"] for r in ROWS if r["profile"] == name)
        assert profile_for_version("vllm", version).name == name


# SGLang: batch-size lists checked against `cuda_graph_hook.generate_decode_cuda_graph_batch_sizes`
# and `generate_prefill_cuda_graph_batch_sizes` of the 0.5.23 wheel; GPU caps from
# `memory_hook._handle_gpu_memory_settings`; draft-extend allowlist from
# `eagle_worker_v2.EAGLEWorkerV2._capture_cuda_graphs`.
SPEC_48 = [*range(1, 9), *range(10, 33, 2), 40, 44, 48]


@pytest.mark.parametrize(
    ("profile", "gpu", "backend", "bs", "extend", "ladder"),
    [
        ("sglang-current", "H100", "flash_attn", SPEC_48, True, 58),  # chunked prefill 8192
        ("sglang-current", "B200", "flashinfer", SPEC_48, True, 74),  # 16384
        ("sglang-current", "L40S", "flash_attn", [*range(1, 9), *range(10, 33, 2)], True, 50),
        ("sglang-current", "L4", "triton", SPEC_48, True, 50),  # < 35 GB: max_bs 48, 4096 tokens
        ("sglang-0.5.15", "H100", "flash_attn", SPEC_48, False, 58),
        ("sglang-0.5.14", "H100", "flashinfer", SPEC_48, True, 0),
        ("sglang-0.5.11", "H100", "flashinfer", SPEC_48, False, 0),
    ],
)
def test_sglang_plan_matches_engine(
    profile: str, gpu: str, backend: str, bs: list[int], extend: bool, ladder: int
) -> None:
    opts = resolve_plan_options(
        PlanChoices(
            behavior=profile,
            gpu=gpu,
            attention_backend=backend,
            num_speculative_tokens=3,
        ),
        engine_batch_defaults=True,
    )
    plan = build_plan(opts)
    pairs = {p.phase: [[d.num_tokens, d.num_reqs] for d in p.descriptors] for p in plan.phases}
    assert pairs["target"] == [[b * 4, b] for b in bs]
    assert pairs["draft_decode"] == [[b, b] for b in bs]
    prefill = plan.phase("draft_prefill")
    full = [[d.num_tokens, d.num_reqs] for d in prefill.descriptors if d.num_reqs is not None]
    assert full == ([[b * 4, b] for b in bs] if extend else [])
    prompt = [d for p in plan.outside_step for d in p.descriptors]
    assert sum(1 for d in prompt if d.num_reqs is None) == ladder


def _inspect_json(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["inspect", "tiny-llama-eagle3", "--json", *args])
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize(
    ("engine", "gpu", "backend", "r", "k", "mode"),
    [
        ("vllm==0.33.0", "B200", "flashinfer", 16, 5, "FULL_AND_PIECEWISE"),
        ("vllm 0.32.0", "H100", "flash_attn", 3, 3, "PIECEWISE"),
        ("vllm==0.29.0", "H100", "flashinfer", 128, 3, "FULL_AND_PIECEWISE"),
        ("vllm==0.24.0", "B200", "flash_attn", 1024, 5, "FULL_AND_PIECEWISE"),
        ("vllm==0.20.2", "H100", "flashinfer", 16, 5, "FULL_AND_PIECEWISE"),
    ],
)
def test_inspect_json_shows_the_engine_plan(
    engine: str, gpu: str, backend: str, r: int, k: int, mode: str
) -> None:
    """`inspect --json --engine --gpu` carries, per phase, the mode and descriptors the
    release builds (the table row), and the profile it chose. The rows are MRV2's
    (`CudaGraphManager._init_candidates`): `--runner v2`, as VLLM_USE_V2_MODEL_RUNNER=1 does,
    with FlashInfer's TRT-LLM kernels loaded (`--trtllm-artifacts`), as the rows assume."""
    plan = _inspect_json(
        "--engine", engine, "--gpu", gpu, "--attention-backend", backend,
        "--max-num-seqs", str(r), "-K", str(k), "--mode", mode, "--runner", "v2",
        "--trtllm-artifacts",
    )["plan"]  # fmt: skip
    assert plan["runner"] == "mrv2"
    profile = profile_for_engine(engine).profile
    assert plan["behavior"] == plan["profile"]["name"] == profile.name
    assert plan["profile"]["releases"] == profile.versions.describe()
    row = next(
        x
        for x in ROWS
        if (x["profile"], x["gpu"], x["attention_backend"], x["requested_mode"])
        == (profile.name, gpu, backend, mode)
        and (x["max_num_seqs"], x["num_speculative_tokens"]) == (r, k)
    )
    hazards = {f.get("hazard") for f in plan["findings"]}
    assert ("mode-downgraded" in hazards) == (row["phases"]["target"]["mode"] != mode)
    for phase in plan["phases"]:
        want = row["phases"][phase["phase"]]
        assert phase["mode"] == want["mode"]
        assert _sorted(phase["descriptors"]) == want["descriptors"]
        assert phase["graph_count"] == want["graphs"]


@pytest.mark.parametrize("gpu", ["H100", "B200", "A100", "L40S"])
def test_inspect_shows_graph_memory_taken_out_of_the_kv_budget(gpu: str) -> None:
    """From 0.30 vLLM profiles graph memory before sizing the KV cache and subtracts it; 0.29
    captures after, outside gpu_memory_utilization. Same plan, so the budgets differ by it."""
    fixed = ("--gpu", gpu, "--max-num-seqs", "64", "-K", "3")
    old = _inspect_json("--engine", "vllm==0.29.0", *fixed)["memory"]
    new = _inspect_json("--engine", "vllm==0.30.0", *fixed)["memory"]
    assert not old["graph_memory_in_kv_budget"] and new["graph_memory_in_kv_budget"]
    assert new["graph_memory_bytes"] > 0
    assert old["kv_budget_bytes"] - new["kv_budget_bytes"] == new["graph_memory_bytes"]
    assert new["kv_budget_tokens"] < old["kv_budget_tokens"]


def _sglang_spec_bs(max_bs: int) -> list[int]:
    """`cuda_graph_hook.generate_decode_cuda_graph_batch_sizes` (0.5.23), speculative branch."""
    sizes = [*range(1, 9), *range(10, 33, 2), *range(40, 65, 4), *range(72, 257, 8)]
    sizes = [b for b in [*sizes, *range(272, max_bs + 1, 16)] if b <= max_bs]
    return sizes if max_bs in sizes else [*sizes, max_bs]


# `memory_hook._handle_gpu_memory_settings`: max_bs 256 on 60-160 GB GPUs (tp < 4), 512 above,
# capped by max_running_requests when the user sets it.
SGLANG_GPU_MAX_BS = {"H100": 256, "B200": 512}


@pytest.mark.parametrize("profile", ["sglang-current", "sglang-0.5.15", "sglang-0.5.4"])
@pytest.mark.parametrize("gpu", ["H100", "B200"])
@pytest.mark.parametrize("backend", ["flash_attn", "flashinfer"])
@pytest.mark.parametrize(("r", "k"), [(1024, 5), (16, 5), (3, 3), (128, 3)])
def test_sglang_plan_by_requests_and_steps(
    profile: str, gpu: str, backend: str, r: int, k: int
) -> None:
    """TARGET_VERIFY graphs at bs·(K+1) tokens and one draft graph per batch size (all steps
    inside), for the batch sizes the server captures with max_running_requests = R."""
    opts = resolve_plan_options(PlanChoices(
        behavior=profile, gpu=gpu, attention_backend=backend, max_num_seqs=r,
        num_speculative_tokens=k,
    ), engine_batch_defaults=True)  # fmt: skip
    plan = build_plan(opts)
    bs = _sglang_spec_bs(min(SGLANG_GPU_MAX_BS[gpu], r))
    pairs = {p.phase: [[d.num_tokens, d.num_reqs] for d in p.descriptors] for p in plan.phases}
    assert pairs["target"] == [[b * (k + 1), b] for b in bs]
    assert pairs["draft_decode"] == [[b, b] for b in bs]
    assert plan.phase("draft_decode").fused_steps == k - 1
    assert plan.phase("target").graph_count == len(bs)
