"""The terminal views: what a reader must find in them, at 80 and 100 columns."""

from __future__ import annotations

import copy
import io
import re
from dataclasses import replace

import pytest
from rich.console import Console

from eaglegraph.reports.capture_view import render_capture
from eaglegraph.reports.memdiff_view import render_memdiff
from eaglegraph.reports.pools_view import render_pools
from eaglegraph.reports.runfile import render_run
from eaglegraph.reports.timeline_view import Bar, render_timeline
from eaglegraph.results.capture import CaptureRun
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.results.memdiff import MemdiffRun
from tests.reports.runs import OOM_ERROR, cuda_run, emulated_run, memdiff_run, oom_run

ANSI = re.compile(r"\x1b\[")


def text_of(render: object, run: object, width: int = 100) -> str:
    console = Console(record=True, width=width, file=io.StringIO(), color_system=None)
    render(run, console)  # type: ignore[operator]
    return console.export_text()


def lines_between(text: str, start: str, end: str) -> list[str]:
    block = text[text.index(start) : text.index(end)]
    return [line.rstrip() for line in block.splitlines()]


def test_timeline_rows_grouped_by_phase_in_capture_order() -> None:
    run = cuda_run()
    text = text_of(render_timeline, run)
    heads = [text.index(f"{p}  ") for p in ("target", "draft_prefill", "draft_decode")]
    assert heads == sorted(heads)
    assert "target  8 graphs" in text and "draft_decode  2 graphs" in text
    for header in ("mode", "tokens/reqs", "pool", "segs", "warmup", "capture", "bytes added"):
        assert header in text
    rows = [line for line in text.splitlines() if re.match(r"\s+(PIECEWISE|FULL)\s", line)]
    assert len(rows) == len(run.events)
    first = rows[0].split()
    assert first[:4] == ["PIECEWISE", "32/—", "global", "5"]  # mode, tokens/reqs, pool, segs
    assert "13.6 ms" in rows[0] and "96.00 MiB" in rows[0] and "6.8 ms" in rows[0]
    assert rows[4].split()[:3] == ["FULL", "32/8", "global"]


def test_bars_are_drawn_to_scale() -> None:
    text = text_of(render_timeline, cuda_run(), width=120)
    rows = [line for line in text.splitlines() if re.match(r"\s+(PIECEWISE|FULL)\s", line)]
    bars = [re.findall(r"[█▏▎▍▌▋▊▉]+", row) for row in rows]
    assert all(len(b) == 2 for b in bars), "time and bytes bars at 120 columns"
    longest, shortest = bars[0][0], bars[3][0]
    assert len(longest) > len(shortest) > 0
    # 32-token PIECEWISE added 96 MiB, the 4-token one 12 MiB: an 8:1 bytes ratio.
    assert 6 <= len(bars[0][1]) / max(len(bars[3][1]), 1) <= 10
    assert "longest 13.6 ms" in text and "largest 96.00 MiB" in text


def test_bar_renders_its_fraction_of_the_cell() -> None:
    console = Console(record=True, width=40, file=io.StringIO(), color_system=None)
    console.print(Bar(0.5))
    console.print(Bar(0.0001))
    console.print(Bar(2.0))
    half, tiny, full = console.export_text().splitlines()
    assert half.count("█") == 20 and tiny.strip() == "▏" and full.count("█") == 40


def test_emulated_backend_says_na_for_every_byte_figure() -> None:
    text = text_of(render_capture, emulated_run())
    assert "N/A (emulated backend)" in text
    assert "MiB" not in text and "GiB" not in text
    assert "Graph capturing finished in 0 secs, took N/A (emulated backend)" in text
    assert "accounted N/A (emulated backend)" in text
    assert "memory figures: N/A (emulated backend)" in text
    assert "draft_tokens_match_eager=true" in text  # the replay summary


def test_oom_shows_partial_timeline_and_the_failed_size() -> None:
    run = oom_run()
    text = text_of(render_capture, run)
    timeline = lines_between(text, "Capture timeline", "bars:")
    rows = [line for line in timeline if re.match(r"\s+(PIECEWISE|FULL)\s", line)]
    assert len(rows) == len(run.events) + 1
    assert rows[-1].split()[:2] == ["FULL", "16/4"] and "OOM" in rows[-1]
    assert "draft_prefill  1 graph + 1 failed" in text
    assert "capture out of memory at draft_prefill FULL(tokens=16, reqs=4)" in text
    assert "after 9 graphs; the timeline above is partial" in text
    assert OOM_ERROR in text.replace("\n  ", " ")  # markup-like "[rank0]" survives verbatim
    assert "vLLM logs no totals line when capture fails" in text
    assert "Graph capturing finished" not in text
    assert "capture-oom" in text  # findings


def test_failed_row_is_red() -> None:
    console = Console(record=True, width=100, file=io.StringIO(), color_system="truecolor")
    render_timeline(oom_run(), console)
    html = console.export_html(inline_styles=True)
    assert re.search(r'color: #800000[^"]*font-weight: bold">\s*OOM', html)


def test_error_status_reads_failed() -> None:
    run = oom_run()
    assert run.failed is not None
    run.failed = replace(run.failed, status="error", error="RuntimeError: capture broke")
    text = text_of(render_capture, run)
    assert "capture failed at draft_prefill" in text and "ERROR" in text
    assert "RuntimeError: capture broke" in text


def test_totals_line_as_vllm_logs_it() -> None:
    run = cuda_run()
    text = text_of(render_capture, run)
    assert run.totals.vllm_line in text
    assert re.search(r"Graph capturing finished in \d+ secs, took 0\.36 GiB", text)
    assert "14 graphs in" in text and "allocator reserved 878.00 MiB" in text


@pytest.mark.parametrize(
    ("compiled", "says"),
    [(True, "compiled by torch.compile (Inductor)"), (False, "eager (not compiled)"), (None, None)],
)
def test_views_say_which_target_forward_ran(compiled: bool | None, says: str | None) -> None:
    """A compiled target's pool holds Inductor's buffers: the reader must know which ran."""
    run = cuda_run()
    config = {k: v for k, v in run.config.items() if k != "compiled"}
    if compiled is not None:
        config["compiled"] = compiled
    run = replace(run, config=config)
    diff = memdiff_run()
    diff = replace(diff, config={**diff.config, **config})
    for render, shown in ((render_capture, run), (render_memdiff, diff)):
        target = [
            line for line in text_of(render, shown, 80).splitlines() if line.startswith("target ")
        ]
        if says is None:  # a run saved before the field: no claim either way
            assert not target
        else:
            assert target and target[0].split(None, 1)[1].rstrip() == says


def test_pool_view_reserved_ideal_ratio_and_accounting() -> None:
    text = text_of(render_pools, cuda_run("dedicated"))
    global_row = next(line for line in text.splitlines() if "global (0,1)" in line)
    assert global_row.split()[2:] == ["8", "300.00", "MiB", "75.00", "MiB", "96.00", "MiB", "×3.12"]
    eagle_row = next(line for line in text.splitlines() if "eagle (0,2)" in line)
    assert "66.00 MiB" in eagle_row and "×2.06" in eagle_row
    total = next(line for line in text.splitlines() if line.strip().startswith("total"))
    assert total.split()[1:4] == ["14", "366.00", "MiB"]
    per_phase = lines_between(text, "bytes per phase", "accounted")
    assert per_phase[1].split() == ["pool", "target", "draft_prefill", "draft_decode"]
    assert per_phase[3].split() == ["eagle", "—", "60.00", "MiB", "6.00", "MiB"]
    assert "accounted ✓  snapshot 878.00 MiB = memory_reserved() 878.00 MiB" in text


def test_pool_view_shows_a_failed_audit_with_both_numbers() -> None:
    text = text_of(render_pools, oom_run())
    assert "accounted ✗  snapshot 844.00 MiB ≠ memory_reserved() 846.00 MiB" in text


def test_memdiff_diffs_totals_tokens_and_the_pr_reference() -> None:
    run = memdiff_run()
    text = text_of(render_memdiff, run)
    assert "a = shared  vs  b = dedicated" in text
    assert "a: shared" in text and "b: dedicated" in text
    for group in ("per pool", "per phase", "per graph"):
        assert group in text
    eagle = next(line for line in text.splitlines() if line.strip().startswith("eagle"))
    assert eagle.split() == ["eagle", "0", "B", "83.00", "MiB", "+83.00", "MiB"]
    glob = next(line for line in text.splitlines() if line.strip().startswith("global"))
    assert glob.split()[-2:] == ["-66.00", "MiB"]
    target = next(line for line in text.splitlines() if line.strip().startswith("target  "))
    assert target.split()[-1] == "±0"
    assert len([ln for ln in text.splitlines() if "FULL(tokens=" in ln]) == 10
    assert "Total  a (shared) 366.00 MiB → b (dedicated) 383.00 MiB  +17.00 MiB (+4.6%)" in text
    measured = next(line for line in text.splitlines() if "this run (measured)" in line)
    assert measured.split()[-6:] == ["383.00", "MiB", "366.00", "MiB", "17.00", "MiB"]
    assert "PR #44078's number, not ours" in text
    assert re.search(r"1\.39 GiB\s+1\.12 GiB\s+0\.27 GiB", text)
    assert "PR #44078 measured upstream: Llama-3.1-8B-Instruct + EAGLE, K=5, H200" in text
    assert "✓ identical under both policies over 48 steps" in text


@pytest.mark.parametrize(
    ("identical", "expected"),
    [(False, "✗ differ between the policies"), (None, "Draft tokens  not compared")],
)
def test_memdiff_token_verdicts(identical: bool | None, expected: str) -> None:
    run = memdiff_run()
    run.tokens_identical = identical
    assert expected in text_of(render_memdiff, run)


def test_memdiff_against_per_graph_keeps_the_reference_as_context_only() -> None:
    run = memdiff_run()
    run.b = cuda_run("per-graph")
    text = text_of(render_memdiff, run)
    assert "this run (measured)" not in text
    assert "PR #44078's number, not ours" in text


def test_memdiff_names_a_side_that_failed() -> None:
    run = memdiff_run()
    run.b = oom_run()
    text = text_of(render_memdiff, run)
    assert "run b (shared) did not finish" in text
    assert "capture out of memory at draft_prefill FULL(tokens=16, reqs=4)" in text


def test_findings_are_rendered() -> None:
    run = cuda_run()
    run.findings.append(
        Finding(id="pool-mismatch", severity=Severity.WARNING, message="[not markup] x")
    )
    text = text_of(render_capture, run)
    assert "Findings (1 warning, 1 info)" in text
    assert "[not markup] x" in text
    assert "pool (0, 1) reserves [4.2x] its largest graph" in text


RUNS = [cuda_run(), cuda_run("dedicated"), emulated_run(), oom_run(), memdiff_run()]


@pytest.mark.parametrize("run", RUNS, ids=["shared", "dedicated", "emulated", "oom", "memdiff"])
def test_readable_at_80_columns(run: CaptureRun | MemdiffRun) -> None:
    text = text_of(render_run, run, width=80)
    widths = [len(line.rstrip()) for line in text.splitlines()]
    assert max(widths) <= 80
    assert "…" not in text, "nothing truncated at 80 columns"


@pytest.mark.parametrize("run", RUNS, ids=["shared", "dedicated", "emulated", "oom", "memdiff"])
def test_renderers_do_not_touch_the_run(run: CaptureRun | MemdiffRun) -> None:
    before = copy.deepcopy(run)
    text_of(render_run, run)
    assert run == before


def test_no_color_console_writes_no_ansi() -> None:
    out = io.StringIO()
    render_run(oom_run(), Console(file=out, width=100, no_color=True, color_system=None))
    assert not ANSI.search(out.getvalue())
    out = io.StringIO()
    render_run(oom_run(), Console(file=out, width=100, force_terminal=True))
    assert ANSI.search(out.getvalue())


def test_empty_run_renders() -> None:
    run = cuda_run()
    run.events, run.pools = [], []
    text = text_of(render_capture, run)
    assert "no graphs captured" in text and "no pools recorded" in text


def test_failed_event_also_listed_in_events_is_shown_once() -> None:
    run = oom_run()
    assert run.failed is not None
    run.events.append(run.failed)
    text = text_of(render_capture, run)
    assert len([ln for ln in text.splitlines() if re.match(r"\s+FULL\s+16/4\s.*OOM", ln)]) == 1
    assert "after 9 graphs" in text


def test_took_is_split_into_allocator_and_outside() -> None:
    from rich.console import Console

    from eaglegraph.reports.capture_view import took_breakdown
    from eaglegraph.results.capture import CaptureTotals

    mib = 1 << 20
    totals = CaptureTotals(
        1.0, 3, 190 * mib, 60 * mib, 72 * mib, 72 * mib, True,
        allocator_bytes=72 * mib, outside_allocator_bytes=118 * mib,
        outside_in_captures_bytes=110 * mib,
    )  # fmt: skip
    console = Console(width=200, record=True, color_system=None)
    console.print(took_breakdown(totals))
    text = console.export_text()
    assert "took 190" in text and "allocator +72" in text and "outside the allocator 118" in text
    assert "110.00 MiB in the graphs' windows" in text and "8.00 MiB before the first" in text


def test_pool_table_shows_the_prediction_and_its_error() -> None:
    from rich.console import Console

    from eaglegraph.reports.pools_view import render_pools
    from tests.reports.runs import cuda_run

    run = cuda_run("shared")
    pool = next(p for p in run.pools if p.graphs)
    run.prediction = {
        "policy": "shared",
        "reserved_bytes": pool.reserved_bytes * 2,
        "pools": {pool.label: pool.reserved_bytes * 105 // 100},
    }
    console = Console(width=160, record=True, color_system=None)
    render_pools(run, console)
    text = console.export_text()
    assert "predicted" in text and "+5%" in text
