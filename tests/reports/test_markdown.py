"""`--markdown FILE`: a run's summary for a ticket, from the registry like every output format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.reports.exporters import exporters_for
from eaglegraph.reports.markdown import cell, render_markdown
from eaglegraph.results import load_run, schema_of
from eaglegraph.results.capture import CaptureRun
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.results.stacks import StacksReport
from eaglegraph.serial import document, dumps
from tests.reports.runs import memdiff_run, oom_run

TRIAGE_LOG = Path(__file__).parents[1] / "triage" / "logs" / "vllm_mrv2_stale_ima.log"


def _table_rows(text: str, header: str, section: str | None = None) -> list[list[str]]:
    """The rows of the Markdown table whose header line starts with `| {header} |` (the first
    one after the heading `## {section}` when given)."""
    lines = text.splitlines()
    if section is not None:
        lines = lines[lines.index(f"## {section}") :]
    start = next(
        i
        for i, line in enumerate(lines[:-1])
        if line.startswith(f"| {header} |") and lines[i + 1].startswith("| --- |")
    )
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows


def test_capture_summary_names_the_failure_pools_and_findings() -> None:
    run = oom_run()
    text = render_markdown(run)
    assert text.startswith("# eaglegraph capture")
    assert "Schema `eaglegraph.capture/1`" in text
    assert f"**failed** at {run.failed.phase} {run.failed.descriptor}" in text  # type: ignore[union-attr]
    assert run.totals.vllm_line in text
    pools = _table_rows(text, "pool")
    assert [row[0] for row in pools] == [p.label for p in run.pools]
    assert [int(row[2]) for row in pools] == [p.graphs for p in run.pools]
    findings = _table_rows(text, "severity")
    assert findings == [
        ["error", "`capture-oom`", "—", "—", run.findings[0].message, run.findings[0].fix, "—"]
    ]


def test_memdiff_summary_has_both_policies_per_pool() -> None:
    run = memdiff_run()
    text = render_markdown(run)
    assert "## Pool memory: shared vs dedicated" in text
    assert "draft tokens over 48 steps: identical" in text
    rows = _table_rows(text, "pool")
    assert [row[0] for row in rows] == [d.label for d in run.per_pool]
    assert "No findings." in text


def test_cells_cannot_break_a_row() -> None:
    assert cell("a | b\nc") == "a \\| b c"
    assert cell(None) == "—" and cell(True) == "yes" and cell([1, 2]) == "1, 2"
    run = oom_run()
    run.findings = [Finding("x", Severity.WARNING, "pipe | and\nnewline")]
    rows = _table_rows(render_markdown(run), "severity")
    assert rows[0][4] == "pipe \\| and newline"


def test_registered_once_and_offered_where_it_renders() -> None:
    names = [e.name for e in exporters_for((CaptureRun,))]
    assert names == ["save", "html", "trace", "snapshot", "markdown"]
    assert "markdown" not in [e.name for e in exporters_for((StacksReport,))]
    for command in ("capture", "memdiff", "probe", "inspect", "triage", "env", "report"):
        result = CliRunner().invoke(cli, [command, "--help"])
        assert "--markdown FILE" in result.output, command


def test_inspect_markdown_file_matches_the_json_run(tmp_path: Path) -> None:
    out = tmp_path / "inspect.md"
    result = CliRunner().invoke(
        cli, ["inspect", "tiny-llama-eagle3", "--json", "--markdown", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.stderr
    doc = json.loads(result.stdout)
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# eaglegraph inspect")
    plan = dict(_table_rows(text, "setting", "Plan"))
    assert plan["framework"] == doc["plan"]["framework"]
    assert plan["K"] == str(doc["plan"]["num_speculative_tokens"])
    phases = _table_rows(text, "phase")
    assert [row[0] for row in phases] == [p["phase"] for p in doc["plan"]["phases"]]
    assert [int(row[2]) for row in phases] == [p["descriptor_count"] for p in doc["plan"]["phases"]]


def test_triage_markdown_names_class_and_reproduction(tmp_path: Path) -> None:
    out = tmp_path / "ticket.md"
    result = CliRunner().invoke(cli, ["triage", str(TRIAGE_LOG), "--markdown", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    saved = tmp_path / "triage.json"
    CliRunner().invoke(cli, ["triage", str(TRIAGE_LOG), "--save", str(saved)])
    run = load_run(saved)
    assert render_markdown(run) == text  # a saved run summarises like the live one
    diagnosis = dict(_table_rows(text, "setting"))
    assert diagnosis["failure class"] == run.category
    assert run.reproduce is not None and diagnosis["reproduce"] == f"`{run.reproduce}`"


def test_report_writes_markdown_and_refuses_what_it_cannot_render(tmp_path: Path) -> None:
    run = memdiff_run()
    saved = tmp_path / "run.json"
    saved.write_text(dumps(document(schema_of(run), run)), encoding="utf-8")
    out = tmp_path / "run.md"
    result = CliRunner().invoke(cli, ["report", str(saved), "--markdown", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""  # the file replaces the terminal view
    assert out.read_text(encoding="utf-8") == render_markdown(load_run(saved))
    again = CliRunner().invoke(cli, ["report", str(saved), "--markdown", str(out)])
    assert again.exit_code == 2 and "already exists" in again.stderr


@pytest.mark.parametrize("target", ["folder", "missing"])
def test_markdown_path_checked_before_the_work(tmp_path: Path, target: str) -> None:
    path = tmp_path if target == "folder" else tmp_path / "no" / "x.md"
    result = CliRunner().invoke(cli, ["triage", str(TRIAGE_LOG), "--markdown", str(path)])
    assert result.exit_code == 2
    assert "--markdown" in result.stderr and result.stdout == ""
