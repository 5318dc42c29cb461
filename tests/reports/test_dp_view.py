"""The DP run's terminal view fits 80 columns and shows what the result holds; its JSON is the
serial helpers' plain form of the same result."""

from __future__ import annotations

import io
import json

from eaglegraph.known.dp_scenarios import SCENARIOS
from eaglegraph.probes.dp_scenarios import explore, run_scenario
from eaglegraph.reports.console import plain_console
from eaglegraph.reports.dp_view import render_dp_run
from eaglegraph.results.dp import DP_SCHEMA
from eaglegraph.serial import document


def _render(run: object) -> str:
    buf = io.StringIO()
    render_dp_run(run, plain_console(80, file=buf))  # type: ignore[arg-type]
    return buf.getvalue()


def test_view_marks_the_diverging_step_and_fits_80_columns() -> None:
    run = run_scenario(SCENARIOS["vllm-drafter-phase-shift"], "vllm-v1-0.11-dp")
    text = _render(run)
    assert max(map(len, text.splitlines())) <= 80
    assert "verdict: diverges (expected diverges: as expected)" in text
    assert "▶ 0" in text and "▶ 1" in text
    assert "draft_decode 1-2 eager" in text  # the K-1 draft decodes folded into one range
    assert "dp.collectives" in text and "rank 1 has no such sync" in text
    clean = _render(run_scenario(SCENARIOS["vllm-drafter-phase-shift"], "vllm-current"))
    assert "verdict: clean" in clean and "▶" not in clean and "Findings: none" in clean


def test_exploration_view_and_json() -> None:
    run = explore("sglang-current", 7, dp_size=4, steps=3, engine="sglang")
    text = _render(run)
    assert max(map(len, text.splitlines())) <= 80
    assert "random per-rank batches, seed 7" in text and "rule sglang-mlp-sync" in text
    doc = json.loads(json.dumps(document(DP_SCHEMA, run)))
    assert doc["schema"] == DP_SCHEMA and doc["dp_size"] == 4 and doc["verdict"] == "clean"
    assert len(doc["rows"]) == 11 and len(doc["steps"][0]["ranks"]) == 4
