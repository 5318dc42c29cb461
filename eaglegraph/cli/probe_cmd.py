"""`eaglegraph probe`: poison padding regions, replay at padded batches, report stale reads."""

from __future__ import annotations

from typing import Any

import click

from eaglegraph.cli.app import App, output_options
from eaglegraph.cli.options import (
    check_choices,
    fail_on_option,
    plan_options_for,
    pool_option,
    timeout_option,
    warn_suspicious,
)
from eaglegraph.cli.outputs import Outputs, output_files
from eaglegraph.cli.parallel_options import (
    parallel_options,
    pop_plan_and_layout,
    rank_limit_options,
)
from eaglegraph.cli.rig_options import pop_rig_kwargs, refuse_tree, rig_options
from eaglegraph.probes.rank_limits import RankLimits
from eaglegraph.results.probe import ProbeRun
from eaglegraph.results.rank_runs import RankedRun
from eaglegraph.rig.options import PROBE_MAX_NUM_SEQS


@click.command("probe")
@click.argument("model_dir", required=False, metavar="MODEL_DIR")
@click.option(
    "--mode",
    "modes",
    multiple=True,
    help="cudagraph mode to probe; repeat it, or give `all` (default: all).",
)
@plan_options_for(PROBE_MAX_NUM_SEQS, with_mode=False)
@rig_options
@parallel_options
@rank_limit_options
@pool_option("Graph pool policy for the captures (default: the behavior's).")
@click.option(
    "--batches",
    default=None,
    help="Comma-separated request counts to probe (default: every batch that needs padding).",
)
@click.option(
    "--schedule",
    "schedule_file",
    default=None,
    metavar="FILE.json",
    help="A live-server schedule to probe (per-step requests; see the README) instead of "
    "the default one (which --batches leaves out).",
)
@click.option(
    "--no-isolation", is_flag=True, help="Run cases in this process (faster; a crash ends the run)."
)
@click.option(
    "--workers",
    type=int,
    default=None,
    help="Worker processes at once (default: one per CPU core; on a GPU at most 4).",
)
@timeout_option(900.0, "Seconds per case (a case still running then is reported as a hang).")
@click.option("--list-behaviors", is_flag=True, help="Explain each --behavior and exit.")
@fail_on_option("error")
@output_files(ProbeRun, refusals=True)
@output_options
def command(
    model_dir: str | None,
    pool: str | None,
    batches: str | None,
    schedule_file: str | None,
    modes: tuple[str, ...],
    no_isolation: bool,
    workers: int | None,
    timeout: float,
    list_behaviors: bool,
    fail_on: str,
    rank_limits: RankLimits,
    outputs: Outputs,
    app: App,
    **kwargs: Any,
) -> None:
    """Find stale-buffer and out-of-bounds reads by poisoning padding regions.

    Each case (mode × padded batch) runs in its own process: capture with guards compiled in,
    dirty every buffer with a large batch, shrink it, poison every padding region and unowned
    KV block, and run the padded step twice with two sentinels. --mode may be given several
    times, or as `all`. Plans for a few requests (see --max-num-seqs): padding bugs need
    only a few, and fewer requests mean fewer, faster graphs.
    """
    if list_behaviors:
        from eaglegraph.reports.probe_view import render_behaviors
        from eaglegraph.results.behaviors import BEHAVIORS_SCHEMA, BehaviorList

        app.emit(BEHAVIORS_SCHEMA, BehaviorList.known(), render_behaviors)
        return
    from eaglegraph.errors import BadInput
    from eaglegraph.results.findings import reaches

    if model_dir is None:
        raise BadInput("give a MODEL_DIR or a preset name (or --list-behaviors)")
    if workers is not None and workers < 1:
        raise BadInput(f"--workers must be at least 1, got {workers}")
    if no_isolation:
        _warn_unused_with_no_isolation(app.ctx)
    plan, layout = pop_plan_and_layout(kwargs)
    refuse_tree(plan)
    check_choices(model_dir, None, None, plan)  # before torch is imported
    if not layout.single:
        outputs.refuse_beyond(RankedRun, f"a probe at {layout.describe()}")
    from eaglegraph.probes.schedules import load_schedule

    # a bad file is refused before torch is imported
    schedules = None if schedule_file is None else (load_schedule(schedule_file),)
    from eaglegraph.probes.probing import ProbeRequest, live_schedules

    request = ProbeRequest.for_model(
        model_dir,
        plan,
        pop_rig_kwargs(kwargs),
        pool=pool,
        modes=tuple(m for value in modes or ("all",) for m in value.split(",") if m),
        batches=_batches(batches),
        isolate=not no_isolation,
        timeout=timeout,
        workers=workers,
        schedules=schedules,
    )
    spec = request.spec
    live_schedules(spec, schedules, request.batches)  # checked before any work
    warn_suspicious(spec.open_pair(), spec.options, spec.max_model_len, force=outputs.force)
    if not layout.single:
        from eaglegraph.probes.ranks import RankRequest, run_ranks

        args = {"modes": list(request.modes), "batches": list(request.batches or [])}
        ranked = RankRequest(
            spec,
            layout,
            task="probe",
            args=args,
            command="probe",
            limits=rank_limits,
        )
        with app.progress(f"probe at {layout.describe()}") as progress:
            result = run_ranks(ranked, on_stage=lambda s: progress(s, milestone=s))
        code = 1 if reaches(result.findings, fail_on) else 0
        app.finish(result, outputs, result.exit_code if result.interrupted else code)
        return
    with app.progress("probe", total=None) as progress:
        run = request.run(
            on_plan=lambda cases: progress(
                total=len(cases), milestone=f"{len(cases)} cases planned"
            ),
            on_case=lambda name, result: progress(
                f"case {name}" + ("" if result is None else f": {result.status}"),
                advance=0 if result is None else 1,
                milestone=None if result is None else f"case {name}: {result.status}",
            ),
        )
    app.finish(run, outputs, 1 if reaches(run.findings, fail_on) else 0)


def _batches(text: str | None) -> tuple[int, ...] | None:
    """--batches 1,3 as request counts; None: every batch that needs padding."""
    from eaglegraph.errors import BadInput

    if text is None:
        return None
    if any(not b.strip() for b in text.split(",")):
        raise BadInput(f"--batches {text!r} has an empty entry", "e.g. --batches 1,3")
    try:
        return tuple(int(b) for b in text.split(","))
    except ValueError:
        raise BadInput(f"--batches: expected comma-separated integers, got {text!r}") from None


def _warn_unused_with_no_isolation(ctx: click.Context) -> None:
    """--timeout and --workers act on worker processes; --no-isolation has none."""
    why = {
        "timeout": "this process cannot stop a case that hangs",
        "workers": "cases run one after another in this process",
    }
    for name, reason in why.items():
        source = ctx.get_parameter_source(name)
        if source is not None and source.name == "COMMANDLINE":
            click.echo(
                f"eaglegraph: warning: --{name} has no effect with --no-isolation: {reason}",
                err=True,
            )
