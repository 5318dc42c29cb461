"""`eaglegraph capture`: capture a pair's graphs under a mode and pool policy, and show them."""

from __future__ import annotations

from typing import Any

import click

from eaglegraph.cli.app import App, output_options
from eaglegraph.cli.options import (
    check_choices,
    pair_arguments,
    plan_options_for,
    pool_option,
    predict_option,
    warn_suspicious,
)
from eaglegraph.cli.outputs import Outputs, output_files
from eaglegraph.cli.parallel_options import (
    parallel_options,
    pop_plan_and_layout,
    rank_limit_options,
)
from eaglegraph.cli.rig_options import build_spec, rig_options
from eaglegraph.probes.rank_limits import RankLimits
from eaglegraph.results.capture import CaptureRun
from eaglegraph.results.rank_runs import RankedRun
from eaglegraph.rig.options import CPU_CAPTURE_MAX_NUM_SEQS, DEFAULT_MAX_NUM_SEQS

_CPU_NOTE = (
    f"; on CPU {CPU_CAPTURE_MAX_NUM_SEQS['vllm']} (SGLang {CPU_CAPTURE_MAX_NUM_SEQS['sglang']}) "
    "unless --full-plan"
)


@click.command("capture")
@pair_arguments
@plan_options_for(DEFAULT_MAX_NUM_SEQS, seqs_note=_CPU_NOTE)
@pool_option("Graph pool policy (default: the behavior's: shared, or dedicated for vllm ≤ 0.22).")
@rig_options
@parallel_options
@click.option(
    "--replay",
    is_flag=True,
    help="After capture, run a grow/shrink schedule through the graphs (at TP/DP > 1: and "
    "eagerly, on every rank, and unsharded on rank 0).",
)
@click.option(
    "--compare-tp1/--no-compare-tp1",
    default=True,
    show_default=True,
    help="TP > 1 with --replay: rank 0 also rebuilds the pair unsharded and runs the same "
    "schedule (needs the whole model's memory on rank 0's device).",
)
@rank_limit_options
@predict_option("On CUDA, predict each pool on the CPU first; stop with what fits if it will not.")
@click.option(
    "--full-plan",
    is_flag=True,
    help="On CPU, capture the engine's whole default plan (minutes) instead of the quick one.",
)
@output_files(CaptureRun, inputs=("model_dir", "target_dir", "draft_dir"), refusals=True)
@output_options
def command(
    model_dir: str | None,
    target_dir: str | None,
    draft_dir: str | None,
    pool: str | None,
    replay: bool,
    predict: bool,
    full_plan: bool,
    compare_tp1: bool,
    rank_limits: RankLimits,
    outputs: Outputs,
    app: App,
    **kwargs: Any,
) -> None:
    """Capture target, draft-prefill and draft-decode graphs and show the timeline and pools.

    On CUDA graphs are real (torch.cuda.CUDAGraph, real pools, allocator snapshot); on CPU
    the emulated backend replays captured routines and memory figures are N/A, and without
    --max-num-seqs or --capture-sizes it captures a quick, smaller plan (the run says what it
    left out; --full-plan captures all of it). Exit 1 when a capture fails (e.g. OOM): the
    partial timeline is still shown and saved.
    """
    plan, layout = pop_plan_and_layout(kwargs)
    check_choices(model_dir, target_dir, draft_dir, plan)  # before torch is imported
    if not layout.single:
        outputs.refuse_beyond(RankedRun, f"a capture at {layout.describe()}")
    spec = build_spec(
        model_dir,
        kwargs,
        plan=plan,
        target_dir=target_dir,
        draft_dir=draft_dir,
        pool=pool,
        cpu_max_num_seqs=None if full_plan else CPU_CAPTURE_MAX_NUM_SEQS,
    )
    pair = spec.open_pair()
    warn_suspicious(pair, spec.options, spec.max_model_len, force=outputs.force)
    # torch from here on: what the engine would refuse at startup is refused before it
    from eaglegraph.probes.capture import CaptureRequest, preflight, run_capture
    from eaglegraph.rig.plan import build_plan

    if not layout.single:
        from eaglegraph.probes.ranks import RankRequest, run_ranks

        ranked = RankRequest(
            spec,
            layout,
            args={"replay": replay, "compare_single": compare_tp1},
            limits=rank_limits,
        )
        with app.progress(f"capture at {layout.describe()}") as progress:
            result = run_ranks(ranked, on_stage=lambda s: progress(s, milestone=s))
        app.finish(result, outputs, result.exit_code)
        return
    request = CaptureRequest.from_spec(
        spec,
        replay=replay,
        snapshot=outputs.path("snapshot"),
        overwrite=outputs.force,
        predict=predict,
    )
    preflight(pair, request.config)
    phases = build_plan(spec.options).phases
    total = sum(p.descriptor_count for p in phases)
    sizes = {p.phase: p.descriptor_count for p in phases}
    seen: set[str] = set()

    def on_event(event: Any) -> None:
        first = event.phase not in seen
        seen.add(event.phase)
        label = f"{event.phase}: {sizes.get(event.phase, '?')} graphs" if first else None
        progress(f"{event.phase} {event.descriptor}", advance=1, milestone=label)

    with app.progress("capture", total=total) as progress:
        run = run_capture(
            pair, request, on_event=on_event, on_stage=lambda s: progress(s, milestone=s)
        )
    if request.left_out is not None and app.json_output:  # the view shows it as a finding
        click.echo(
            f"eaglegraph: note: {request.left_out.message}; {request.left_out.fix}", err=True
        )
    app.finish(run, outputs, 0 if run.ok else 1)
