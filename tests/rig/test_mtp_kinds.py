"""MTP and DFlash through every command path: replayed graphs give the eager step's tokens
under the profiles that run them, the probe is clean on current profiles, capture saves a
run that `report` re-renders, and memdiff refuses CPU with its one line.

CPU runs the emulated backend on a sample of (preset, profile, mode, pool); CUDA runs every
mode of each profile on every preset (vLLM's and SGLang's shared pool) and the other pool
policies (per-graph; vllm-0.22's dedicated EAGLE pool) on the in-checkpoint MTP preset.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.probes.probing import SGLANG_MODES, VLLM_MODES
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.driver import run_workload
from eaglegraph.rig.options import PlanChoices, resolve_plan_options
from eaglegraph.rig.step import Rig
from eaglegraph.rig.workload import Schedule

SCHEDULE = Schedule.grow_shrink(4, waves=1)
PRESETS = ["tiny-deepseek-mtp", "tiny-deepseek-mtp2", "tiny-qwen3-mtp", "tiny-qwen3-dflash"]


def _k(preset: str, behavior: str) -> int:
    """K=3, except two modules under vLLM: it refuses a K above the module count that is no
    multiple of it (SGLang runs the first module only, any K)."""
    return 2 if preset == "tiny-deepseek-mtp2" and behavior.startswith("vllm") else 3


def _speculator(preset: str, behavior: str) -> str:
    """vLLM runs both modules over each window; SGLang's NextN path the first, step by step."""
    if preset == "tiny-deepseek-mtp2":
        return "eagle" if behavior.startswith("sglang") else "window"
    return "block" if "dflash" in preset else "eagle"


def _rig(preset: str, behavior: str, mode: str, device: torch.device) -> Rig:
    sglang = behavior.startswith("sglang")
    opts = resolve_plan_options(PlanChoices(
        max_num_seqs=4, num_speculative_tokens=_k(preset, behavior), mode=mode,
        max_num_batched_tokens=64,
        capture_sizes=(4, 8, 16), behavior=behavior, framework="sglang" if sglang else "vllm",
        attention_backend="flashinfer" if sglang else "flash_attn",
    ))  # fmt: skip
    config = RigConfig(opts, device, dtype="float32", max_model_len=256)
    return Rig(load_pair(materialize(preset)), config)


@functools.cache
def _eager(preset: str, behavior: str, device: str) -> tuple:  # type: ignore[type-arg]
    rig = _rig(preset, behavior, "NONE", torch.device(device))
    return tuple(run_workload(rig, SCHEDULE).token_trace())


def _check(preset: str, behavior: str, mode: str, pool: str, device: torch.device) -> None:
    rig = _rig(preset, behavior, mode, device)
    assert rig.speculator.style == _speculator(preset, behavior)
    events, findings = rig.capture(pool)
    assert events and not findings
    assert all(e.backend == ("cuda" if device.type == "cuda" else "emulated") for e in events)
    result = run_workload(rig, SCHEDULE)
    used = {d.split("(")[0] for s in result.steps for d in s.descriptors.values()}
    assert used - {"NONE"}, "no step replayed a graph"
    assert tuple(result.token_trace()) == _eager(preset, behavior, device.type)
    assert result.acceptance_rate is not None and 0 < result.acceptance_rate < 1


# (mtp2 under vLLM: test_mtp_multi_module; DFlash under SGLang: test_dflash's probe)
CPU_CASES = [
    ("tiny-deepseek-mtp", "vllm-current", "FULL_AND_PIECEWISE", "shared"),
    ("tiny-deepseek-mtp", "sglang-current", "BREAKABLE", "shared"),
    ("tiny-deepseek-mtp2", "sglang-current", "FULL", "shared"),  # module 0 only (NextN)
    ("tiny-qwen3-mtp", "vllm-current", "PIECEWISE", "per-graph"),
]


@pytest.mark.parametrize(("preset", "behavior", "mode", "pool"), CPU_CASES)
def test_emulated_replay_matches_eager(preset: str, behavior: str, mode: str, pool: str) -> None:
    _check(preset, behavior, mode, pool, torch.device("cpu"))


def _cuda_cases() -> list[tuple[str, str, str, str]]:
    cases = []
    for preset in PRESETS:  # every mode of each profile; the pool policies on one preset
        cases += [(preset, "vllm-current", m, "shared") for m in VLLM_MODES if m != "NONE"]
        cases += [(preset, "sglang-current", m, "shared") for m in SGLANG_MODES if m != "NONE"]
    for mode in ("FULL_AND_PIECEWISE", "PIECEWISE"):
        cases.append(("tiny-deepseek-mtp", "vllm-current", mode, "per-graph"))
    cases.append(("tiny-deepseek-mtp", "vllm-0.22", "FULL_AND_PIECEWISE", "dedicated"))
    return cases


@pytest.mark.cuda
@pytest.mark.parametrize(("preset", "behavior", "mode", "pool"), _cuda_cases())
def test_cuda_replay_matches_eager(preset: str, behavior: str, mode: str, pool: str) -> None:
    _check(preset, behavior, mode, pool, torch.device("cuda"))


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout


@pytest.mark.parametrize(
    ("preset", "behavior", "mode"),
    [
        ("tiny-deepseek-mtp", "vllm-current", "FULL_AND_PIECEWISE"),
        # two modules: SGLang's NextN path runs module 0 for K=3 steps; vLLM's window
        # speculator re-prefills rejected slots of module 1 (K=2)
        ("tiny-deepseek-mtp2", "sglang-current", "FULL"),
        ("tiny-deepseek-mtp2", "vllm-current", "FULL_AND_PIECEWISE"),
    ],  # tiny-qwen3-mtp and BREAKABLE: every mode in gpu-check's probe matrix (CPU is scarce)
)
def test_probe_is_clean_on_current_profiles(preset: str, behavior: str, mode: str) -> None:
    code, out = _invoke(
        "probe", preset, "--behavior", behavior, "--max-num-seqs", "4",
        "-K", str(_k(preset, behavior)),
        "--capture-sizes", "4,8,16", "--mode", mode, "--batches", "3", "--device", "cpu",
        "--max-model-len", "256", "--no-isolation", "--json", "--fail-on", "never",
    )  # fmt: skip
    assert code == 0, out
    doc = json.loads(out)
    assert doc["cases"] and all(c["status"] == "ok" for c in doc["cases"]), doc["cases"]
    assert not doc["findings"]


@pytest.mark.parametrize("preset", ["tiny-deepseek-mtp2", "tiny-qwen3-dflash"])
def test_capture_saves_a_run_report_rerenders(preset: str, tmp_path: Path) -> None:
    saved = tmp_path / "run.json"
    code, out = _invoke(
        "capture", preset, "--max-num-seqs", "4", "-K", str(_k(preset, "vllm")),
        "--capture-sizes", "4,8",
        "--device", "cpu", "--max-model-len", "256", "--save", str(saved), "--json",
    )  # fmt: skip
    assert code == 0, out
    doc = json.loads(saved.read_text())
    assert doc["config"]["draft_kind"] == ("mtp" if "mtp" in preset else "dflash")
    phases = {e["phase"] for e in doc["events"]}
    assert phases == {"target", "draft_prefill"}  # window/block speculators: no decode graphs
    code, again = _invoke("report", str(saved), "--json")
    assert code == 0 and json.loads(again)["events"] == doc["events"]


@pytest.mark.parametrize("command", ["capture", "probe"])
def test_vllm_refuses_k_not_a_multiple_of_the_modules(command: str) -> None:
    result = CliRunner().invoke(cli, [command, "tiny-deepseek-mtp2", "-K", "3", "--device", "cpu"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "vLLM refuses num_speculative_tokens 3 with 2 MTP modules" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_sglang_runs_the_first_module_only() -> None:
    rig = _rig("tiny-deepseek-mtp2", "sglang-current", "NONE", torch.device("cpu"))
    assert rig.models.draft.num_modules == 1 and rig.speculator.style == "eagle"
    assert len(rig.kv_caches) == rig.models.target.num_layers + 1
    assert [f.id for f in rig.plan.findings] == ["mtp-modules-unused"]


def test_memdiff_refuses_cpu_in_one_line() -> None:
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    result = CliRunner().invoke(cli, ["memdiff", "tiny-deepseek-mtp", "--device", "cpu"])
    assert result.exit_code == 3 and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.cuda
@pytest.mark.parametrize("preset", ["tiny-deepseek-mtp", "tiny-qwen3-dflash"])
def test_cuda_memdiff_same_tokens_both_pools(preset: str) -> None:
    code, out = _invoke(
        "memdiff", preset, "--max-num-seqs", "4", "-K", "3", "--capture-sizes", "4,8,16",
        "--pool", "shared", "--against", "dedicated", "--json",
    )  # fmt: skip
    assert code == 0, out
    doc = json.loads(out)
    assert doc["tokens_identical"] is True
