"""The capture page's memory-over-time plot: one step line per pool, inline SVG, no script."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from eaglegraph.reports.format import fmt_bytes
from eaglegraph.reports.html import render_html
from eaglegraph.reports.html_memory import memory_plot_svg
from tests.reports.runs import cuda_run, emulated_run, oom_run


def svg_of(section: str) -> ET.Element:
    return ET.fromstring(section[section.index("<svg") : section.index("</svg>") + 6])


def test_each_pool_is_a_line_ending_at_its_bytes() -> None:
    run = cuda_run("dedicated")
    root = svg_of(memory_plot_svg(run))
    ns = "{http://www.w3.org/2000/svg}"
    lines = {p.get("data-pool"): p for p in root.iter(f"{ns}polyline")}
    assert set(lines) == {p.label for p in run.pools}  # global and eagle
    for pool in run.pools:
        title = lines[pool.label].find(f"{ns}title")
        assert title is not None and title.text == f"{pool.label}: {fmt_bytes(pool.reserved_bytes)}"
        ys = [float(pt.split(",")[1]) for pt in (lines[pool.label].get("points") or "").split()]
        assert ys == sorted(ys, reverse=True)  # bytes only grow: y only goes up the page
    # the largest pool reaches the top of the plot, the axis says its size
    largest = max(run.pools, key=lambda p: p.reserved_bytes)
    assert fmt_bytes(largest.reserved_bytes) in memory_plot_svg(run)


def test_the_capture_page_carries_the_plot_and_no_script_for_it() -> None:
    page = render_html(cuda_run())
    section = page[page.index('<section id="memory-plot">') :]
    section = section[: section.index("</section>")]
    assert "<svg" in section and "<script" not in section
    assert len(re.findall("<polyline", section)) == 1  # shared policy: one pool


def test_without_memory_figures_the_plot_says_why() -> None:
    section = memory_plot_svg(emulated_run())
    assert "<svg" not in section and "measures no memory" in section
    assert "--predict-memory" in section


def test_a_failed_capture_plots_what_was_captured() -> None:
    run = oom_run()
    root = svg_of(memory_plot_svg(run))
    points = sum(
        len((p.get("points") or "").split())
        for p in root.iter("{http://www.w3.org/2000/svg}polyline")
    )
    captured = [e for e in run.events if e.status == "ok" and e.bytes is not None]
    assert points == len({e.pool for e in captured}) + 2 * len(captured)
