"""SGLang's draft extend in the rig, as the plan states it (issue 28).

The step's draft pass after verify replays `EAGLEDraftExtendCudaGraphRunner`'s FULL graphs, one
per batch size (sglang-current, flash_attn: the runner since 0.5.23,
`eagle_worker_v2.py::EAGLEWorkerV2._capture_cuda_graphs`), or, where the release had no extend
runner for the backend, the prompt prefill's breakable graphs (`model_runner.py::
ModelRunner.forward`, `is_extend(include_draft_extend_v2=True)`; sglang-0.5.15, flash_attn).
The prompt prefill's own graphs are reported beside the step and never captured by it.
"""

from __future__ import annotations

import pytest
import torch

from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.driver import run_workload
from eaglegraph.rig.options import PlanChoices, resolve_plan_options
from eaglegraph.rig.step import Rig
from eaglegraph.rig.workload import Schedule

SCHEDULE = Schedule.grow_shrink(4, waves=1)


def _rig(behavior: str, mode: str | None = None) -> Rig:
    opts = resolve_plan_options(
        PlanChoices(
            behavior=behavior, attention_backend="flash_attn", max_num_seqs=4,
            num_speculative_tokens=3, mode=mode, max_num_batched_tokens=32,
        )
    )  # fmt: skip
    pair = load_pair(materialize("tiny-llama-eagle3"))
    return Rig(pair, RigConfig(opts, torch.device("cpu"), dtype="float32", max_model_len=256))


@pytest.mark.parametrize(
    ("behavior", "extend_mode"), [("sglang-current", "FULL"), ("sglang-0.5.15", "BREAKABLE")]
)
def test_draft_extend_replays_its_graphs_and_gives_eager_tokens(
    behavior: str, extend_mode: str
) -> None:
    eager = run_workload(_rig(behavior, "NONE"), SCHEDULE).token_trace()
    rig = _rig(behavior)
    events, findings = rig.capture()
    extend = rig.plan.phase("draft_prefill")
    assert extend.mode.name == extend_mode
    captured = [e for e in events if e.phase == "draft_prefill"]
    assert len(captured) == extend.graph_count  # the step captures its own phase only
    assert [p.phase for p in rig.plan.outside_step] == ["draft_prompt_prefill"]
    result = run_workload(rig, SCHEDULE)
    used = {s.descriptors["draft_prefill"].split("(")[0] for s in result.steps}
    assert extend_mode in used  # uniform steps after verify run on the extend graphs
    assert result.token_trace() == eager
    assert not findings
