"""HTML export: the explorer page of a run, with the terminal report recorded under it.

A run's page is the browser explorer (`explore_html`: tables, filters, drill-down links); the
same rich view the terminal prints is recorded into it, so the HTML never drifts from the
terminal. Inline styles and script keep the page a single file that can be attached to a ticket.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from eaglegraph.reports.exporters import Exporter
from eaglegraph.reports.html_record import recorded_report, recording_console
from eaglegraph.reports.runfile import SAVED_RUNS
from eaglegraph.results.capture import CaptureRun
from eaglegraph.results.rank_runs import RankedRun
from eaglegraph.results.registry import Run, schema_of
from eaglegraph.serial import atomic_write

RenderFn = Callable[[Console], None]

HTML_WIDTH = 120

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta name="generator" content="eaglegraph">
<title>{title}</title>
<style>
{{stylesheet}}
body {{{{
    color: {{foreground}};
    background-color: {{background}};
    margin: 1.5em;
}}}}
</style>
</head>
<body>
<pre style="font-family:Menlo,'DejaVu Sans Mono',consolas,'Courier New',monospace"><code style="font-family:inherit">{{code}}</code></pre>
</body>
</html>
"""


def render_html(
    source: Run | RenderFn, *, title: str | None = None, width: int = HTML_WIDTH
) -> str:
    """The report as an HTML page; `source` is a run or a function that prints to a console."""
    if callable(source):
        console = recording_console(width)
        source(console)
        page = _PAGE.format(title=html.escape(title or "eaglegraph report"))
        return console.export_html(inline_styles=True, code_format=page)
    from eaglegraph.reports.explore_html import render_explorer_html

    if isinstance(source, RankedRun):  # no explorer model for ranks: a section per rank
        from eaglegraph.reports.html_ranks import render_ranked_html

        return render_ranked_html(source, title=title, width=width)
    report = recorded_report(source, width)
    if isinstance(source, CaptureRun):  # the pools over time, drawn above the text
        from eaglegraph.reports.html_memory import memory_plot_svg

        report = memory_plot_svg(source) + report
    title = title or f"eaglegraph report — {schema_of(source)}"
    return render_explorer_html(source, title=title, report=report)


def write_html(
    source: Run | RenderFn,
    path: Path | str,
    overwrite: bool = False,
    *,
    title: str | None = None,
    width: int = HTML_WIDTH,
) -> Path:
    """Write the HTML report atomically; refuses to replace a file unless `overwrite`."""
    return atomic_write(path, render_html(source, title=title, width=width), overwrite=overwrite)


EXPORTER = Exporter(
    name="html",
    help="Write the report as one HTML page (the explorer, with the terminal view under it).",
    kinds=SAVED_RUNS,
    render=render_html,
)
