"""`eaglegraph report RUN.json`: re-render any saved run, or export it (HTML, Chrome trace)."""

from __future__ import annotations

import click

from eaglegraph.cli.app import make_app, output_options
from eaglegraph.cli.outputs import Writes, check_outputs
from eaglegraph.errors import BadInput


@click.command("report")
@click.argument("run_file", metavar="RUN.json")
@click.option("--html", "html_path", metavar="FILE", default=None, help="Write the report as HTML.")
@click.option(
    "--trace",
    "trace_path",
    metavar="FILE",
    default=None,
    help="Write a Chrome trace (open in Perfetto or chrome://tracing).",
)
@click.option("--force", is_flag=True, help="Replace existing --html/--trace files.")
@output_options
@click.pass_context
def command(
    ctx: click.Context,
    run_file: str,
    html_path: str | None,
    trace_path: str | None,
    force: bool,
    json_output: bool,
    no_color: bool,
) -> None:
    """Re-render a saved run: the `--save` or `--json` output of capture, memdiff, probe,
    inspect, triage, env or stacks.

    With --html or --trace the files are written (atomically, never over an existing file
    unless --force) and the terminal view is skipped; --json prints the run's document.
    --trace needs a run with a capture timeline (capture, memdiff).
    """
    app = make_app(ctx, json_output, no_color)
    from eaglegraph.reports.runfile import has_timeline, render_run
    from eaglegraph.results import load_run, schema_of

    outputs = check_outputs(
        {"--html": html_path, "--trace": trace_path}, force=force, inputs=(run_file,)
    )
    run = load_run(run_file)
    if trace_path is not None and not has_timeline(run):
        raise BadInput(
            f"{run_file} is a {schema_of(run)} run: it has no capture timeline to trace",
            "--trace works for capture and memdiff runs; use --html or --json",
        )
    writes = Writes()
    if html_path is not None:
        from eaglegraph.reports.html import write_html

        writes.write("--html", html_path, lambda: write_html(run, html_path, overwrite=force))
    if trace_path is not None:
        from eaglegraph.reports.trace import write_trace

        writes.write("--trace", trace_path, lambda: write_trace(run, trace_path, overwrite=force))
    if app.json_output or not outputs or writes.failures:
        app.emit(schema_of(run), run, render_run)
    writes.finish(ctx, 0)
