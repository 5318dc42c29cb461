"""The rig's paged, padded, buffer-reusing step equals a dense plain-torch EAGLE reference.

Over a schedule in which requests join and leave (batches grow and shrink), the rig's draft
tokens and accepted counts must equal the reference's, step by step, for EAGLE-1 and EAGLE-3
and both metadata styles.
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
    ("tiny-llama-eagle1", "flash_attn"),
    ("tiny-llama-eagle1", "flashinfer"),
    ("tiny-llama-eagle3", "flash_attn"),
    ("tiny-qwen3-eagle3", "flashinfer"),
]


def _config(backend: str, device: torch.device, **kw: object) -> RigConfig:
    opts = resolve_plan_options(PlanChoices(
        max_num_seqs=4, num_speculative_tokens=3, attention_backend=backend,
        max_num_batched_tokens=64, mode="NONE",
    ))  # fmt: skip
    return RigConfig(options=opts, device=device, max_model_len=256, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("preset", "backend"), CASES)
def test_rig_matches_reference(preset: str, backend: str, device: torch.device) -> None:
    pair = load_pair(materialize(preset))
    config = _config(backend, device, dtype="float32")
    rig = Rig(pair, config)
    schedule = Schedule.grow_shrink(4, waves=1)
    got = run_workload(rig, schedule)
    reference = ReferenceEngine(
        build_models(pair, torch.float32, device), 3, 4, config.max_model_len
    )
    want = run_workload(reference, schedule)
    assert [s.num_reqs for s in got.steps] == [s.num_reqs for s in want.steps]
    sizes = [s.num_reqs for s in got.steps]
    assert max(sizes) == 4 and sizes[-1] < 4  # the batch grew and shrank
    for a, b in zip(got.steps, want.steps, strict=True):
        assert a.accepted == b.accepted, f"step {a.step}"
        assert a.draft_tokens == b.draft_tokens, f"step {a.step}"
        assert a.next_tokens == b.next_tokens, f"step {a.step}"
    assert got.acceptance_rate is not None and 0 < got.acceptance_rate < 1
