"""HTML export: the terminal report, recorded and written as one self-contained page.

Rendering the same rich views into a recording console (instead of keeping an HTML template)
means the HTML can never drift from what the terminal shows; inline styles keep the page a
single file that can be attached to a ticket.
"""

from __future__ import annotations

import html
import io
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from eaglegraph.reports.runfile import render_run
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
    console = Console(
        record=True,
        width=width,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        highlight=False,
        soft_wrap=False,
    )
    if callable(source):
        source(console)
        default_title = "eaglegraph report"
    else:
        render_run(source, console)
        default_title = f"eaglegraph report — {schema_of(source)}"
    page = _PAGE.format(title=html.escape(title or default_title))
    return console.export_html(inline_styles=True, code_format=page)


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
