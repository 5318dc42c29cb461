"""Options shared by inspect, capture, probe and memdiff: same names in every command."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import click

from eaglegraph.cli.gpu_options import gpu_description_options, parse_capability
from eaglegraph.errors import BadInput
from eaglegraph.known.choose import profile_for_engine
from eaglegraph.known.parallel import DRAFT_PARALLEL_KEYS
from eaglegraph.known.pool_policies import PoolPolicy
from eaglegraph.known.runner_rules import parse_runner
from eaglegraph.known.versions import parse_engine
from eaglegraph.results.findings import FAIL_ON_CHOICES
from eaglegraph.rig.options import (
    ATTENTION_BACKENDS,
    COMPILATION_KEYS,
    DEFAULT_MAX_NUM_BATCHED_TOKENS,
    DEFAULT_MAX_NUM_SEQS,
    FRAMEWORKS,
    SPECULATIVE_KEYS,
    PlanChoices,
)

_MODE_OPTION = click.option(
    "--mode",
    default=None,
    help="cudagraph mode: NONE, PIECEWISE, FULL, FULL_DECODE_ONLY, FULL_AND_PIECEWISE, "
    "BREAKABLE; case-insensitive (default: FULL_AND_PIECEWISE for vllm, FULL for sglang).",
)


def _seqs_help(seqs: Mapping[str, int], extra: str = "") -> str:
    return (
        "Scheduler max_num_seqs (SGLang: max_running_requests). "
        f"Default {seqs['vllm']} (SGLang {seqs['sglang']}){extra}."
    )


ENGINE_DEFAULTS_HELP = (
    "Default: what the engine release (--engine/--behavior) picks for --gpu; the report "
    "lists the values it used under the plan's defaults."
)


def _plan_option_list(seqs_help: str, tokens_help: str) -> list[Callable[[Any], Any]]:
    return [
        click.option(
            "--framework",
            type=click.Choice(list(FRAMEWORKS)),
            default=None,
            help="Semantics to rebuild (default: vllm, or the framework of --behavior).",
        ),
        click.option(
            "--max-num-seqs",
            "--max-running-requests",
            "max_num_seqs",
            type=int,
            default=None,
            help=seqs_help,
        ),
        click.option(
            "-K",
            "--num-speculative-tokens",
            type=int,
            default=None,
            help="Draft tokens per step (default: the draft config's, else 3).",
        ),
        click.option(
            "--max-num-batched-tokens",
            type=int,
            default=None,
            help=tokens_help,
        ),
        _MODE_OPTION,
        click.option(
            "--attention-backend",
            default=None,
            metavar="NAME",
            help=f"{', '.join(ATTENTION_BACKENDS)}, or as the engine spells it (FLASH_ATTN, "
            "FLASHINFER, TRITON_ATTN, fa3), any case: decides the metadata style and vLLM's "
            "mode downgrade (default flash_attn).",
        ),
        click.option(
            "--speculative-eagle-topk",
            "eagle_topk",
            type=int,
            default=None,
            help="SGLang: draft branches per step (default 1; > 1 drafts a tree, planned by "
            "inspect).",
        ),
        click.option(
            "--speculative-num-draft-tokens",
            "num_draft_tokens",
            type=int,
            default=None,
            help="SGLang: tree tokens verified per request (needed with topk > 1).",
        ),
        click.option(
            "--runner",
            type=click.Choice(["auto", "v1", "v2"], case_sensitive=False),
            default=None,
            help="vLLM model runner: v1 (GPU model runner) or v2 (Model Runner V2), as "
            "VLLM_USE_V2_MODEL_RUNNER=0/1 picks it; auto (default) = what the release picks "
            "for the target's architecture and quantization.",
        ),
        click.option(
            "--behavior",
            default=None,
            help="Historic semantics, e.g. vllm-pre-39773 (see `eaglegraph probe "
            "--list-behaviors`; default: the framework's current one).",
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
            help="GPU the plan is for (H100, H800, H20, H200, B200, GB300, A100, L40S, L20, "
            "RTX-4090, ...; nvidia-smi spellings work): capability and memory drive the "
            "engine's GPU rules. Default H100.",
        ),
        *gpu_description_options(),
        click.option(
            "--trtllm-artifacts/--no-trtllm-artifacts",
            default=None,
            help="Whether FlashInfer's TRT-LLM/XQA kernels load (cubin package or NVIDIA "
            "artifactory reachable). Default: inspect takes a fresh install of the release "
            "(vLLM <= 0.25 bundles flashinfer-cubin, 0.26+ does not); other commands: yes.",
        ),
        click.option(
            "--capture-sizes",
            default=None,
            help="Comma-separated capture sizes (vLLM tokens; default: the engine's list for "
            "--max-num-seqs).",
        ),
        click.option(
            "--cuda-graph-max-bs",
            "--cuda-graph-max-bs-decode",
            "cuda_graph_max_bs",
            type=int,
            default=None,
            metavar="N",
            help="SGLang: the largest batch size of the decode graphs (its --cuda-graph-max-bs, "
            "--cuda-graph-max-bs-decode from 0.5.14); default: the release's for --gpu and "
            "--tp. vLLM: use --compilation-config '{\"max_cudagraph_capture_size\": N}'.",
        ),
        click.option(
            "--enable-two-batch-overlap",
            "two_batch_overlap",
            is_flag=True,
            default=None,
            help="SGLang: two-batch overlap (graph batch sizes become multiples of 2).",
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
    "gpu_memory",
    "capability",
    "trtllm_artifacts",
    "runner",
    "eagle_topk",
    "num_draft_tokens",
    "capture_sizes",
    "cuda_graph_max_bs",
    "two_batch_overlap",
    "speculative_config",
    "compilation_config",
)


def plan_options_for(
    seqs: Mapping[str, int] = DEFAULT_MAX_NUM_SEQS,
    *,
    with_mode: bool = True,
    seqs_note: str = "",
    engine_defaults: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The plan options, with the --max-num-seqs default this command really uses in its help
    (probe plans fewer requests; capture on CPU too; inspect takes the engine release's batch
    defaults for the GPU), so help never contradicts the run."""
    if engine_defaults:
        seqs_help = "Scheduler max_num_seqs (SGLang: max_running_requests). " + ENGINE_DEFAULTS_HELP
        tokens_help = "Scheduler token budget per step. " + ENGINE_DEFAULTS_HELP
    else:
        seqs_help = _seqs_help(seqs, seqs_note)
        tokens_help = f"Scheduler token budget per step. Default {DEFAULT_MAX_NUM_BATCHED_TOKENS}."

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(_plan_option_list(seqs_help, tokens_help)):
            if with_mode or option is not _MODE_OPTION:
                func = option(func)
        return func

    return decorate


def plan_options(func: Callable[..., Any]) -> Callable[..., Any]:
    return plan_options_for()(func)


def plan_options_without_mode(func: Callable[..., Any]) -> Callable[..., Any]:
    """For commands whose --mode means something else (probe takes several)."""
    return plan_options_for(with_mode=False)(func)


def check_capture_sizes(text: str | None) -> None:
    """Refuse an empty --capture-sizes, or one with an empty entry ("4,,8", "4,8,"): a typo the
    parser would otherwise drop without a word."""
    if text is None:
        return
    if not text.strip():
        raise BadInput("--capture-sizes is empty", "give comma-separated sizes, e.g. 1,2,4,8")
    if any(not item.strip() for item in text.split(",")):
        raise BadInput(
            f"--capture-sizes {text!r} has an empty entry",
            "give comma-separated sizes, e.g. 1,2,4,8",
        )


def ignored_keys(text: str | None, used: tuple[str, ...]) -> list[str]:
    """Keys of a pasted vLLM JSON config that the plan does not read (e.g. the draft `model`:
    it comes from MODEL_DIR here). Invalid JSON is left to the plan's own one-line refusal."""
    import json

    try:
        value = json.loads(text) if text else None
    except json.JSONDecodeError:
        return []
    return [k for k in value if k not in used] if isinstance(value, dict) else []


def _parse_json(text: str | None, flag: str) -> dict[str, Any] | None:
    """A pasted vLLM JSON config as an object; one line naming the flag when it is not one."""
    import json

    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{flag}: invalid JSON at column {exc.colno}: {exc.msg}") from None
    if not isinstance(value, dict):
        raise BadInput(f"{flag}: expected a JSON object")
    return value


def parse_capture_sizes(text: str | None) -> tuple[int, ...] | None:
    """--capture-sizes 1,2,4 as integers; "1 2 4" too, as SGLang's --cuda-graph-bs lists are
    typed (spaces used to be dropped, which read "1 2 4" as 124)."""
    if text is None:
        return None
    try:
        return tuple(int(s) for s in re.split(r"[\s,]+", text.strip()) if s)
    except ValueError:
        raise BadInput(
            f"--capture-sizes: expected comma-separated integers, got {text!r}"
        ) from None


def pop_plan_kwargs(kwargs: dict[str, Any]) -> PlanChoices:
    """The plan options as one typed `PlanChoices`: JSON text and size lists parsed, `--engine`
    turned into the profile name it selects; a warning on stderr names each pasted JSON key
    the plan ignores."""
    plan = {k: kwargs.pop(k) for k in PLAN_KEYS if k in kwargs}
    check_capture_sizes(plan.get("capture_sizes"))
    for flag, key, used in (
        ("--speculative-config", "speculative_config", SPECULATIVE_KEYS + DRAFT_PARALLEL_KEYS),
        ("--compilation-config", "compilation_config", COMPILATION_KEYS),
    ):
        ignored = ignored_keys(plan.get(key), used)
        if ignored:
            click.echo(
                f"eaglegraph: warning: {flag} keys not modelled, ignored: {', '.join(ignored)} "
                f"(read: {', '.join(used)})",
                err=True,
            )
    engine = plan.pop("engine", None)
    if engine is not None:
        if plan.get("behavior"):
            raise BadInput("give --engine or --behavior, not both")
        choice = profile_for_engine(engine)
        plan["behavior"], plan["engine_version"] = choice.name, parse_engine(engine).text
        if choice.range_note:
            click.echo(f"eaglegraph: warning: {choice.range_note}", err=True)
    plan["runner"] = parse_runner(plan.pop("runner", None))
    plan["gpu_memory_gib"] = plan.pop("gpu_memory", None)
    plan["two_batch_overlap"] = bool(plan.pop("two_batch_overlap", False))
    plan["gpu_capability"] = parse_capability(plan.pop("capability", None))
    speculative = _parse_json(plan.pop("speculative_config", None), "--speculative-config")
    compilation = _parse_json(plan.pop("compilation_config", None), "--compilation-config")
    sizes = parse_capture_sizes(plan.pop("capture_sizes", None))
    return PlanChoices(
        **plan,
        capture_sizes=sizes,
        speculative_config=speculative,
        compilation_config=compilation,
    )


WEEK = 7 * 24 * 3600.0  # no run waits longer; `1e308` would overflow the OS's timeout


class Seconds(click.ParamType):
    """A finite number of seconds in (low, high] (`inclusive`: [low, high]): `nan`, `inf`, 0
    and negatives are refused, and so are values past `high` (a week by default), which the
    OS's timers cannot hold."""

    name = "seconds"

    def __init__(self, low: float = 0.0, high: float = WEEK, *, inclusive: bool = False) -> None:
        self.low, self.high, self.inclusive = low, high, inclusive

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        above = seconds >= self.low if self.inclusive else seconds > self.low
        if not math.isfinite(seconds) or not above or seconds > self.high:
            upper = "" if math.isinf(self.high) else f" and at most {self.high:g}"
            least = "at least" if self.inclusive else "above"
            self.fail(f"{value} is not a number {least} {self.low:g}{upper}", param, ctx)
        return seconds


def pair_arguments(func: Callable[..., Any]) -> Callable[..., Any]:
    """MODEL_DIR (a folder or a preset name) plus the explicit --target/--draft form."""
    func = click.option("--draft", "draft_dir", default=None, help="Draft model folder.")(func)
    func = click.option("--target", "target_dir", default=None, help="Target model folder.")(func)
    return click.argument("model_dir", required=False, metavar="MODEL_DIR")(func)


def pool_option(
    help: str, default: str | None = None, name: str = "--pool"
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A graph pool policy (--pool, memdiff's --against): the same choices everywhere
    (`known.pool_policies`, which imports no torch)."""
    return click.option(
        name,
        type=click.Choice(PoolPolicy.values()),
        default=default,
        show_default=default is not None,
        help=help,
    )


def timeout_option(default: float, help: str) -> Callable[[Any], Any]:
    """`--timeout`: seconds one piece of work (a probe case, a memdiff capture) may take."""
    return click.option("--timeout", type=Seconds(), default=default, show_default=True, help=help)


def predict_option(help: str) -> Callable[[Any], Any]:
    """`--predict/--no-predict`: predict the pools on the CPU before capturing (on by default)."""
    return click.option("--predict/--no-predict", default=True, show_default=True, help=help)


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


def warn(warnings: Iterable[str]) -> None:
    """One `eaglegraph: warning:` line on stderr per legal-but-suspicious value (stdout, and
    so --json, stays clean)."""
    for warning in warnings:
        click.echo(f"eaglegraph: warning: {warning}", err=True)


def warn_suspicious(
    pair: Any, options: Any, max_model_len: int | None = None, *, force: bool = False
) -> None:
    """The warnings of a run's plan (capture, probe, memdiff); a plan the engine would refuse
    at startup (`known.startup_limits`) is refused here, before any work, unless `force`."""
    from eaglegraph.known.startup_limits import startup_refusals
    from eaglegraph.probes.sanity import plan_warnings

    refused = startup_refusals(options.framework, options)
    if refused and not force:
        raise BadInput(refused[0], "pass --force to run it anyway")
    warn(plan_warnings(pair, options, max_model_len))


def check_choices(
    model_dir: str | None, target_dir: str | None, draft_dir: str | None, plan: PlanChoices
) -> None:
    """Refuse a mistyped name (preset, GPU, mode, behavior, backend) or an unreadable pair from
    the configs alone, before a command imports torch: a bad flag is answered in well under a
    second. The command resolves the same choices again for its run."""
    from eaglegraph.pair import load_pair
    from eaglegraph.pair.presets import resolve_model_arg
    from eaglegraph.probes.setup import plan_options

    model = resolve_model_arg(model_dir) if model_dir is not None else None
    plan_options(load_pair(model, target_dir, draft_dir), plan)
