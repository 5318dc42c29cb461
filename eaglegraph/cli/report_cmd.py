"""`eaglegraph report RUN.json`: re-render any saved run, or export it (HTML, Chrome trace)."""

from __future__ import annotations

from pathlib import Path

import click

from eaglegraph.cli.app import make_app, output_options
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

    outputs = [p for p in (html_path, trace_path) if p is not None]
    _check_outputs(Path(run_file), outputs, force)
    run = load_run(run_file)
    if trace_path is not None and not has_timeline(run):
        raise BadInput(
            f"{run_file} is a {schema_of(run)} run: it has no capture timeline to trace",
            "--trace works for capture and memdiff runs; use --html or --json",
        )
    if html_path is not None:
        from eaglegraph.reports.html import write_html

        _wrote(write_html(run, html_path, overwrite=force))
    if trace_path is not None:
        from eaglegraph.reports.trace import write_trace

        _wrote(write_trace(run, trace_path, overwrite=force))
    if app.json_output or not outputs:
        app.emit(schema_of(run), run, render_run)


def _wrote(path: Path) -> None:
    """On stderr and unwrapped, so `--json` stdout stays clean and paths stay copyable."""
    click.echo(f"wrote {path}", err=True)


def _check_outputs(run_file: Path, outputs: list[str], force: bool) -> None:
    """Refuse before writing anything, so a bad second path never leaves a half-done export."""
    if len(outputs) == 2 and Path(outputs[0]).resolve() == Path(outputs[1]).resolve():
        raise BadInput("--html and --trace name the same file")
    for out in map(Path, outputs):
        if out.is_dir():
            raise BadInput(f"{out} is a directory, expected a file path")
        if out.exists() and run_file.exists() and out.resolve() == run_file.resolve():
            raise BadInput(f"{out} is the run file itself; choose another output path")
        if out.exists() and not force:
            raise BadInput(f"{out} already exists", "pass --force to replace it")
