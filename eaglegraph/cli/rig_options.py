"""Options of the commands that build a rig (capture, memdiff, probe), and the one place they
become a RunSpec."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from eaglegraph.errors import BadInput

if TYPE_CHECKING:
    from eaglegraph.probes.spec import RunSpec
    from eaglegraph.rig.options import PlanChoices

RIG_KEYS = ("device", "dtype", "max_model_len", "random_weights", "seed", "compile_model")


def rig_options(func: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option(
            "--random-weights",
            is_flag=True,
            help="Seeded random weights from config.json alone (config-only folders, 8B presets).",
        ),
        click.option(
            "--dtype",
            type=click.Choice(["auto", "bfloat16", "float16", "float32"]),
            default="auto",
            show_default=True,
            help="auto = the config's dtype on CUDA, float32 on CPU.",
        ),
        click.option(
            "--device",
            type=click.Choice(["auto", "cuda", "cpu"]),
            default="auto",
            show_default=True,
            help="cuda captures real graphs; cpu uses the emulated backend.",
        ),
        click.option("--max-model-len", type=int, default=1024, show_default=True),
        click.option("--seed", type=int, default=0, show_default=True),
        click.option(
            "--compile/--no-compile",
            "compile_model",
            default=None,
            help="Run the target through torch.compile/Inductor, so its graph pool holds "
            "the compiled pieces' buffers [default: as the engine does: on for vLLM on CUDA "
            "(about a minute of compilation for an 8B target), off for SGLang and on CPU].",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def refuse_tree(plan: PlanChoices) -> None:
    """The rig rebuilds chains: a tree (SGLang topk > 1) is refused before any work."""
    if plan.eagle_topk is not None and plan.eagle_topk > 1:
        raise BadInput(
            "tree drafting (--speculative-eagle-topk > 1) is planned by `eaglegraph inspect`; "
            "the rig rebuilds chains (topk 1) only"
        )


def pop_rig_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: kwargs.pop(k) for k in RIG_KEYS if k in kwargs}


def build_spec(
    model_dir: str | None,
    kwargs: dict[str, Any],
    *,
    target_dir: str | None = None,
    draft_dir: str | None = None,
    pool: str | None = None,
    default_max_num_seqs: dict[str, int] | None = None,
    cpu_max_num_seqs: dict[str, int] | None = None,
    plan: PlanChoices | None = None,
) -> RunSpec:
    """The command's parsed plan (`plan`, or popped from `kwargs`) and rig options (popped from
    `kwargs`) as one RunSpec."""
    from eaglegraph.cli.options import pop_plan_kwargs
    from eaglegraph.probes.spec import resolve_run

    plan = plan if plan is not None else pop_plan_kwargs(kwargs)
    refuse_tree(plan)
    return resolve_run(
        model_dir,
        target_dir,
        draft_dir,
        plan=plan,
        pool=pool,
        default_max_num_seqs=default_max_num_seqs,
        cpu_max_num_seqs=cpu_max_num_seqs,
        **pop_rig_kwargs(kwargs),
    )
