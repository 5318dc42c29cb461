"""Parallel layouts as the engines spell them: one decorator, one parser, one `ParallelLayout`.

vLLM takes `--tensor-parallel-size/-tp`, `--data-parallel-size/-dp` and
`--enable-expert-parallel/-ep` (the EP group is then every rank, TP × DP), and
`draft_tensor_parallel_size` inside `--speculative-config`; SGLang takes `--tp-size`,
`--dp-size`, `--ep-size` (an EP group inside TP) and `--enable-dp-attention` (or its newer
`--attn-dp-size N`). Every spelling is accepted on every command; a flag of the other engine is
refused in one line naming the one this engine takes, and so is a combination the engine
rejects at startup (`known.parallel`), before any work. A planning command plans with the
layout (SGLang's graph batch sizes read its TP and its attention-DP groups).

`--rank-deadline` and `--rank-timeout`, the supervisor's two limits of a multi-rank run, are
declared here once for every command that starts ranks.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import click

from eaglegraph.cli.options import Seconds, pop_plan_kwargs
from eaglegraph.errors import BadInput
from eaglegraph.known import parallel as known
from eaglegraph.probes.rank_limits import RankLimits
from eaglegraph.results.parallel import ParallelLayout
from eaglegraph.rig.options import PlanChoices

PARALLEL_KEYS = (
    "tensor_parallel_size",
    "data_parallel_size",
    "enable_expert_parallel",
    "ep_size",
    "enable_dp_attention",
    "attn_dp_size",
)

_POSITIVE = click.IntRange(min=1)


def _options() -> list[Callable[[Any], Any]]:
    return [
        click.option(
            "--tp",
            "-tp",
            "--tensor-parallel-size",
            "--tp-size",
            "tensor_parallel_size",
            type=_POSITIVE,
            default=None,
            help="Tensor-parallel size (vLLM --tensor-parallel-size, SGLang --tp-size). Default 1.",
        ),
        click.option(
            "--dp",
            "-dp",
            "--data-parallel-size",
            "--dp-size",
            "data_parallel_size",
            type=_POSITIVE,
            default=None,
            help="Data-parallel size (vLLM --data-parallel-size, SGLang --dp-size): replicas, "
            "or SGLang's attention-DP groups with --enable-dp-attention. Default 1.",
        ),
        click.option(
            "--enable-expert-parallel",
            "-ep",
            "enable_expert_parallel",
            is_flag=True,
            default=False,
            help="vLLM: experts split over every rank (EP = TP × DP).",
        ),
        click.option(
            "--ep-size",
            "--ep",
            "--expert-parallel-size",
            "ep_size",
            type=_POSITIVE,
            default=None,
            help="SGLang: expert-parallel size, a divisor of --tp-size. Default 1.",
        ),
        click.option(
            "--enable-dp-attention",
            "enable_dp_attention",
            is_flag=True,
            default=False,
            help="SGLang: DP attention, --dp-size groups inside the TP group (needs --dp-size "
            "> 1 dividing --tp-size).",
        ),
        click.option(
            "--attn-dp-size",
            "--attention-data-parallel-size",
            "attn_dp_size",
            type=_POSITIVE,
            default=None,
            help="SGLang (0.5.23's spelling): attention-DP groups inside the TP group (= --dp-size N "
            "--enable-dp-attention).",
        ),
    ]


# (option, RankLimits field, help): the supervisor's limits, each a number of seconds
_RANK_LIMITS = (
    (
        "--rank-deadline",
        "deadline_s",
        "TP/DP > 1: seconds without progress while a rank waits in a collective before the "
        "ranks are ended as stuck.",
    ),
    (
        "--rank-timeout",
        "timeout_s",
        "TP/DP > 1: seconds a multi-rank run (memdiff: each policy's) may take; then every "
        "rank is ended and what was measured is shown.",
    ),
)


def rank_limit_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """`--rank-deadline` and `--rank-timeout`, for every command that starts ranks: the body
    receives them as one `rank_limits: RankLimits`, the record the supervisor takes."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        given = {field: kwargs.pop(_param(option)) for option, field, _ in _RANK_LIMITS}
        return func(*args, rank_limits=RankLimits(**given), **kwargs)

    for option, field, text in reversed(_RANK_LIMITS):
        wrapper = click.option(
            option,
            type=Seconds(1.0, inclusive=True),
            default=getattr(RankLimits, field),
            show_default=True,
            help=text,
        )(wrapper)
    return wrapper


def _param(option: str) -> str:
    """The parameter click names `option` (`--rank-deadline` → `rank_deadline`)."""
    return option.removeprefix("--").replace("-", "_")


def parallel_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add the layout options, every engine spelling of each, to a command."""
    for option in reversed(_options()):
        func = option(func)
    return func


def _draft_tp(speculative: Mapping[str, Any] | None) -> int | None:
    """`draft_tensor_parallel_size` of a vLLM speculative config (its `tensor_parallel_size`
    is refused there, as vLLM does)."""
    if not speculative:
        return None
    if "tensor_parallel_size" in speculative:
        raise BadInput(
            "--speculative-config: 'tensor_parallel_size' is not a valid key; vLLM takes "
            "'draft_tensor_parallel_size'"
        )
    value = speculative.get("draft_tensor_parallel_size")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise BadInput(
            f"--speculative-config: draft_tensor_parallel_size must be a positive integer, "
            f"not {value!r}"
        )
    return value


def layout_from_options(
    kwargs: dict[str, Any],
    framework: str,
    speculative: Mapping[str, Any] | None = None,
) -> ParallelLayout:
    """Pop the layout options from a command's kwargs into one `ParallelLayout` for
    `framework`; a flag of the other engine or a combination it refuses is one line, exit 2."""
    values = {k: kwargs.pop(k, None) for k in PARALLEL_KEYS}
    tp = values["tensor_parallel_size"] or 1
    dp = values["data_parallel_size"] or 1
    ep_flag = bool(values["enable_expert_parallel"])
    ep_size = values["ep_size"]
    dp_attention = bool(values["enable_dp_attention"])
    attn_dp = values["attn_dp_size"]
    draft_tp = _draft_tp(speculative)
    if framework == known.SGLANG:
        if ep_flag:
            raise BadInput(
                "--enable-expert-parallel is vLLM's; SGLang takes --ep-size N (a divisor of "
                "--tp-size)"
            )
        if draft_tp is not None:
            raise BadInput(
                "draft_tensor_parallel_size is vLLM's; SGLang's draft runs at the target's TP"
            )
        if attn_dp is not None:
            if values["data_parallel_size"] not in (None, 1) and not dp_attention:
                raise BadInput(
                    f"--dp-size {dp} with --attn-dp-size {attn_dp}: SGLang does not combine "
                    "data-parallel replicas with attention DP"
                )
            if dp_attention and values["data_parallel_size"] not in (None, attn_dp):
                raise BadInput(
                    f"--enable-dp-attention --dp-size {dp} and --attn-dp-size {attn_dp} "
                    "disagree: give one"
                )
            dp, dp_attention = attn_dp, attn_dp > 1
        layout = ParallelLayout(tp, dp, ep_size or 1, dp_attention)
    else:
        for flag, given in (
            ("--ep-size", ep_size is not None),
            ("--enable-dp-attention", dp_attention),
            ("--attn-dp-size", attn_dp is not None),
        ):
            if given:
                raise BadInput(
                    f"{flag} is SGLang's; vLLM takes --enable-expert-parallel (EP = TP × DP)"
                    if flag == "--ep-size"
                    else f"{flag} is SGLang's; vLLM has no DP attention (--data-parallel-size "
                    "adds replicas)"
                )
        ep = tp * dp if ep_flag and tp * dp > 1 else 1
        layout = ParallelLayout(tp, dp, ep, False, draft_tp)
    refused = known.engine_layout_refusals(framework, layout)
    if refused:
        raise BadInput(refused[0])
    return layout


def framework_of(framework: str | None, behavior: str | None) -> str:
    """The engine a command plans for: --framework, else --behavior's (or --engine's), else
    vLLM — what `rig.options.resolve_plan_options` resolves, read before the pair is open."""
    if framework:
        return framework
    if behavior:
        from eaglegraph.known.choose import resolve_profile

        return resolve_profile(behavior).framework
    return known.VLLM


def pop_plan_and_layout(kwargs: dict[str, Any]) -> tuple[PlanChoices, ParallelLayout]:
    """A planning command's choices and its deployment's layout, popped from its kwargs: the
    layout flags are read in the spellings of the engine the plan names, and the plan takes
    what of the layout SGLang's graph batch sizes read (TP, attention-DP groups), so inspect, capture, probe and memdiff plan one deployment alike."""
    plan = pop_plan_kwargs(kwargs)
    framework = framework_of(plan.framework, plan.behavior)
    layout = layout_from_options(kwargs, framework, plan.speculative_config)
    attn_dp = layout.dp if layout.dp_attention else 1
    return replace(plan, tp_size=layout.tp, attn_dp_size=attn_dp), layout
