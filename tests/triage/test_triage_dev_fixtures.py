"""Every real report of the dev fixture is classified into its labelled category."""

from __future__ import annotations

import pytest

from eaglegraph.results.triage import CATEGORIES, TRIAGE_SCHEMA
from eaglegraph.serial import document, to_jsonable
from eaglegraph.triage.diagnose import triage_text

from .helpers_triage import TRIAGE_DOC_KEYS, assert_evidence_points_at_lines, dev_reports

REPORTS = dev_reports()

# vllm#44740's excerpt is a single truncated mode-downgrade warning: it carries no memory
# evidence at all (the negative estimate is only in the issue title, which the CLI never sees).
# Classifying it as pool-memory/oom would mean keying on this sample's exact string.
KNOWN_LIMITS = {
    44740: "excerpt holds only a truncated downgrade warning; the OOM evidence is in the title",
}


def _params():
    for r in REPORTS:
        marks = []
        if r["number"] in KNOWN_LIMITS:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_LIMITS[r["number"]]))
        yield pytest.param(r, id=f"{r['repo'].split('/')[1]}-{r['number']}", marks=marks)


def test_fixture_is_the_shared_one() -> None:
    assert len(REPORTS) == 13
    assert {r["category"] for r in REPORTS} <= set(CATEGORIES)


@pytest.mark.parametrize("report", _params())
def test_dev_report_category(report: dict) -> None:
    result = triage_text(report["log_excerpt"])
    assert result.category == report["category"], (result.scores, result.phase)


@pytest.mark.parametrize("report", REPORTS, ids=lambda r: str(r["number"]))
def test_dev_report_evidence_and_schema(report: dict) -> None:
    result = triage_text(report["log_excerpt"])
    assert_evidence_points_at_lines(result, report["log_excerpt"])
    assert 0.0 <= result.confidence <= 1.0
    doc = document(TRIAGE_SCHEMA, result)
    for key in TRIAGE_DOC_KEYS:
        assert key in doc
    assert doc["schema"] == "eaglegraph.triage/1"
    assert to_jsonable(result)["category"] in CATEGORIES


def _by_number(n: int) -> dict:
    return next(r for r in REPORTS if r["number"] == n)


def test_padded_replay_report_names_the_padding_and_the_segfault() -> None:
    result = triage_text(_by_number(25512)["log_excerpt"])
    assert result.primary_error is not None and result.primary_error.line == 2
    assert "Segmentation fault" in result.primary_error.text
    assert result.config.padding is not None
    assert (result.config.padding.raw_bs, result.config.padding.graph_bs) == (3, 4)
    assert result.framework == "sglang"
    assert "sgl-project/sglang#10892" in [f.ref for f in result.fixes]
    assert result.reproduce is not None and result.reproduce.startswith("eaglegraph probe ")
    assert "--behavior sglang-" in result.reproduce and "-K 3" in result.reproduce


def test_capture_traceback_without_error_line_is_capture_phase() -> None:
    result = triage_text(_by_number(48749)["log_excerpt"])
    assert result.phase.at_failure == "capture"
    assert result.config.runner == "mrv2"  # vllm/v1/worker/gpu/cudagraph_utils.py
    assert result.reproduce is not None and result.reproduce.startswith("eaglegraph capture ")


def test_shape_mismatch_is_primary_not_its_chained_traceback() -> None:
    text = _by_number(12421)["log_excerpt"]
    result = triage_text(text)
    assert result.primary_error is not None
    assert result.primary_error.line == 3
    assert "must match the size of tensor b (151936)" in result.primary_error.text
    # a config mismatch reproduces on the user's own checkpoint only: no preset command
    assert result.reproduce is None
    assert any("eaglegraph inspect DRAFT_DIR" in n for n in result.notes)
    assert any("vocab mismatch" in c for c in result.checks)
    assert result.alternatives and result.alternatives[0].category == "capture-failure"


def test_pyspy_excerpt_is_a_hang_stuck_in_sampling() -> None:
    result = triage_text(_by_number(35822)["log_excerpt"])
    assert result.category == "hang"
    assert result.phase.at_failure == "stuck"
    assert "sampling" in (result.phase.detail or "")


def test_eager_kernel_fault_without_graph_context_is_other() -> None:
    result = triage_text(_by_number(5491)["log_excerpt"])
    assert result.primary_error is not None and result.primary_error.line == 1
    assert result.alternatives[0].category == "stale-buffer-read"


def test_acceptance_table_is_read() -> None:
    result = triage_text(_by_number(54997)["log_excerpt"])
    acc = result.config.acceptance
    assert acc.samples == 3
    assert acc.rate_min == 0.0
    assert acc.rate_last == pytest.approx(0.923)
