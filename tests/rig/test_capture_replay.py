"""Replay correctness: captured graphs give exactly the eager step's draft and accepted tokens.

CPU runs the emulated backend (every mode, each pool policy once); CUDA runs every mode ×
every pool policy with real graphs. Schedules grow and shrink batches, so padded replays of
graphs captured for larger batches are exercised.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import pytest
import torch

from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.results.capture import CaptureEvent
from eaglegraph.results.findings import Finding
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.driver import run_workload
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.options import PlanChoices, resolve_plan_options
from eaglegraph.rig.step import Rig
from eaglegraph.rig.workload import Schedule, WorkloadResult

MODES = ["FULL_AND_PIECEWISE", "FULL", "FULL_DECODE_ONLY", "PIECEWISE", "BREAKABLE"]
SCHEDULE = Schedule.grow_shrink(4, waves=1)


def _rig(
    preset: str, backend: str, mode: str, device: torch.device, behavior: str | None = None
) -> Rig:
    opts = resolve_plan_options(PlanChoices(
        max_num_seqs=4, num_speculative_tokens=3, attention_backend=backend, mode=mode,
        max_num_batched_tokens=64, capture_sizes=(4, 8, 16), behavior=behavior,
    ))  # fmt: skip
    return Rig(
        load_pair(materialize(preset)), RigConfig(opts, device, dtype="float32", max_model_len=256)
    )


@functools.cache
def _eager_trace(preset: str, backend: str, device: str) -> tuple[object, ...]:
    rig = _rig(preset, backend, "NONE", torch.device(device))
    return tuple(run_workload(rig, SCHEDULE).token_trace())


class Replay(NamedTuple):
    """A rig captured under a pool policy and run through SCHEDULE (only read after)."""

    rig: Rig
    events: list[CaptureEvent]
    findings: list[Finding]
    result: WorkloadResult


def _replay(
    preset: str, backend: str, mode: str, pool: str, device: str, behavior: str | None = None
) -> Replay:
    rig = _rig(preset, backend, mode, torch.device(device), behavior)
    events, findings = rig.capture(pool)
    return Replay(rig, events, findings, run_workload(rig, SCHEDULE))


# On the CPU a replay is run once per process: the FULL_AND_PIECEWISE mode test and the fused
# draft decode test read the same rig (vLLM's current fused decode is the default profile's).
# CUDA replays are not kept: their graphs would hold device memory for the rest of the session.
_cpu_replay = functools.cache(_replay)


def _check(preset: str, backend: str, mode: str, pool: str, device: torch.device) -> None:
    run = _replay if device.type == "cuda" else _cpu_replay
    events, findings, result = run(preset, backend, mode, pool, device.type)[1:]
    assert events and not findings
    assert all(e.backend == ("cuda" if device.type == "cuda" else "emulated") for e in events)
    used = {d.split("(")[0] for s in result.steps for d in s.descriptors.values()}
    assert used - {"NONE"}, "no step replayed a graph"
    assert tuple(result.token_trace()) == _eager_trace(preset, backend, device.type)


@pytest.mark.parametrize("mode", MODES)
def test_emulated_replay_matches_eager(mode: str) -> None:
    _check("tiny-llama-eagle1", "flash_attn", mode, "shared", torch.device("cpu"))


@pytest.mark.parametrize("pool", ["dedicated", "per-graph"])
def test_emulated_pool_policies(pool: str) -> None:
    _check("tiny-qwen3-eagle3", "flashinfer", "FULL_AND_PIECEWISE", pool, torch.device("cpu"))


def test_capture_order_and_pools_follow_vllm() -> None:
    rig = _rig(
        "tiny-llama-eagle3", "flash_attn", "FULL_AND_PIECEWISE", torch.device("cpu"), "vllm-0.22"
    )
    events, _ = rig.capture()  # vllm-0.22 → dedicated EAGLE pool
    phases = [e.phase for e in events]
    assert phases == sorted(phases, key=["target", "draft_prefill", "draft_decode"].index)
    for phase in ("target", "draft_prefill"):
        modes = [e.mode for e in events if e.phase == phase]
        assert modes.index("FULL") > modes.index("PIECEWISE")
        pw = [e.num_tokens for e in events if e.phase == phase and e.mode == "PIECEWISE"]
        assert pw == sorted(pw, reverse=True)
    eagle_full = {e.pool for e in events if e.phase != "target" and e.mode == "FULL"}
    target = {e.pool for e in events if e.phase == "target"}
    assert len(eagle_full) == 1 and eagle_full.isdisjoint(target)
    assert rig.plan.phase("draft_decode").mode is Mode.FULL_DECODE_ONLY


@pytest.mark.cuda
@pytest.mark.parametrize("pool", ["shared", "dedicated", "per-graph"])
@pytest.mark.parametrize("mode", MODES)
def test_cuda_replay_matches_eager(mode: str, pool: str) -> None:
    _check("tiny-llama-eagle3", "flash_attn", mode, pool, torch.device("cuda"))


@pytest.mark.cuda
@pytest.mark.parametrize("mode", ["FULL_AND_PIECEWISE", "PIECEWISE", "BREAKABLE"])
def test_cuda_replay_flashinfer(mode: str) -> None:
    _check("tiny-qwen3-eagle3", "flashinfer", mode, "shared", torch.device("cuda"))


def test_fused_draft_decode_graph_gives_the_per_step_tokens() -> None:
    """vLLM ≥ 0.28 records the K−1 draft decodes in one graph (FlashAttention metadata updated
    in place); 0.26 replays a one-step graph K−1 times. Both must give the eager tokens."""
    cpu = torch.device("cpu")
    # the fused rig is the default profile's FULL_AND_PIECEWISE one: its replay is shared with
    # test_emulated_replay_matches_eager[FULL_AND_PIECEWISE], and its run's step labels are read
    # here (they used to come from a second run of the same captured rig)
    fused = _cpu_replay("tiny-llama-eagle1", "flash_attn", "FULL_AND_PIECEWISE", "shared", "cpu")
    per_step = _replay(
        "tiny-llama-eagle1", "flash_attn", "FULL_AND_PIECEWISE", "shared", "cpu", "vllm-0.26"
    )
    assert fused.rig.fused_draft_decode and fused.rig.plan.phase("draft_decode").fused_steps == 2
    assert not per_step.rig.fused_draft_decode
    eager = _eager_trace("tiny-llama-eagle1", "flash_attn", "cpu")
    for rig, events, findings, result in (fused, per_step):
        assert not findings
        decode_graphs = [e for e in events if e.phase == "draft_decode"]
        assert len(decode_graphs) == rig.plan.phase("draft_decode").graph_count
        assert tuple(result.token_trace()) == eager
    labels = [s.descriptors.get("draft_decode", "") for s in fused.result.steps]
    assert any(label.startswith("FULL") and "fused" in label for label in labels)
    flashinfer = _rig("tiny-llama-eagle1", "flashinfer", "FULL_AND_PIECEWISE", cpu)
    assert not flashinfer.fused_draft_decode  # XQA on SM90 updates no metadata in place
