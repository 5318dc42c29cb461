"""`eaglegraph report RUN.json`: re-render any saved run, or export it (HTML, trace, ...)."""

from __future__ import annotations

import click

from eaglegraph.cli.app import App, output_options
from eaglegraph.cli.outputs import Outputs, output_files
from eaglegraph.reports.runfile import SAVED_RUNS


@click.command("report")
@click.argument("run_file", metavar="RUN.json")
@output_files(*SAVED_RUNS, inputs=("run_file",), rerender=True)
@output_options
def command(run_file: str, outputs: Outputs, app: App) -> None:
    """Re-render a saved run: the `--save` or `--json` output of capture, memdiff, probe,
    inspect, triage, env or stacks.

    With an output file (--html, --trace, --markdown) the files are written (atomically,
    never over an existing file unless --force) and the terminal view is skipped; --json
    prints the run's document. --trace needs a run with a capture timeline (capture, memdiff).
    """
    from eaglegraph.results import load_run

    run = load_run(run_file)
    outputs.refuse_unsupported(run, run_file)
    app.finish(run, outputs, view=not outputs)
