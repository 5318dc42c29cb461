"""`eaglegraph report`: re-render, export, and one-line exit 2 for every bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from eaglegraph.cli import cli
from eaglegraph.results import schema_of
from eaglegraph.results.capture import CaptureRun
from eaglegraph.results.memdiff import MemdiffRun
from eaglegraph.serial import document, dumps
from tests.reports.runs import emulated_run, memdiff_run, oom_run


def invoke(*args: str, env: dict[str, str | None] | None = None) -> Result:
    return CliRunner().invoke(cli, ["report", *args], env=env)


def save(run: CaptureRun | MemdiffRun, path: Path) -> Path:
    path.write_text(dumps(document(schema_of(run), run)), encoding="utf-8")
    return path


def assert_one_line_error(result: Result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("eaglegraph: error: ")
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in lines[0]


def test_renders_a_capture_run(tmp_path: Path) -> None:
    result = invoke(str(save(oom_run(), tmp_path / "run.json")))
    assert result.exit_code == 0, result.output
    assert "Capture timeline" in result.stdout and "capture out of memory" in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 80


def test_renders_a_memdiff_run(tmp_path: Path) -> None:
    result = invoke(str(save(memdiff_run(), tmp_path / "md.json")))
    assert result.exit_code == 0, result.output
    assert "Memdiff" in result.stdout and "PR #44078's number, not ours" in result.stdout


@pytest.mark.parametrize("make", [oom_run, memdiff_run], ids=["capture", "memdiff"])
def test_json_prints_the_same_document(make: object, tmp_path: Path) -> None:
    run = make()  # type: ignore[operator]
    path = save(run, tmp_path / "run.json")
    result = invoke(str(path), "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == json.loads(path.read_text(encoding="utf-8"))


def test_root_json_flag_works_too(tmp_path: Path) -> None:
    path = save(emulated_run(), tmp_path / "run.json")
    result = CliRunner().invoke(cli, ["--json", "report", str(path)])
    assert json.loads(result.stdout)["schema"] == "eaglegraph.capture/1"


def test_html_and_trace_are_written(tmp_path: Path) -> None:
    path = save(memdiff_run(), tmp_path / "md.json")
    html, trace = tmp_path / "md.html", tmp_path / "md.trace.json"
    result = invoke(str(path), "--html", str(html), "--trace", str(trace))
    assert result.exit_code == 0, result.output
    assert result.stdout == "", "exports skip the terminal view"
    assert f"wrote {html}" in result.stderr and f"wrote {trace}" in result.stderr
    assert "PR #44078" in html.read_text(encoding="utf-8")
    doc = json.loads(trace.read_text(encoding="utf-8"))
    assert {e["pid"] for e in doc["traceEvents"]} == {1, 2}


def test_exports_with_json_still_print_the_document(tmp_path: Path) -> None:
    path = save(oom_run(), tmp_path / "run.json")
    result = invoke(str(path), "--trace", str(tmp_path / "t.json"), "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["schema"] == "eaglegraph.capture/1"


def test_existing_outputs_need_force(tmp_path: Path) -> None:
    path = save(oom_run(), tmp_path / "run.json")
    html, trace = tmp_path / "out.html", tmp_path / "out.json"
    trace.write_text("keep me", encoding="utf-8")
    result = invoke(str(path), "--html", str(html), "--trace", str(trace))
    assert_one_line_error(result, "out.json already exists", "--force")
    assert trace.read_text(encoding="utf-8") == "keep me"
    assert not html.exists(), "nothing is written when any output is refused"
    result = invoke(str(path), "--html", str(html), "--trace", str(trace), "--force")
    assert result.exit_code == 0, result.output
    assert json.loads(trace.read_text(encoding="utf-8"))["traceEvents"]


def test_never_writes_over_the_run_file(tmp_path: Path) -> None:
    path = save(oom_run(), tmp_path / "run.json")
    before = path.read_text(encoding="utf-8")
    assert_one_line_error(
        invoke(str(path), "--html", str(path), "--force"), "is an input of this command"
    )
    assert path.read_text(encoding="utf-8") == before


def test_same_file_for_both_exports(tmp_path: Path) -> None:
    path = save(oom_run(), tmp_path / "run.json")
    out = str(tmp_path / "x")
    assert_one_line_error(invoke(str(path), "--html", out, "--trace", out), "both name")


def test_corrupt_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text('{"schema": "eaglegraph.capture/1",\n  "events": [1,, 2]}', encoding="utf-8")
    assert_one_line_error(invoke(str(path)), "invalid JSON at line 2, column 16")


def test_foreign_schema(tmp_path: Path) -> None:
    path = tmp_path / "behaviors.json"
    path.write_text(json.dumps({"schema": "eaglegraph.behaviors/1"}), encoding="utf-8")
    assert_one_line_error(invoke(str(path)), "eaglegraph.behaviors/1", "not a saved run")
    path.write_text(json.dumps({"schema": "eaglegraph.inspect/1", "plan": {}}), encoding="utf-8")
    assert_one_line_error(invoke(str(path)), "missing root, layout, missing, target, draft")
    path.write_text(json.dumps({"traceEvents": []}), encoding="utf-8")
    assert_one_line_error(invoke(str(path)), "no 'schema' key")


def test_missing_keys_and_wrong_types(tmp_path: Path) -> None:
    doc = json.loads(dumps(document("eaglegraph.capture/1", oom_run())))
    del doc["events"][0]["num_tokens"]
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert_one_line_error(invoke(str(path)), "run.json: events[0]: missing num_tokens")
    doc = json.loads(dumps(document("eaglegraph.memdiff/1", memdiff_run())))
    doc["total_a"] = "lots"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert_one_line_error(invoke(str(path)), "total_a must be an integer, not string")


def test_directory_and_missing_run_file(tmp_path: Path) -> None:
    assert_one_line_error(invoke(str(tmp_path)), "is a directory")
    assert_one_line_error(invoke(str(tmp_path / "none.json")), "does not exist")


def test_directory_as_output(tmp_path: Path) -> None:
    path = save(oom_run(), tmp_path / "run.json")
    assert_one_line_error(invoke(str(path), "--html", str(tmp_path)), "is a directory")


def test_no_color_means_no_ansi(tmp_path: Path) -> None:
    path = save(oom_run(), tmp_path / "run.json")
    forced: dict[str, str | None] = {"FORCE_COLOR": "1", "NO_COLOR": None}
    coloured = CliRunner().invoke(cli, ["report", str(path)], env=forced)
    assert "\x1b[" in coloured.stdout, "colour is on when forced, so the next check means something"
    plain = CliRunner().invoke(cli, ["report", str(path), "--no-color"], env=forced)
    assert plain.exit_code == 0 and "\x1b[" not in plain.stdout
    assert "capture out of memory" in plain.stdout
