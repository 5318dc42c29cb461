"""Multi-module MTP: every module over each request's window, all K steps in one graph.

The rig (window kernels with re-prefill of slots rejected drafts left stale, one speculator
manager with decode length K+1) must equal the dense module-by-module reference across a
grow/shrink schedule, eagerly and through captured (emulated) graphs. K equals the number of
modules: with K > modules vLLM reuses a module within a step and overwrites its own KV, which
the dense reference does not model.
"""

from __future__ import annotations

import pytest
import torch

from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.driver import run_workload
from eaglegraph.rig.model_setup import build_models
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.mtp_plan import multi_module_mode
from eaglegraph.rig.options import PlanChoices, resolve_plan_options
from eaglegraph.rig.reference import ReferenceEngine
from eaglegraph.rig.step import Rig
from eaglegraph.rig.workload import Schedule

PRESET, K = "tiny-deepseek-mtp2", 2
SCHEDULE = Schedule.grow_shrink(4, waves=1)


def _rig(backend: str, mode: str, device: torch.device) -> Rig:
    opts = resolve_plan_options(PlanChoices(
        max_num_seqs=4, num_speculative_tokens=K, attention_backend=backend, mode=mode,
        max_num_batched_tokens=64, capture_sizes=(3, 6, 12),
    ))  # fmt: skip
    config = RigConfig(options=opts, device=device, max_model_len=256, dtype="float32")
    return Rig(load_pair(materialize(PRESET)), config)


def _reference(device: torch.device) -> list[tuple[list[int], list[int], list[list[int]]]]:
    pair = load_pair(materialize(PRESET))
    ref = ReferenceEngine(build_models(pair, torch.float32, device), K, 4, 256)
    return [(s.next_tokens, s.accepted, s.draft_tokens) for s in run_workload(ref, SCHEDULE).steps]


@pytest.mark.parametrize(
    ("backend", "mode"), [("flashinfer", "NONE"), ("flash_attn", "FULL_AND_PIECEWISE")]
)
def test_multi_module_matches_dense_reference(
    backend: str, mode: str, device: torch.device
) -> None:
    rig = _rig(backend, mode, device)
    phases = {p.phase: p for p in rig.plan.phases}
    assert phases["draft_decode"].descriptors == []  # module steps live in the draft graph
    if mode != "NONE":
        assert phases["draft_prefill"].mode is Mode.FULL_DECODE_ONLY
        assert {d.uniform_token_count for d in phases["draft_prefill"].descriptors} == {K + 1}
        events, findings = rig.capture("shared")
        assert events and not findings
    result = run_workload(rig, SCHEDULE)
    got = [(s.next_tokens, s.accepted, s.draft_tokens) for s in result.steps]
    assert got == _reference(device)
    if mode != "NONE":
        used = {s.descriptors["draft_prefill"].split("(")[0] for s in result.steps}
        assert "FULL" in used  # decode-only batches replayed the speculator graph
    assert result.acceptance_rate is not None and 0 < result.acceptance_rate < 1


def test_multi_module_mode_drops_piecewise() -> None:
    assert multi_module_mode(Mode.FULL_AND_PIECEWISE) is Mode.FULL_DECODE_ONLY
    assert multi_module_mode(Mode.PIECEWISE) is Mode.NONE
    assert multi_module_mode(Mode.BREAKABLE) is Mode.BREAKABLE
    assert multi_module_mode(Mode.FULL) is Mode.FULL
