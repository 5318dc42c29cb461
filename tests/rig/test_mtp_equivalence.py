"""MTP drafts in the rig equal a dense plain-torch reference across a grow/shrink schedule.

The DeepSeek-style pair has an MLA target (latent KV cache, absorbed attention kernels in
both metadata styles) and its in-checkpoint MTP module(s); the reference recomputes every
request densely each step with torch SDPA (no paging, no kernels for attention).
"""

from __future__ import annotations

import pytest
import torch

from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.driver import run_workload
from eaglegraph.rig.model_setup import build_models
from eaglegraph.rig.options import PlanChoices, resolve_plan_options
from eaglegraph.rig.reference import ReferenceEngine
from eaglegraph.rig.step import Rig
from eaglegraph.rig.workload import Schedule

CASES = [
    ("tiny-deepseek-mtp", "flash_attn"),
    ("tiny-deepseek-mtp", "flashinfer"),
    ("tiny-qwen3-mtp", "flashinfer"),  # SpecForge Qwen3.5-style separate draft
]


@pytest.mark.parametrize(("preset", "backend"), CASES)
def test_mtp_rig_matches_reference(preset: str, backend: str, device: torch.device) -> None:
    pair = load_pair(materialize(preset))
    opts = resolve_plan_options(PlanChoices(
        max_num_seqs=4, num_speculative_tokens=3, attention_backend=backend,
        max_num_batched_tokens=64, mode="NONE",
    ))  # fmt: skip
    config = RigConfig(options=opts, device=device, max_model_len=256, dtype="float32")
    rig = Rig(pair, config)
    latent = preset.startswith("tiny-deepseek")  # MLA: one latent tensor per layer
    assert (rig.kv_caches[0][0] is rig.kv_caches[0][1]) == latent
    schedule = Schedule.grow_shrink(4, waves=1)
    got = run_workload(rig, schedule)
    reference = ReferenceEngine(build_models(pair, torch.float32, device), 3, 4, 256)
    want = run_workload(reference, schedule)
    sizes = [s.num_reqs for s in got.steps]
    assert max(sizes) == 4 and sizes[-1] < 4
    for a, b in zip(got.steps, want.steps, strict=True):
        assert a.accepted == b.accepted, f"step {a.step}"
        assert a.draft_tokens == b.draft_tokens, f"step {a.step}"
        assert a.next_tokens == b.next_tokens, f"step {a.step}"
    assert got.acceptance_rate is not None and 0 < got.acceptance_rate < 1
