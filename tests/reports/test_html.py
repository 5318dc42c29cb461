"""HTML export: the same report as the terminal's, in one self-contained, atomic file."""

from __future__ import annotations

import html
import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from eaglegraph.errors import BadInput
from eaglegraph.reports.capture_view import render_capture
from eaglegraph.reports.html import HTML_WIDTH, render_html, write_html
from eaglegraph.reports.runfile import render_run
from eaglegraph.results.capture import CaptureRun
from eaglegraph.results.memdiff import MemdiffRun
from tests.reports.runs import emulated_run, memdiff_run, oom_run


def page_text(page: str) -> str:
    body = page[page.index("<code") : page.index("</code>")]
    return html.unescape(re.sub(r"<[^>]+>", "", body))


def terminal_text(run: CaptureRun | MemdiffRun) -> str:
    console = Console(record=True, width=HTML_WIDTH, file=io.StringIO(), color_system=None)
    render_run(run, console)
    return console.export_text()


@pytest.mark.parametrize("run", [oom_run(), emulated_run(), memdiff_run()])
def test_html_holds_the_terminal_report(run: CaptureRun | MemdiffRun, tmp_path: Path) -> None:
    path = write_html(run, tmp_path / "report.html")
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<title>eaglegraph report — " in page
    assert " src=" not in page and "<link" not in page and "@import" not in page  # one file
    assert 'id="model"' in page  # the explorer's model travels inside the page
    assert 'style="' in page  # inline styles, colours kept
    assert page_text(page).rstrip() == terminal_text(run).rstrip()


def test_html_escapes_run_text(tmp_path: Path) -> None:
    run = oom_run()
    assert run.failed is not None
    run.failed.error = "<script>alert(1)</script> & [bold]not markup[/bold]"
    page = write_html(run, tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    assert "\\u003cscript>alert" in page  # in the explorer's JSON model, escaped
    assert "[bold]not markup[/bold]" in page_text(page)


def test_render_function_source_and_title() -> None:
    page = render_html(lambda c: render_capture(oom_run(), c), title="ticket <42>")
    assert "<title>ticket &lt;42&gt;</title>" in page
    assert "capture out of memory" in page_text(page)


def test_refuses_to_overwrite_unless_asked(tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    path.write_text("mine", encoding="utf-8")
    with pytest.raises(BadInput, match="already exists"):
        write_html(oom_run(), path)
    assert path.read_text(encoding="utf-8") == "mine"
    write_html(oom_run(), path, overwrite=True)
    assert "Capture timeline" in path.read_text(encoding="utf-8")
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"], "no temporary file left"


def test_bad_destinations(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="is a directory"):
        write_html(oom_run(), tmp_path)
    with pytest.raises(BadInput, match="does not exist"):
        write_html(oom_run(), tmp_path / "missing" / "r.html")
