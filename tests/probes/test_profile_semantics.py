"""Every profile's own semantics are sound: graph replays give the eager tokens and the probe is
clean. Only the seed-bug profiles (kept to reproduce fixed bugs) must show findings; that is
tested in test_probe.py. On the CPU, one vLLM profile per class replays against eager (the
probe of the newest profiles runs in test_probe.py); on CUDA every profile replays and probes.

Profiles that build the same plan for this configuration and agree on every flag the rig and
the probe read at run time behave identically, so one representative per class runs; a guard
below fails when a flag starts being read at run time without being listed here.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
import torch

from eaglegraph.known.hazards import HAZARDS
from eaglegraph.known.profiles import FLAGS, PROFILES, Profile
from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.probes.probing import probe
from eaglegraph.probes.spec import resolve_run
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.driver import run_workload
from eaglegraph.rig.options import PlanChoices, resolve_plan_options
from eaglegraph.rig.plan import build_plan
from eaglegraph.rig.step import Rig
from eaglegraph.rig.workload import Schedule

SEED_BUGS = {"vllm-pre-39773", "sglang-pre-10892", "vllm-mrv1-pre-29845"}
PRESET = "tiny-llama-eagle3"  # an EAGLE pair: the DFlash-only flag does not apply
PLAN = {"max_num_seqs": 4, "num_speculative_tokens": 3, "max_num_batched_tokens": 64}
SIZES = (4, 8, 16)
SCHEDULE = Schedule.grow_shrink(3, waves=1)  # 3 requests pad into the 4-request graphs
# Flags read outside the plan builders (whose effect the plan signature already carries).
RUNTIME_FLAGS = (
    "dedicated_eagle_pool",
    "reuse_target_attn_state",
    "fresh_prefill_capture_metadata",
    "reset_positions_on_padded_replay",
    "pad_last_token_indices",
    "draft_decode_mode_clamp",
    "per_mode_dispatch",
    "draft_decode_excludes_rejected",
)
NOT_FOR_EAGLE = ("dflash_padded_query_buffers",)
MEMORY_ONLY = ("graph_memory_profiling",)  # the KV-budget estimate, never a replay
PLAN_MODULES = {
    "plan.py",
    "vllm_plan.py",
    "vllm_sizing.py",
    "sglang_plan.py",
    "mode_resolution.py",
    "capture_sizes.py",
}
# the DP agreement programs read the DP flags through their `DpRule`; a single-rank run never
# meets them
DP_MODULES = {"dp_vllm.py", "dp_sglang.py"}
PACKAGE = Path(__file__).resolve().parents[2] / "eaglegraph"


def _mode(profile: Profile) -> str:
    return "FULL_AND_PIECEWISE" if profile.framework == "vllm" else "FULL"


def _signature(profile: Profile, backend: str) -> tuple:  # type: ignore[type-arg]
    opts = resolve_plan_options(PlanChoices(
        behavior=profile.name, attention_backend=backend, mode=_mode(profile),
        capture_sizes=SIZES, **PLAN,
    ))  # fmt: skip
    plan = build_plan(opts)
    phases = tuple(
        (p.phase, p.mode, tuple(p.descriptors), p.fused_steps, p.per_mode_dispatch)
        for p in plan.phases
    )
    return profile.framework, phases, tuple(getattr(profile, f) for f in RUNTIME_FLAGS)


def _representatives(backend: str) -> list[str]:
    classes: dict[tuple, list[str]] = {}  # type: ignore[type-arg]
    for name, prof in PROFILES.items():
        if name not in SEED_BUGS:
            classes.setdefault(_signature(prof, backend), []).append(name)
    return [names[-1] for names in classes.values()]  # the newest of each class


def test_runtime_flags_cover_what_the_rig_reads() -> None:
    read = set()
    for path in PACKAGE.rglob("*.py"):
        if path.parent.name == "known" or path.name in PLAN_MODULES | DP_MODULES:
            continue
        text = path.read_text()
        read |= {
            f for f in FLAGS if re.search(rf"(?:beh|behavior|profile)\.{f}\b|[\"']{f}[\"']", text)
        }
    known = {*RUNTIME_FLAGS, *NOT_FOR_EAGLE, *MEMORY_ONLY}
    assert read <= known, read - known


def test_classes_cover_every_release_profile() -> None:
    """The dedup keeps runs short without dropping a release: each class holds some profile
    and every non-seed profile is in one."""
    for backend in ("flash_attn", "flashinfer"):
        reps = _representatives(backend)
        assert len(reps) >= 5
        assert not SEED_BUGS & set(reps)


def _rig(behavior: str | None, backend: str, mode: str, device: str = "cpu") -> Rig:
    opts = resolve_plan_options(
        PlanChoices(
            behavior=behavior, attention_backend=backend, mode=mode, capture_sizes=SIZES, **PLAN
        )
    )
    pair = load_pair(materialize(PRESET))
    return Rig(pair, RigConfig(opts, torch.device(device), dtype="float32", max_model_len=256))


@functools.cache
def _eager(framework: str, backend: str, device: str = "cpu") -> tuple:  # type: ignore[type-arg]
    """The eager tokens under the engine's newest semantics: the truth every release's graph
    replays must reproduce."""
    current = next(p.name for p in PROFILES.values() if p.framework == framework and
                   p.versions.until is None)  # fmt: skip
    rig = _rig(current, backend, "NONE", device)
    return tuple(run_workload(rig, SCHEDULE).token_trace())


def _check_replay(behavior: str, device: str) -> None:
    profile = PROFILES[behavior]
    rig = _rig(behavior, "flash_attn", _mode(profile), device)
    events, findings = rig.capture(profile.default_pool)
    assert events and not findings
    assert all(e.backend == ("cuda" if device == "cuda" else "emulated") for e in events)
    result = run_workload(rig, SCHEDULE)
    used = {d.split("(")[0] for s in result.steps for d in s.descriptors.values()}
    assert used - {"NONE"}, "no step replayed a graph"
    assert tuple(result.token_trace()) == _eager(profile.framework, "flash_attn", device)


def _check_probe(behavior: str, backend: str, device: str) -> None:
    profile = PROFILES[behavior]
    plan = {**PLAN, "behavior": behavior, "attention_backend": backend, "capture_sizes": SIZES}
    # uncompiled, as `eaglegraph probe` runs by default: stale reads do not depend on it
    spec = resolve_run(PRESET, plan=plan, device=device, max_model_len=256, compile_model=False)
    run = probe(spec, modes=[_mode(profile)], batches=[3], isolate=False, timeout=600)
    assert [c.status for c in run.cases] == ["ok"], [c.error for c in run.cases]
    assert run.findings == [], [f.message for f in run.findings]
    replayed = [d for d in run.cases[0].descriptors.values() if not d.startswith("NONE")]
    assert replayed, "the probe replayed no graph"


@pytest.mark.parametrize(
    "behavior", [b for b in _representatives("flash_attn") if PROFILES[b].framework == "vllm"]
)
def test_replay_matches_eager_under_the_profile(behavior: str) -> None:
    _check_replay(behavior, "cpu")


# a later release that still predates one of the seed bugs' fixes carries the same bug (SGLang
# 0.5.3 is before #10892): its probe finds it, as under the seed profile
SEED_FLAGS = {
    h.flag
    for h in HAZARDS.values()
    if h.flag and any(h.fixed_by in PROFILES[b].refs for b in SEED_BUGS)
}
CURRENT_SEMANTICS = [
    name
    for name, prof in PROFILES.items()
    if name not in SEED_BUGS and all(getattr(prof, f, True) for f in SEED_FLAGS)
]


def test_current_semantics_leave_out_releases_before_a_seed_fix() -> None:
    assert {"reset_positions_on_padded_replay", "draft_decode_excludes_rejected"} <= SEED_FLAGS
    assert "sglang-0.5.3" not in CURRENT_SEMANTICS  # before sglang#10892 (v0.5.4)
    assert {"sglang-current", "vllm-current", "sglang-0.5.4"} <= set(CURRENT_SEMANTICS)


@pytest.mark.cuda
@pytest.mark.parametrize("behavior", CURRENT_SEMANTICS)
def test_cuda_replay_matches_eager_under_every_profile(behavior: str) -> None:
    _check_replay(behavior, "cuda")


@pytest.mark.cuda
@pytest.mark.parametrize("backend", ["flash_attn", "flashinfer"])
@pytest.mark.parametrize("behavior", CURRENT_SEMANTICS)
def test_cuda_probe_is_clean_under_every_profile(behavior: str, backend: str) -> None:
    _check_probe(behavior, backend, "cuda")
