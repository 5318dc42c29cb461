"""Options shared by inspect, capture, probe and memdiff: same names in every command."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import click

from eaglegraph.errors import BadInput
from eaglegraph.known.choose import profile_for_engine
from eaglegraph.results.findings import FAIL_ON_CHOICES

_MODE_OPTION = click.option(
    "--mode",
    default=None,
    help="cudagraph mode: NONE, PIECEWISE, FULL, FULL_DECODE_ONLY, FULL_AND_PIECEWISE "
    "(vLLM default), BREAKABLE; case-insensitive.",
)

_PLAN_OPTIONS: list[Callable[[Any], Any]] = [
    click.option(
        "--framework",
        type=click.Choice(["vllm", "sglang"]),
        default=None,
        help="Semantics to rebuild (default: vllm, or the framework of --behavior).",
    ),
    click.option(
        "--max-num-seqs",
        type=int,
        default=None,
        help="Scheduler max_num_seqs (SGLang: max_running_requests). Default 128 (SGLang 48).",
    ),
    click.option(
        "-K",
        "--num-speculative-tokens",
        type=int,
        default=None,
        help="Draft tokens per step (default: the draft config's, else 3).",
    ),
    click.option("--max-num-batched-tokens", type=int, default=None, help="Default 8192."),
    _MODE_OPTION,
    click.option(
        "--attention-backend",
        type=click.Choice(["flash_attn", "flashinfer", "triton"]),
        default=None,
        help="Decides the metadata style and vLLM's mode downgrade (default flash_attn).",
    ),
    click.option(
        "--behavior",
        default=None,
        help="Historic semantics, e.g. vllm-pre-39773 (see `eaglegraph probe --list-behaviors`).",
    ),
    click.option(
        "--engine",
        default=None,
        metavar="VERSION",
        help="Engine release to rebuild, e.g. vllm==0.24.0 or 'sglang 0.5.9': picks the "
        "--behavior profile that release behaves as.",
    ),
    click.option(
        "--gpu",
        default=None,
        metavar="NAME",
        help="GPU the plan is for (H100, H200, B200, A100, L40S, ...): capability and memory "
        "drive the engine's GPU rules. Default H100.",
    ),
    click.option(
        "--trtllm-artifacts/--no-trtllm-artifacts",
        default=None,
        help="Whether FlashInfer's TRT-LLM/XQA kernels load (cubin package or NVIDIA "
        "artifactory reachable). Default: yes.",
    ),
    click.option(
        "--capture-sizes", default=None, help="Comma-separated capture sizes (vLLM tokens)."
    ),
    click.option(
        "--speculative-config",
        default=None,
        metavar="JSON",
        help='vLLM-style, e.g. \'{"method": "eagle3", "num_speculative_tokens": 3}\'.',
    ),
    click.option(
        "--compilation-config",
        default=None,
        metavar="JSON",
        help='vLLM-style, e.g. \'{"cudagraph_mode": "FULL_AND_PIECEWISE"}\'.',
    ),
]

PLAN_KEYS = (
    "framework",
    "max_num_seqs",
    "num_speculative_tokens",
    "max_num_batched_tokens",
    "mode",
    "attention_backend",
    "behavior",
    "engine",
    "gpu",
    "trtllm_artifacts",
    "capture_sizes",
    "speculative_config",
    "compilation_config",
)


def plan_options(func: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(_PLAN_OPTIONS):
        func = option(func)
    return func


def plan_options_without_mode(func: Callable[..., Any]) -> Callable[..., Any]:
    """For commands whose --mode means something else (probe takes several)."""
    for option in reversed(_PLAN_OPTIONS):
        if option is not _MODE_OPTION:
            func = option(func)
    return func


def pop_plan_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The plan options, with `--engine` turned into the profile name it selects."""
    plan = {k: kwargs.pop(k) for k in PLAN_KEYS if k in kwargs}
    engine = plan.pop("engine", None)
    if engine is not None:
        if plan.get("behavior"):
            raise BadInput("give --engine or --behavior, not both")
        plan["behavior"] = profile_for_engine(engine).name
    return plan


class Seconds(click.ParamType):
    """A finite number of seconds in (low, high]: `nan`, `inf`, 0 and negatives are refused."""

    name = "seconds"

    def __init__(self, low: float = 0.0, high: float = math.inf) -> None:
        self.low, self.high = low, high

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(seconds) or not self.low < seconds <= self.high:
            upper = "" if math.isinf(self.high) else f" and at most {self.high:g}"
            self.fail(f"{value} is not a number above {self.low:g}{upper}", param, ctx)
        return seconds


def pair_arguments(func: Callable[..., Any]) -> Callable[..., Any]:
    """MODEL_DIR (a folder or a preset name) plus the explicit --target/--draft form."""
    func = click.option("--draft", "draft_dir", default=None, help="Draft model folder.")(func)
    func = click.option("--target", "target_dir", default=None, help="Target model folder.")(func)
    return click.argument("model_dir", required=False, metavar="MODEL_DIR")(func)


def fail_on_option(default: str) -> Callable[[Any], Any]:
    return click.option(
        "--fail-on",
        type=click.Choice(FAIL_ON_CHOICES),
        default=default,
        show_default=True,
        help="Exit 1 when a finding reaches this severity.",
    )


def dtype_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--dtype",
        type=click.Choice(["auto", "bfloat16", "float16", "float32"]),
        default="auto",
        show_default=True,
        help="Model dtype: auto = the config's on CUDA, float32 on CPU.",
    )(func)
