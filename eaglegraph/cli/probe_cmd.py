"""`eaglegraph probe`: poison padding regions, replay at padded batches, report stale reads."""

from __future__ import annotations

from typing import Any

import click

from eaglegraph.cli.app import make_app, output_options
from eaglegraph.cli.options import Seconds, fail_on_option, plan_options_for, warn_suspicious
from eaglegraph.cli.outputs import Writes, check_outputs
from eaglegraph.cli.rig_options import build_spec, rig_options
from eaglegraph.rig.options import PROBE_MAX_NUM_SEQS

PROBE_DEFAULT_SEQS = PROBE_MAX_NUM_SEQS  # what `explore` plans with, as probe does


def _list_behaviors(app: Any) -> None:
    from rich.table import Table

    from eaglegraph.known.profiles import FLAGS, PROFILES

    rows = [
        {
            "name": b.name,
            "framework": b.engine,
            "summary": b.summary,
            "versions": b.versions.describe(),
            "flags": {name: {"on": on, "ref": ref} for name, (on, ref) in b.flag_refs().items()},
            "default_pool": b.default_pool,
        }
        for b in PROFILES.values()
    ]

    def render(data: dict[str, Any], console: Any) -> None:
        table = Table(title="Behaviors", title_justify="left", show_lines=True)
        table.add_column("behavior", style="bold", no_wrap=True)
        table.add_column("what it reproduces", overflow="fold")
        for row in data["behaviors"]:
            flags = [
                f"{'✓' if f['on'] else '✗'} {name} ({f['ref']})"
                for name, f in row["flags"].items()
                if FLAGS[name].engine == row["framework"]
            ]
            releases = f"releases {row['versions']}"
            table.add_row(
                row["name"], row["summary"] + "\n[dim]" + "\n".join([releases, *flags]) + "[/dim]"
            )
        console.print(table)
        console.print("[dim]flags:[/dim]")
        for name, flag in FLAGS.items():
            console.print(f"  [bold]{name}[/bold] ({flag.ref}): {flag.meaning}")

    app.emit("eaglegraph.behaviors/1", {"behaviors": rows}, render)


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
@click.option(
    "--pool",
    type=click.Choice(["shared", "dedicated", "per-graph"]),
    default=None,
    help="Graph pool policy for the captures (default: the behavior's).",
)
@click.option(
    "--batches",
    default=None,
    help="Comma-separated request counts to probe (default: every batch that needs padding).",
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
@click.option(
    "--timeout",
    type=Seconds(),
    default=900.0,
    show_default=True,
    help="Seconds per case (a case still running then is reported as a hang).",
)
@click.option("--list-behaviors", is_flag=True, help="Explain each --behavior and exit.")
@click.option(
    "--save",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the run (eaglegraph.probe/1).",
)
@click.option("--force", is_flag=True, help="Replace an existing --save file.")
@fail_on_option("error")
@output_options
@click.pass_context
def command(
    ctx: click.Context,
    model_dir: str | None,
    pool: str | None,
    batches: str | None,
    modes: tuple[str, ...],
    no_isolation: bool,
    workers: int | None,
    timeout: float,
    list_behaviors: bool,
    save: str | None,
    force: bool,
    fail_on: str,
    json_output: bool,
    no_color: bool,
    **kwargs: Any,
) -> None:
    """Find stale-buffer and out-of-bounds reads by poisoning padding regions.

    Each case (mode × padded batch) runs in its own process: capture with guards compiled in,
    dirty every buffer with a large batch, shrink it, poison every padding region and unowned
    KV block, and run the padded step twice with two sentinels. --mode may be given several
    times, or as `all`. Plans for a few requests (see --max-num-seqs): padding bugs need
    only a few, and fewer requests mean fewer, faster graphs.
    """
    app = make_app(ctx, json_output, no_color)
    if list_behaviors:
        _list_behaviors(app)
        return
    from eaglegraph.errors import BadInput
    from eaglegraph.probes.probing import probe
    from eaglegraph.reports.probe_view import render_probe
    from eaglegraph.results.findings import reaches
    from eaglegraph.results.probe import PROBE_SCHEMA
    from eaglegraph.serial import atomic_write, document, dumps

    if model_dir is None:
        raise BadInput("give a MODEL_DIR or a preset name (or --list-behaviors)")
    if workers is not None and workers < 1:
        raise BadInput(f"--workers must be at least 1, got {workers}")
    if no_isolation:
        _warn_unused_with_no_isolation(ctx)
    check_outputs({"--save": save}, force=force, inputs=(model_dir,))
    selected = [m for value in modes or ("all",) for m in value.split(",") if m]
    wanted = None
    if batches is not None:
        if any(not b.strip() for b in batches.split(",")):
            raise BadInput(f"--batches {batches!r} has an empty entry", "e.g. --batches 1,3")
        try:
            wanted = [int(b) for b in batches.split(",")]
        except ValueError:
            raise BadInput(
                f"--batches: expected comma-separated integers, got {batches!r}"
            ) from None
    if kwargs.get("compile_model") is None:  # stale reads do not depend on compilation,
        kwargs["compile_model"] = False  # and each isolated case would compile again
    spec = build_spec(model_dir, kwargs, pool=pool, default_max_num_seqs=PROBE_MAX_NUM_SEQS)
    warn_suspicious(spec.open_pair(), spec.options, spec.max_model_len)
    with app.progress("probe", total=None) as progress:
        run = probe(
            spec,
            modes=selected,
            batches=wanted,
            isolate=not no_isolation,
            timeout=timeout,
            workers=workers,
            on_plan=lambda cases: progress(
                total=len(cases), milestone=f"{len(cases)} cases planned"
            ),
            on_case=lambda name, result: progress(
                f"case {name}" + ("" if result is None else f": {result.status}"),
                advance=0 if result is None else 1,
                milestone=None if result is None else f"case {name}: {result.status}",
            ),
        )
    writes = Writes()
    if save:
        text = dumps(document(PROBE_SCHEMA, run)) + "\n"
        writes.write("--save", save, lambda: atomic_write(save, text, overwrite=force))
    app.emit(PROBE_SCHEMA, run, render_probe)
    writes.finish(ctx, 1 if reaches(run.findings, fail_on) else 0)


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
