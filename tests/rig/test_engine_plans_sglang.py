"""SGLang tree drafting (EAGLE topk > 1) in the plan, pinned to the 0.5.23 wheel.

Per request, `speculative/spec_utils.py::resolve_num_tokens_per_req` gives the draft decode
`speculative_eagle_topk` tokens (`EAGLEDraftCudaGraphRunner.__init__`: captured_req_width), the
draft extend and target verify `speculative_num_draft_tokens`
(`EAGLEDraftExtendCudaGraphRunner.__init__`); the batch sizes are
`base_cuda_graph_runner.py::get_batch_sizes_to_capture` over
`cuda_graph_hook.py::generate_decode_cuda_graph_batch_sizes` (the speculative list), capped by
max_running_requests. Topk 1 keeps num_draft_tokens = num_steps + 1
(`speculative_hook.py::_handle_eagle_family`).
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.errors import BadInput
from eaglegraph.rig.options import PlanChoices, resolve_plan_options
from eaglegraph.rig.plan import build_plan

pytestmark = pytest.mark.fast


def _pairs(topk: int | None, tokens: int | None, k: int = 3, r: int = 4) -> dict[str, list]:
    opts = resolve_plan_options(
        PlanChoices(
            framework="sglang", gpu="H100", attention_backend="fa3", max_num_seqs=r,
            num_speculative_tokens=k, eagle_topk=topk, num_draft_tokens=tokens,
        )
    )  # fmt: skip
    plan = build_plan(opts)
    return {
        p.phase: [[d.num_tokens, d.num_reqs] for d in p.descriptors if d.num_reqs is not None]
        for p in plan.phases
    }


def test_tree_widths_per_phase() -> None:
    got = _pairs(topk=4, tokens=8)
    assert got["target"] == [[8, 1], [16, 2], [24, 3], [32, 4]]  # num_draft_tokens per request
    assert got["draft_decode"] == [[4, 1], [8, 2], [12, 3], [16, 4]]  # topk per request
    assert got["draft_prefill"] == [[8, 1], [16, 2], [24, 3], [32, 4]]  # draft extend (FA)


def test_a_chain_is_num_steps_plus_one() -> None:
    got = _pairs(topk=1, tokens=None)
    assert got["target"] == [[4, 1], [8, 2], [12, 3], [16, 4]]
    assert got["draft_decode"] == [[1, 1], [2, 2], [3, 3], [4, 4]]


@pytest.mark.parametrize(
    ("choices", "message"),
    [
        (dict(framework="sglang", eagle_topk=4), "needs --speculative-num-draft-tokens"),
        (dict(framework="sglang", eagle_topk=2, num_draft_tokens=9), "exceeds the tree's 7"),
        (dict(framework="vllm", eagle_topk=2, num_draft_tokens=4), "is SGLang's"),
    ],
)
def test_bad_trees_are_refused(choices: dict, message: str) -> None:
    with pytest.raises(BadInput, match=message):
        resolve_plan_options(PlanChoices(num_speculative_tokens=3, **choices))


def test_rig_commands_refuse_trees_in_one_line() -> None:
    args = ["--framework", "sglang", "--speculative-eagle-topk", "4"]
    args += ["--speculative-num-draft-tokens", "8"]
    result = CliRunner().invoke(cli, ["probe", "tiny-llama-eagle3", *args])
    assert result.exit_code == 2
    assert "planned by `eaglegraph inspect`" in result.stderr
