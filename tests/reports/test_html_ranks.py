"""HTML export of a RankedRun: a section per rank, each with that rank's own report, and
findings that name their rank."""

from __future__ import annotations

from eaglegraph.reports.html import render_html
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.results.parallel import ParallelLayout
from eaglegraph.results.rank_runs import RankedRun, RankOutcome
from tests.reports.runs import cuda_run, emulated_run


def _ranked() -> RankedRun:
    ranks = [
        RankOutcome(rank=0, tp_rank=0, dp_rank=0, status="ok", capture=cuda_run()),
        RankOutcome(
            rank=1,
            tp_rank=1,
            dp_rank=0,
            status="stuck",
            error="waits in all_reduce #7",
            capture=emulated_run(),
        ),
    ]
    finding = Finding(
        id="rank-stuck", severity=Severity.ERROR, message="rank 1 never finished", rank=1
    )
    return RankedRun(
        layout=ParallelLayout(tp=2),
        command="capture",
        device="cpu",
        backend="gloo",
        ranks=ranks,
        findings=[finding],
        seconds=3.0,
        deadline_s=8.0,
    )


def test_html_has_a_section_per_rank_and_the_findings_rank() -> None:
    page = render_html(_ranked())
    assert page.count('class="rank"') == 2
    assert 'data-rank="0"' in page and 'data-rank="1"' in page
    assert "stuck" in page and "waits in all_reduce #7" in page
    assert "rank 1 never finished" in page


def test_trace_has_a_process_per_rank() -> None:
    from eaglegraph.reports.trace import trace_document

    doc = trace_document(_ranked())
    pids = {e["pid"] for e in doc["traceEvents"]}
    assert pids == {0, 1}


def test_explore_has_a_rank_level_and_findings_name_their_rank() -> None:
    from eaglegraph.reports.explore_ranks import explorer_of as build

    model = build(_ranked())
    assert {"rank:0", "rank:1"} <= set(model.nodes)
    assert any(k.startswith("rank1:") for k in model.nodes)
    finding = model.nodes["finding:0"]
    assert ("rank", "rank 1") in finding.detail and "rank:1" in finding.links
