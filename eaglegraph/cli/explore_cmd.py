"""`eaglegraph explore RUN.json | MODEL_DIR`: drill from a finding to its cause, interactively.

A saved run opens as it is. A model folder (or preset) is inspected first; from inside the app
`c` starts a capture and `r` a probe with the same options, each built here (the command layer)
and run in the app's worker thread. `--html` writes the same explorer as one browser page.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from eaglegraph.cli.app import make_app, output_options
from eaglegraph.cli.options import plan_options, pop_plan_kwargs
from eaglegraph.cli.outputs import check_outputs
from eaglegraph.cli.rig_options import pop_rig_kwargs, rig_options
from eaglegraph.errors import BadInput

EXPLORE_SCHEMA = "eaglegraph.explore/1"


@click.command("explore")
@click.argument("source", metavar="RUN.json|MODEL_DIR")
@plan_options
@rig_options
@click.option("--html", "html_path", metavar="FILE", default=None, help="Write the HTML explorer.")
@click.option("--force", is_flag=True, help="Replace an existing --html file.")
@click.option(
    "--export-dir",
    type=click.Path(file_okay=False),
    default=".",
    help="Where `x` writes the view's SVG and the selection's JSON.",
)
@output_options
@click.pass_context
def command(
    ctx: click.Context,
    source: str,
    html_path: str | None,
    force: bool,
    export_dir: str,
    json_output: bool,
    no_color: bool,
    **kwargs: Any,
) -> None:
    """Explore a saved run (capture, memdiff, probe, inspect, triage) or a model folder.

    Keys: arrows move, Tab + Enter follow a link, b back, / search, p/s/k filter by phase,
    severity, kind, t timeline, x export, ? help, q quit; on a MODEL_DIR, c starts a capture
    and r a probe with these options. With --html the explorer is written
    as one self-contained page; --json prints the explorer's nodes and links.
    """
    app = make_app(ctx, json_output, no_color)
    check_outputs({"--html": html_path}, force=force, inputs=(source,))
    plan_kwargs = pop_plan_kwargs(kwargs)
    rig_kwargs = pop_rig_kwargs(kwargs)
    run, actions = _open(source, plan_kwargs, rig_kwargs)
    if html_path:
        from eaglegraph.reports.explore_html import write_explorer_html

        click.echo(f"wrote {write_explorer_html(run, html_path, overwrite=force)}", err=True)
    if app.json_output:
        from eaglegraph.reports.explore_model import build
        from eaglegraph.serial import dumps

        model = build(run).to_json()
        model["run_schema"] = model.pop("schema")
        click.echo(dumps({"schema": EXPLORE_SCHEMA, **model}))
    if html_path or app.json_output:
        return
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise BadInput("explore needs a terminal", "use --html FILE or --json to export instead")
    from eaglegraph.reports.explore_app import ExploreApp

    ExploreApp(run, actions=actions, export_dir=export_dir).run()


def _open(source: str, plan_kwargs: dict[str, Any], rig_kwargs: dict[str, Any]) -> Any:
    """A saved run as it is; a model folder inspected, with capture and probe ready to start."""
    path = Path(source)
    if path.is_file():
        from eaglegraph.results import load_run

        return load_run(path), {}
    from eaglegraph.rig.inspect import inspect_pair, open_pair
    from eaglegraph.rig.options import resolve_plan_options

    pair = open_pair(source, None, None)
    hint = pair.draft_facts.speculative_tokens if pair.draft_facts else None
    options = resolve_plan_options(**plan_kwargs, default_num_speculative_tokens=hint)
    dtype = rig_kwargs.get("dtype") or "auto"
    report = inspect_pair(pair, options, None if dtype == "auto" else dtype)
    return report, {
        "capture": lambda progress: _capture(source, plan_kwargs, rig_kwargs, progress),
        "probe": lambda progress: _probe(source, plan_kwargs, rig_kwargs, progress),
    }


def _capture(source: str, plan_kwargs: dict, rig_kwargs: dict, progress: Any) -> Any:
    """The capture `c` starts: the same spec `eaglegraph capture` builds from these options."""
    from eaglegraph.probes.capture import CaptureRequest, run_capture
    from eaglegraph.probes.spec import resolve_run
    from eaglegraph.rig.plan import build_plan

    spec = resolve_run(source, plan=dict(plan_kwargs), **rig_kwargs)
    total = sum(p.descriptor_count for p in build_plan(spec.options).phases) or 1
    done = [0]

    def on_event(e: Any) -> None:
        done[0] += 1
        progress(f"graph {done[0]}/{total}: {e.phase} {e.descriptor}", done[0] / total)

    request = CaptureRequest.from_spec(spec)
    return run_capture(
        spec.open_pair(), request, on_event=on_event, on_stage=lambda s: progress(s, None)
    )


def _probe(source: str, plan_kwargs: dict, rig_kwargs: dict, progress: Any) -> Any:
    """The probe `r` starts: every padded batch of the --mode given (default all), each case
    in its own worker process, as `eaglegraph probe` runs it."""
    from eaglegraph.probes.probing import PROBE_DEFAULT_SEQS, probe
    from eaglegraph.probes.spec import resolve_run

    plan = dict(plan_kwargs)
    mode = plan.pop("mode", None)
    rig = dict(rig_kwargs)
    if rig.get("compile_model") is None:  # as `probe`: stale reads do not depend on it
        rig["compile_model"] = False
    spec = resolve_run(source, plan=plan, default_max_num_seqs=PROBE_DEFAULT_SEQS, **rig)
    total, done = [0], [0]

    def on_plan(cases: list[Any]) -> None:
        total[0] = len(cases)
        progress(f"{total[0]} cases planned", 0.0)

    def on_case(name: str, result: Any) -> None:
        if result is None:
            progress(f"case {done[0] + 1}/{total[0]}: {name}", done[0] / max(total[0], 1))
        else:
            done[0] += 1
            progress(f"case {name}: {result.status}", done[0] / max(total[0], 1))

    return probe(spec, modes=[mode] if mode else ["all"], on_plan=on_plan, on_case=on_case)
