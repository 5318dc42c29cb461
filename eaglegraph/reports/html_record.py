"""The terminal report recorded as HTML: one console setup for every HTML page.

A run page (`html.py`) and a multi-rank page (`html_ranks.py`) both embed the same rich view
the terminal prints; recording it in one place keeps their fonts, colours and wrapping alike.
"""

from __future__ import annotations

import io

from rich.console import Console

from eaglegraph.reports.runfile import render_run

# The <pre> a recorded report sits in: a monospace stack that renders box drawing evenly.
PRE = (
    "<pre style=\"font-family:Menlo,'DejaVu Sans Mono',consolas,'Courier New',monospace\">"
    '<code style="font-family:inherit">{code}</code></pre>'
)


def recording_console(width: int) -> Console:
    """A truecolor console that records instead of printing, `width` columns wide."""
    return Console(
        record=True,
        width=width,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        highlight=False,
        soft_wrap=False,
    )


def recorded_report(run: object, width: int) -> str:
    """A run's terminal report as an HTML fragment with inline styles."""
    console = recording_console(width)
    render_run(run, console)
    return console.export_html(inline_styles=True, code_format=PRE)
