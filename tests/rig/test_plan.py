"""The capture plan follows vLLM MRV2 (and SGLang) semantics from the research notes."""

from __future__ import annotations

import pytest

from eaglegraph.cli.options import pop_plan_kwargs
from eaglegraph.errors import BadInput
from eaglegraph.rig.capture_sizes import (
    round_for_spec_decode,
    sglang_batch_sizes,
    vllm_default_sizes,
)
from eaglegraph.rig.descriptors import (
    BatchDescriptor,
    Dispatcher,
    build_descriptors,
    uniform_token_count,
)
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.options import PlanChoices, resolve_plan_options
from eaglegraph.rig.plan import build_plan


def test_vllm_default_sizes_and_rounding_match_research_examples() -> None:
    # research vllm-mrv2.md §7: K=3, max_num_seqs 128 → 51 sizes → 49 after rounding to 4
    sizes = vllm_default_sizes(128, 3, 8192)
    assert len(sizes) == 51 and sizes[:4] == [1, 2, 4, 8] and sizes[-1] == 512
    rounded = round_for_spec_decode(sizes, 4)
    assert len(rounded) == 49 and rounded[:4] == [4, 8, 16, 24] and rounded[-1] == 512
    # K=5, max_num_seqs 256 → 48 sizes: 6, 12, 18, 24, 36, 42, 48, 60, …, 498
    rounded = round_for_spec_decode(vllm_default_sizes(256, 5, 8192), 6)
    assert (
        len(rounded) == 48 and rounded[:8] == [6, 12, 18, 24, 36, 42, 48, 60] and rounded[-1] == 498
    )


def test_rounding_edge_cases() -> None:
    assert round_for_spec_decode([1, 2, 4], 4) == [4]
    with pytest.raises(BadInput):
        round_for_spec_decode([1, 2], 6)
    assert round_for_spec_decode([3, 5], 1) == [3, 5]


def test_small_max_num_seqs_caps_sizes() -> None:
    sizes = vllm_default_sizes(4, 3, 8192)  # max = min(4*4*2, 512) = 32
    assert sizes == [1, 2, 4, 8, 16, 24, 32]
    assert round_for_spec_decode(sizes, 4) == [4, 8, 16, 24, 32]


def test_mode_semantics() -> None:
    assert Mode.FULL_AND_PIECEWISE.decode_mode() is Mode.FULL
    assert Mode.FULL_AND_PIECEWISE.mixed_mode() is Mode.PIECEWISE
    assert Mode.FULL_DECODE_ONLY.mixed_mode() is Mode.NONE
    assert Mode.PIECEWISE.decode_mode() is Mode.PIECEWISE
    assert not Mode.FULL.separate_routine() and Mode.FULL_DECODE_ONLY.separate_routine()
    assert Mode.parse("full_and_piecewise") is Mode.FULL_AND_PIECEWISE
    assert Mode.parse("CUDAGraphMode.PIECEWISE") is Mode.PIECEWISE
    assert not Mode.NONE and Mode.BREAKABLE.is_segmented()
    with pytest.raises(BadInput):
        Mode.parse("fast")


def test_descriptors_piecewise_never_pad_requests() -> None:
    by_size = build_descriptors(
        Mode.FULL_AND_PIECEWISE, [4, 8, 16], max_num_reqs=2, decode_query_len=4
    )
    assert by_size[4] == [
        BatchDescriptor(Mode.FULL, 4, 1, 4),
        BatchDescriptor(Mode.PIECEWISE, 4, None),
    ]
    assert by_size[16] == [BatchDescriptor(Mode.PIECEWISE, 16, None)]  # 16 > 2*4: no decode desc
    full = build_descriptors(Mode.FULL, [4, 8], max_num_reqs=3, decode_query_len=4)
    assert full[8] == [BatchDescriptor(Mode.FULL, 8, 3)]


def test_dispatch_pads_to_next_size_and_prefers_decode() -> None:
    d = Dispatcher(build_descriptors(Mode.FULL_AND_PIECEWISE, [4, 8, 16], 4, 4))
    assert d.dispatch(3, 12, 4) == BatchDescriptor(Mode.FULL, 16, 4, 4)
    assert d.dispatch(2, 7, None) == BatchDescriptor(Mode.PIECEWISE, 8, None)
    assert d.dispatch(9, 17, None).mode is Mode.NONE  # above the largest size
    assert uniform_token_count(3, 12, 4) == 4 and uniform_token_count(3, 11, 4) is None
    order = d.capture_order()
    assert [x.mode for x in order[:3]] == [Mode.PIECEWISE] * 3 and order[0].num_tokens == 16
    assert order[3].mode is Mode.FULL and order[3].num_tokens == 16


def test_flashinfer_downgrade_follows_the_profile_and_gpu() -> None:
    def plan(**kw: object) -> object:
        return build_plan(resolve_plan_options(PlanChoices(attention_backend="flashinfer", **kw)))  # type: ignore[arg-type]

    old = plan(behavior="vllm-0.22", gpu="H100")
    assert (
        old.resolved_mode is Mode.PIECEWISE
        and "setting cudagraph_mode=PIECEWISE" in old.downgrades[0]
    )
    assert "mode-downgraded" in {f.id for f in old.findings}
    new = plan(gpu="H100")  # XQA decode on SM90: no downgrade, no false finding
    assert new.resolved_mode is Mode.FULL_AND_PIECEWISE and new.downgrades == []
    assert "mode-downgraded" not in {f.id for f in new.findings}
    air_gapped = plan(gpu="H100", trtllm_artifacts=False)
    assert air_gapped.resolved_mode is Mode.PIECEWISE
    assert plan(behavior="vllm-0.22", gpu="B200").resolved_mode is Mode.FULL_AND_PIECEWISE
    ampere = plan(gpu="A100", behavior="vllm-0.32")
    assert ampere.resolved_mode is Mode.PIECEWISE
    assert plan(gpu="A100").resolved_mode is Mode.FULL_AND_PIECEWISE  # fa2 native decode


def _phases(**kw: object) -> dict[str, tuple[str, int]]:
    plan = build_plan(resolve_plan_options(PlanChoices(**kw)))  # type: ignore[arg-type]
    return {p.phase: (p.mode.name, p.descriptor_count) for p in plan.phases}


def test_draft_decode_clamp_of_pr_39773() -> None:
    cur = _phases(attention_backend="flashinfer", behavior="vllm-0.22")
    assert cur["draft_decode"] == ("NONE", 0)
    old = _phases(attention_backend="flashinfer", behavior="vllm-pre-39773")
    assert old["draft_decode"][0] == "PIECEWISE"
    full = _phases(max_num_seqs=4, behavior="vllm-0.22")
    assert full["draft_decode"] == ("FULL_DECODE_ONLY", 1)  # sizes 4..32 step; only n <= 4 decode
    # raw sizes since per-descriptor rounding: 4 requests decode at 1, 2 and 4
    assert _phases(max_num_seqs=4)["draft_decode"] == ("FULL_DECODE_ONLY", 3)
    assert full["target"] == full["draft_prefill"]


def test_hazard_findings_follow_behavior() -> None:
    def ids(**kw: object) -> set[str]:
        return {f.id for f in build_plan(resolve_plan_options(PlanChoices(**kw))).findings}  # type: ignore[arg-type]

    assert "piecewise-draft-decode" in ids(
        attention_backend="flashinfer", behavior="vllm-pre-39773"
    )
    assert ids(attention_backend="flashinfer") == set()
    assert "unpadded-last-token-indices" in ids(
        mode="FULL_AND_PIECEWISE", behavior="vllm-pre-39773"
    )
    assert ids() == set()
    assert "dedicated-eagle-pool" in ids(behavior="vllm-0.22")
    assert "stale-padded-positions" in ids(behavior="sglang-pre-10892")
    assert ids(behavior="sglang-current") == set()


def test_sglang_plan() -> None:
    assert sglang_batch_sizes(3) == [
        1,
        2,
        3,
        4,
        5,
        6,
        7,
        8,
        10,
        12,
        14,
        16,
        18,
        20,
        22,
        24,
        26,
        28,
        30,
        32,
        40,
        44,
        48,
    ]
    plan = build_plan(
        resolve_plan_options(PlanChoices(framework="sglang", num_speculative_tokens=3))
    )
    target = plan.phase("target")
    assert target.descriptors[0] == BatchDescriptor(Mode.FULL, 4, 1, 4)
    prefill = plan.phase("draft_prefill")  # FA draft-extend graphs after verify only
    assert prefill.mode is Mode.FULL
    assert {d.mode for d in prefill.descriptors} == {Mode.FULL}
    # the draft's prompt-prefill ladder is reported beside the step, never captured by it
    assert [p.phase for p in plan.outside_step] == ["draft_prompt_prefill"]
    assert {d.mode for d in plan.outside_step[0].descriptors} == {Mode.BREAKABLE}

    def prefill_mode(**kw: object) -> Mode:
        opts = resolve_plan_options(PlanChoices(framework="sglang", num_speculative_tokens=3, **kw))  # type: ignore[arg-type]
        return build_plan(opts).phase("draft_prefill").mode

    assert prefill_mode(behavior="sglang-0.5.11") is Mode.NONE  # draft extend eager
    assert prefill_mode(behavior="sglang-0.5.13", mode="BREAKABLE") is Mode.BREAKABLE
    assert prefill_mode(behavior="sglang-0.5.11", mode="BREAKABLE") is Mode.NONE  # no draft BCG
    assert prefill_mode(behavior="sglang-0.5.11", attention_backend="flashinfer") is Mode.NONE
    assert prefill_mode(behavior="sglang-0.5.14", attention_backend="flashinfer") is Mode.FULL
    assert prefill_mode(behavior="sglang-0.5.15", attention_backend="flash_attn") is Mode.BREAKABLE
    assert prefill_mode(mode="FULL") is Mode.FULL  # explicit FULL: no prefill graphs
    assert (
        build_plan(
            resolve_plan_options(
                PlanChoices(framework="sglang", attention_backend="triton", mode="FULL")
            )
        )
        .phase("draft_prefill")
        .mode
        is Mode.FULL
    )
    assert (
        build_plan(resolve_plan_options(PlanChoices(framework="sglang", num_speculative_tokens=1)))
        .phase("draft_decode")
        .descriptor_count
        == 0
    )


def test_options_from_vllm_json() -> None:
    opts = resolve_plan_options(
        PlanChoices(
            speculative_config={"method": "eagle3", "num_speculative_tokens": 5},
            compilation_config={
                "cudagraph_mode": "FULL_DECODE_ONLY",
                "cudagraph_capture_sizes": [1, 2, 4, 8],
            },
        )
    )
    assert opts.num_speculative_tokens == 5 and opts.mode is Mode.FULL_DECODE_ONLY
    assert opts.capture_sizes == (1, 2, 4, 8)
    with pytest.raises(BadInput, match="given twice"):
        resolve_plan_options(
            PlanChoices(num_speculative_tokens=3, speculative_config={"num_speculative_tokens": 5})
        )
    with pytest.raises(BadInput, match="given twice"):
        resolve_plan_options(
            PlanChoices(mode="PIECEWISE", compilation_config={"cudagraph_mode": "FULL"})
        )
    with pytest.raises(BadInput, match="invalid JSON"):  # JSON text is the CLI's to parse
        pop_plan_kwargs({"compilation_config": "{oops"})
    with pytest.raises(BadInput, match="expected a JSON object"):
        pop_plan_kwargs({"speculative_config": "[1]"})
    with pytest.raises(
        BadInput, match="method 'ngram': eaglegraph rebuilds eagle/eagle3/mtp/dflash only"
    ):
        resolve_plan_options(PlanChoices(speculative_config={"method": "ngram"}))
    with pytest.raises(BadInput, match="belongs to sglang"):
        resolve_plan_options(PlanChoices(framework="vllm", behavior="sglang-current"))
    with pytest.raises(BadInput, match="unknown behavior"):
        resolve_plan_options(PlanChoices(behavior="vllm-0.1"))
    assert resolve_plan_options(PlanChoices(behavior="sglang-current")).framework == "sglang"


@pytest.mark.parametrize("framework", ["vllm", "sglang"])
def test_mode_none_is_kept_as_asked(framework: str) -> None:
    """NONE is a falsy mode: asked for by flag or by JSON it must win over the default, and
    the plan then captures nothing."""
    for choices in (
        PlanChoices(mode="NONE", framework=framework),
        PlanChoices(compilation_config={"cudagraph_mode": "NONE"}, framework=framework),
    ):
        opts = resolve_plan_options(choices)
        assert opts.mode is Mode.NONE and opts.explicit_mode
        assert all(not p.descriptors for p in build_plan(opts).phases)
