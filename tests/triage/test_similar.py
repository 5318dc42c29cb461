"""Similar known reports: the shipped knowledge base ranked against a log, offline.

A report's own signature finds it first; a log that was reworded (lines dropped, every number
changed, other install paths) still finds its report; the result names the terms and facts it
shares; and the section shows in the terminal view, `--json`, the explorer and the HTML page.
"""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from eaglegraph.cli import cli
from eaglegraph.known.report_kb import KnownReport, load_reports
from eaglegraph.reports.explore_html import render_explorer_html
from eaglegraph.reports.explore_model import build
from eaglegraph.reports.triage_view import render_triage
from eaglegraph.results.triage import TriageConfig
from eaglegraph.triage.diagnose import triage_text
from eaglegraph.triage.similar import Query, similar_reports, tokens

REPORTS = load_reports()
LONG = [r for r in REPORTS if len(r.log) >= 300]


def _by_id(ident: str) -> KnownReport:
    return next(r for r in REPORTS if r.id == ident)


def _reworded(text: str, seed: int) -> str:
    """The same failure as another user would paste it: every third line gone, every digit
    changed (pids, timestamps, line numbers, sizes), another Python install path."""
    rnd = random.Random(seed)
    kept = [line for i, line in enumerate(text.splitlines()) if i % 3 != 1]
    out = re.sub(r"\d", lambda _: str(rnd.randrange(10)), "\n".join(kept))
    return out.replace("/usr/local/lib/python3.12/dist-packages", "/opt/venv/lib/python3.11")


def test_knowledge_base_is_loaded() -> None:
    assert len(REPORTS) >= 150
    assert {"vllm", "sglang", "trtllm"} <= {r.engine for r in REPORTS}


def test_own_signature_retrieves_itself_first() -> None:
    first = in_top = 0
    for r in REPORTS:
        got = [s.id for s in similar_reports(Query(text=r.signature))]
        first += bool(got) and got[0] == r.id
        in_top += r.id in got
    # signatures that are one generic line ("CUDA error: an illegal memory access was
    # encountered") are shared by several reports; the rest are their own first answer
    assert first >= 0.85 * len(REPORTS)
    assert in_top >= 0.95 * len(REPORTS)


def test_title_and_signature_retrieve_itself_first() -> None:
    misses = [
        r.id
        for r in REPORTS
        if [s.id for s in similar_reports(Query(text=f"{r.title}\n{r.signature}"))][:1] != [r.id]
    ]
    assert len(misses) <= 0.03 * len(REPORTS), misses


def test_reworded_log_retrieves_its_family() -> None:
    found = same_category = 0
    for i, r in enumerate(LONG):
        result = triage_text(_reworded(r.log, i))
        ids = [s.id for s in result.similar]
        found += r.id in ids[:3]
        same_category += bool(result.similar) and result.similar[0].category == r.category
    assert len(LONG) >= 100
    assert found >= 0.65 * len(LONG)
    assert same_category >= 0.65 * len(LONG)


def test_why_names_shared_terms_and_facts() -> None:
    r = _by_id("vllm#32765")  # EAGLE3 refused for a gemma3 target
    query = Query(text=r.signature, config=TriageConfig(framework="vllm", spec_method="eagle3"))
    top = similar_reports(query)[0]
    assert top.id == r.id and top.url == r.url and top.category == r.category
    assert "gemma3_text" in top.shared_terms
    assert top.shared_facts == ["engine vllm", "method eagle3"]
    # the facts raise a report that already matches on text, never one that does not
    plain = similar_reports(Query(text=r.signature))[0]
    assert plain.id == r.id and top.score > plain.score
    assert similar_reports(Query(text="", config=query.config)) == []


def test_unrelated_text_finds_nothing() -> None:
    assert similar_reports(Query(text="the quick brown fox jumps over the lazy dog")) == []
    assert triage_text("hello world\n").similar == []


def test_tokens_fold_one_error_spelled_two_ways() -> None:
    a = tokens("RuntimeError: CUDA error: an illegal memory access was encountered")
    b = tokens("torch.AcceleratorError: cudaErrorIllegalAddress")
    assert "cudaerrorillegaladdress" in a and "cudaerrorillegaladdress" in b
    assert "eagle_draft_cuda_graph_runner.py" in tokens(
        'File "/sgl/python/sglang/srt/speculative/eagle_draft_cuda_graph_runner.py", line 9'
    )
    assert {"eagle", "draft", "runner"} <= set(
        tokens("EAGLEDraftCudaGraphRunner eagle_draft_runner")
    )


def test_index_is_built_once_and_queries_are_fast() -> None:
    query = Query(text=REPORTS[0].log)
    similar_reports(query)  # the index exists after the first call
    start = time.perf_counter()
    for _ in range(20):
        similar_reports(query)
    assert (time.perf_counter() - start) / 20 < 0.05


# --- the section in every output ----------------------------------------------------------------

CASE = _by_id("vllm#34607")  # AttributeError: 'EagleProposer' object has no attribute 'positions'


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("similar") / "crash.log"
    path.write_text(CASE.log + "\n", encoding="utf-8")
    return path


def test_json_lists_similar_reports(log: Path) -> None:
    res = CliRunner().invoke(cli, ["triage", "--json", str(log)], catch_exceptions=False)
    doc = json.loads(res.output)
    first = doc["similar"][0]
    assert first["url"] == CASE.url and first["category"] == CASE.category
    assert first["shared_terms"] and isinstance(first["score"], float)


def test_terminal_view_shows_the_section_at_80_columns(log: Path) -> None:
    res = CliRunner().invoke(cli, ["triage", "--no-color", str(log)], catch_exceptions=False)
    assert "Similar known reports" in res.output
    assert CASE.url in res.output
    assert "why: shares" in res.output
    result = triage_text(CASE.log)
    console = Console(width=80, record=True, color_system=None)
    render_triage(result, console)
    text = console.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    assert CASE.url in text


def test_explorer_and_html_show_the_section() -> None:
    result = triage_text(CASE.log)
    model = build(result)
    similar = [n for n in model.nodes.values() if n.section == "Similar"]
    assert similar and similar[0].id == "similar:0"
    assert ("url", CASE.url) in similar[0].detail
    assert "similar:0" in model.nodes["verdict"].links
    page = render_explorer_html(result)
    assert CASE.url in page and "Similar" in page
