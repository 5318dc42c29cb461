"""`eaglegraph explore RUN.json | MODEL_DIR`: drill from a finding to its cause, interactively.

A saved run opens as it is. A model folder (or preset) is inspected first; from inside the app
`c` starts a capture and `r` a probe with the same options, each built as the matching command
builds it (probes/explore.py) and run in the app's worker thread. `--html` writes the same
explorer as one browser page, with the terminal view under it.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from eaglegraph.cli.app import App, output_options
from eaglegraph.cli.options import plan_options, pop_plan_kwargs
from eaglegraph.cli.outputs import Outputs, check_folder, output_files
from eaglegraph.cli.rig_options import pop_rig_kwargs, rig_options
from eaglegraph.errors import BadInput
from eaglegraph.reports.runfile import SAVED_RUNS

EXPLORE_SCHEMA = "eaglegraph.explore/1"


@click.command("explore")
@click.argument("source", metavar="RUN.json|MODEL_DIR")
@plan_options
@rig_options
@click.option(
    "--export-dir",
    type=click.Path(file_okay=False),
    default=".",
    help="Where `x` writes the view's SVG and the selection's JSON.",
)
@output_files(*SAVED_RUNS, inputs=("source",), rerender=True)
@output_options
def command(
    source: str,
    export_dir: str,
    outputs: Outputs,
    app: App,
    **kwargs: Any,
) -> None:
    """Explore a saved run (capture, memdiff, probe, inspect, triage) or a model folder.

    Keys: arrows move, Tab + Enter follow a link, b back, / search, p/s/k filter by phase,
    severity, kind, t timeline, x export, ? help, q quit; on a MODEL_DIR, c starts a capture
    and r a probe with these options. With --html the explorer is written
    as one self-contained page; --json prints the explorer's nodes and links.
    """
    source_of = app.ctx.get_parameter_source("export_dir")
    if source_of is not None and source_of.name == "COMMANDLINE":  # `x` must not fail late
        check_folder("--export-dir", export_dir)
    from eaglegraph.probes.explore import open_source

    run, actions = open_source(source, pop_plan_kwargs(kwargs), pop_rig_kwargs(kwargs))
    outputs.refuse_unsupported(run, source)
    outputs.write(run).finish_unless_ok(app.ctx)
    if app.json_output:
        from eaglegraph.reports.explore_ranks import explorer_of as build
        from eaglegraph.serial import dumps

        model = build(run).to_json()
        model["run_schema"] = model.pop("schema")
        click.echo(dumps({"schema": EXPLORE_SCHEMA, **model}))
    if outputs or app.json_output:
        return
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise BadInput("explore needs a terminal", "use --html FILE or --json to export instead")
    from eaglegraph.reports.explore_app import ExploreApp

    ExploreApp(run, actions=actions, export_dir=export_dir).run()
