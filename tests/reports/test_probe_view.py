"""The probe's terminal view at 80×24: what a case found, the findings and the summary last,
the padding-region words meaning what they say, and the next command."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from eaglegraph.reports.probe_view import render_probe
from eaglegraph.results.probe import ProbeRun
from eaglegraph.results.registry import load_run

RUN = Path(__file__).parents[1] / "fixtures" / "runs" / "probe-flashinfer-pre39773.json"


def screen(run: ProbeRun, width: int = 80) -> list[str]:
    out = io.StringIO()
    render_probe(run, Console(file=out, width=width, no_color=True, highlight=False))
    return out.getvalue().splitlines()


def found() -> ProbeRun:
    run = load_run(RUN)
    assert isinstance(run, ProbeRun) and run.findings
    return run


def clean() -> ProbeRun:
    """The same run as if the release were fixed: no findings, no reads, no hits."""
    run = found()
    cases = [replace(c, violations=[]) for c in run.cases]
    matrix = [replace(row, reads={}) for row in run.matrix]
    return replace(run, findings=[], cases=cases, matrix=matrix)


def test_a_case_that_found_something_does_not_say_ok() -> None:
    (row,) = [line for line in screen(found()) if "piecewise-b3" in line]
    assert "findings" in row and " ok " not in row
    (row,) = [line for line in screen(clean()) if "piecewise-b3" in line]
    assert " ok " in row


def test_the_last_screen_holds_the_summary_the_fix_and_the_next_command() -> None:
    last = "\n".join(screen(found())[-24:])  # what an 80×24 terminal shows when it ends
    assert "Summary" in last
    assert "✖ stale-read draft.kv_indptr in draft_decode" in last
    assert "fix: use vLLM ≥ 0.20 (PR #39773)" in last
    assert "eaglegraph explore RUN.json" in last
    # the run was under an old profile: the newest one is the command to check next
    assert "eaglegraph probe tiny-llama-eagle3 --behavior vllm-current --mode PIECEWISE" in last


def test_padding_words_say_what_they_mean() -> None:
    lines = screen(found())
    # only the regions that were read get a row; the rest are one line
    rows = [line for line in lines if line.startswith(("draft.", "eagle.", "target.", "verify."))]
    assert [r.split()[0] for r in rows] == ["draft.kv_indptr", "draft.last_page_len"]
    assert all(r.endswith("poison kept") for r in rows)
    assert any("28 more never read while poisoned" in line for line in lines)
    assert not any(line.split()[-1:] == ["stale"] for line in lines)


def test_a_clean_run_is_short_and_says_so() -> None:
    lines = screen(clean())
    text = "\n".join(lines)
    assert "all 30 never read while poisoned" in text and "poison kept 22" in text
    assert "clean: 1 case(s), no stale or out-of-bounds read under vllm-pre-39773" in text
    assert "eaglegraph capture tiny-llama-eagle3" in text
    assert "--behavior vllm-current" not in text  # nothing to compare against
    assert len(lines) <= 24
