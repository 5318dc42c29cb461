"""vLLM's V1 GPU model runner (MRV1) drafting in the rig: its strategy is picked by the plan's
runner, its drafter graphs are captured inside the target's PIECEWISE pass and serve every
draft pass, and its graph replays give the eager tokens.

Facts from vllm 0.22.0 `vllm/v1/worker/gpu_model_runner.py::GPUModelRunner._dummy_run`
(drafter.dummy_run inside the target's PIECEWISE capture) and
`vllm/v1/spec_decode/llm_base_proposer.py::SpecDecodeBaseProposer.initialize_cudagraph_keys`
(one PIECEWISE-or-NONE dispatcher for every draft pass).
"""

from __future__ import annotations

import functools

import pytest
import torch

from eaglegraph.known.hazards import hazard
from eaglegraph.known.profiles import PROFILES, get_profile
from eaglegraph.known.runners import ModelRunner
from eaglegraph.known.versions import parse_version
from eaglegraph.models.drafts.style import SpeculatorStyle
from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.driver import run_workload
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.options import PlanChoices, resolve_plan_options
from eaglegraph.rig.speculators import SPECULATORS, strategy_for
from eaglegraph.rig.speculators.mrv1_eagle import Mrv1EagleSpeculator
from eaglegraph.rig.speculators.sglang_eagle import SGLangEagleSpeculator
from eaglegraph.rig.step import Rig
from eaglegraph.rig.workload import Schedule

PRESET = "tiny-llama-eagle3"
SIZES = (4, 8, 16)
SCHEDULE = Schedule.grow_shrink(4, waves=1)  # shrinking batches replay padded graphs
OLD = "vllm-mrv1-pre-29845"


def _rig(mode: str, backend: str = "flash_attn", behavior: str | None = None,
         runner: ModelRunner | None = ModelRunner.MRV1, device: str = "cpu",
         preset: str = PRESET) -> Rig:  # fmt: skip
    opts = resolve_plan_options(PlanChoices(
        max_num_seqs=4, num_speculative_tokens=3, attention_backend=backend, mode=mode,
        max_num_batched_tokens=64, capture_sizes=SIZES, behavior=behavior,
        runner=None if behavior == OLD else runner,
    ))  # fmt: skip
    pair = load_pair(materialize(preset))
    config = RigConfig(opts, torch.device(device), dtype="float32", max_model_len=256)
    return Rig(pair, config)


@pytest.mark.fast
def test_the_plans_runner_picks_the_strategy() -> None:
    eagle = SpeculatorStyle.EAGLE
    assert strategy_for(eagle, "vllm", ModelRunner.MRV1) is Mrv1EagleSpeculator
    assert strategy_for(eagle, "vllm", "mrv1") is Mrv1EagleSpeculator
    assert strategy_for(eagle, "vllm", ModelRunner.MRV2) is SPECULATORS[eagle]
    assert strategy_for(eagle, "vllm") is SPECULATORS[eagle]
    assert strategy_for(eagle, "sglang") is SGLangEagleSpeculator
    # styles MRV1 does not draft its own way keep the reference strategy
    assert strategy_for(SpeculatorStyle.BLOCK, "vllm", "mrv1") is SPECULATORS[SpeculatorStyle.BLOCK]


@pytest.mark.fast
def test_old_mrv1_profile_covers_the_releases_before_the_fix() -> None:
    old = PROFILES[OLD]
    assert old.runner is ModelRunner.MRV1 and not old.draft_decode_excludes_rejected
    assert old.default_pool == "shared"  # MRV1's drafter graphs live in the global pool
    v13, v14 = parse_version("0.13.0"), parse_version("0.14.0")
    assert v13 is not None and v14 is not None
    assert v13 in old.versions and v14 not in old.versions
    assert get_profile("vllm-pre-39773").draft_decode_excludes_rejected
    h = hazard("draft-decode-rejected-kv")
    assert h.flag == "draft_decode_excludes_rejected" and h.fixed_by == "vllm#29845"
    assert h.affects(v13) is True and h.affects(v14) is False


def test_drafter_graphs_are_captured_in_the_target_piecewise_pass() -> None:
    rig = _rig("FULL_AND_PIECEWISE")
    assert isinstance(rig.speculator, Mrv1EagleSpeculator) and not rig.fused_draft_decode
    events, findings = rig.capture()
    assert findings == []
    order = [(e.phase, e.mode, e.num_tokens) for e in events]
    piecewise = [(p, m, n) for p, m, n in order if m == "PIECEWISE"]
    # largest first, each target piece followed by the drafter's of the same size
    assert piecewise == [
        (phase, "PIECEWISE", n) for n in (16, 8, 4) for phase in ("target", "draft_prefill")
    ]
    assert order[: len(piecewise)] == piecewise  # before the target's FULL pass
    assert {p for p, _, _ in order[len(piecewise) :]} == {"target"}
    assert "draft_decode" not in {p for p, _, _ in order}  # no capture of its own
    prefill, decode = rig.runners["draft_prefill"], rig.runners["draft_decode"]
    assert decode.captured == prefill.captured and len(decode.captured) == 3
    assert all(d.mode is Mode.PIECEWISE and d.num_reqs is None for d in decode.captured)


def test_without_a_piecewise_target_pass_the_drafter_stays_eager() -> None:
    rig = _rig("FULL")
    events, _ = rig.capture()
    assert {e.phase for e in events} == {"target"}
    result = run_workload(rig, SCHEDULE)
    drafts = {s.descriptors["draft_prefill"] for s in result.steps}
    assert drafts and all(d.startswith("NONE") for d in drafts)


@functools.cache
def _eager(backend: str, device: str, preset: str) -> tuple[object, ...]:
    rig = _rig("NONE", backend, device=device, preset=preset)
    return tuple(run_workload(rig, SCHEDULE).token_trace())


def _replays_eager(mode: str, backend: str, device: str = "cpu", preset: str = PRESET) -> None:
    rig = _rig(mode, backend, device=device, preset=preset)
    assert isinstance(rig.speculator, Mrv1EagleSpeculator)
    rig.capture()
    result = run_workload(rig, SCHEDULE)
    assert tuple(result.token_trace()) == _eager(backend, device, preset)
    decodes = [s.descriptors["draft_decode"] for s in result.steps]
    # the draft decodes replay the drafter's PIECEWISE graphs, padded in tokens only
    assert any(d.startswith("PIECEWISE") for d in decodes), decodes


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "backend", "preset"),
    [("FULL_AND_PIECEWISE", "flash_attn", PRESET), ("PIECEWISE", "flash_attn", PRESET),
     ("FULL_AND_PIECEWISE", "flashinfer", PRESET),
     # DeepSeek-style MTP drafts through the same proposer, its one module reused per step
     ("FULL_AND_PIECEWISE", "flash_attn", "tiny-deepseek-mtp")],
)  # fmt: skip
def test_emulated_replay_matches_eager(mode: str, backend: str, preset: str) -> None:
    _replays_eager(mode, backend, preset=preset)


@pytest.mark.cuda
@pytest.mark.parametrize(
    ("mode", "backend", "preset"),
    [
        (m, b, PRESET)
        for m in ("FULL_AND_PIECEWISE", "PIECEWISE")
        for b in ("flash_attn", "flashinfer")
    ]
    + [(m, "flash_attn", "tiny-deepseek-mtp") for m in ("FULL_AND_PIECEWISE", "PIECEWISE")],
)
def test_cuda_replay_matches_eager(mode: str, backend: str, preset: str) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    _replays_eager(mode, backend, "cuda", preset)
