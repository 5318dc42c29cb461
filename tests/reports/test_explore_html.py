"""The HTML explorer in a real headless Chromium: no script errors, a drill-down click shows
the detail, sorting and filtering work. Skips only where Chromium is absent (CI installs it)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from eaglegraph.reports.html import write_html
from eaglegraph.results import load_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None, reason="chromium and chromedriver are not installed"
)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1000",
)


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="eaglegraph-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def pages(
    tmp_path_factory: pytest.TempPathFactory, explore_runs: dict[str, Path]
) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("explore-html")
    return {k: write_html(load_run(p), folder / f"{k}.html") for k, p in explore_runs.items()}


def _errors(browser) -> list[str]:  # type: ignore[no-untyped-def]
    return [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]


@pytest.mark.parametrize("kind", ["probe", "capture", "memdiff", "inspect", "triage"])
def test_renders_without_script_errors(browser, pages, kind: str) -> None:  # type: ignore[no-untyped-def]
    browser.get(pages[kind].as_uri())
    rows = browser.find_elements("css selector", "#rows tr")
    assert rows, "the table is empty"
    assert browser.find_element("id", "d-title").text  # a detail is shown from the start
    assert _errors(browser) == []


def test_drill_down_from_finding_to_pr(browser, pages) -> None:  # type: ignore[no-untyped-def]
    browser.get(pages["probe"].as_uri())
    browser.find_element("css selector", 'tr[data-id="finding:0"]').click()
    assert browser.find_element("id", "d-title").text == "stale-read:draft.kv_indptr"
    link = browser.find_element("css selector", '[data-link="hazard:piecewise-draft-decode"]')
    link.click()
    detail = browser.find_element("id", "detail").text
    assert "PR #39773" in detail and "vLLM ≥ 0.20" in detail
    assert browser.find_element("id", "d-title").text == "piecewise-draft-decode"
    assert _errors(browser) == []


def test_drill_down_to_graph_and_pool_and_back(browser, pages) -> None:  # type: ignore[no-untyped-def]
    browser.get(pages["probe"].as_uri())
    browser.find_element("css selector", 'tr[data-id="finding:0"]').click()
    browser.find_element("css selector", '#links [data-link*=":graph:"]').click()
    assert "by the probed draft_decode step" in browser.find_element("id", "detail").text
    browser.find_element("css selector", '#links [data-link*=":pool:"]').click()
    detail = browser.find_element("id", "detail").text
    assert browser.find_element("id", "d-title").text.startswith("global (0,1)")
    assert detail.count("lives here") > 3
    browser.find_element("id", "back").click()
    browser.find_element("id", "back").click()
    assert browser.find_element("id", "d-title").text == "stale-read:draft.kv_indptr"
    assert _errors(browser) == []


def test_timeline_zoom_and_pan(browser, pages) -> None:  # type: ignore[no-untyped-def]
    browser.get(pages["capture"].as_uri())
    label = browser.find_element("id", "zoom-label")
    assert label.text.startswith("zoom ×1 ")

    def spans() -> list[tuple[float, float]]:
        bars = browser.find_elements("css selector", "#timeline div.r span.b")
        return [(float(b.value_of_css_property("left")[:-2]), b.size["width"]) for b in bars]

    before = spans()
    browser.find_element("id", "zoom-in").click()
    browser.find_element("id", "zoom-in").click()
    assert label.text.startswith("zoom ×4 ")
    after = spans()
    # four times the pixels per second: every bar is wider, by about four
    assert all(a[1] > 3 * b[1] for a, b in zip(after, before, strict=True) if b[1] > 4)
    browser.find_element("id", "pan-right").click()
    panned = spans()
    assert all(p[0] < a[0] for p, a in zip(panned, after, strict=True))
    browser.find_element("id", "zoom-out").click()
    assert label.text.startswith("zoom ×2 ")
    assert _errors(browser) == []


def test_filter_and_sort(browser, pages) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.support.ui import Select

    browser.get(pages["capture"].as_uri())
    total = len(browser.find_elements("css selector", "#rows tr"))
    Select(browser.find_element("id", "f-section")).select_by_value("Graphs")
    graphs = browser.find_elements("css selector", "#rows tr")
    assert 0 < len(graphs) < total
    assert all(r.find_elements("tag name", "td")[0].text == "Graphs" for r in graphs)
    browser.find_element("css selector", 'th[data-key="label"]').click()
    labels = [
        r.find_elements("tag name", "td")[1].text
        for r in browser.find_elements("css selector", "#rows tr")
    ]
    assert labels == sorted(labels, key=str.lower) or labels == sorted(labels)
    search = browser.find_element("id", "q")
    search.send_keys("draft_decode")
    shown = browser.find_elements("css selector", "#rows tr")
    assert shown and len(shown) < len(graphs)
    bars = browser.find_elements("css selector", "#timeline div.r")
    assert len(bars) == len(graphs)  # one timeline bar per captured graph
    bars[0].click()
    assert browser.find_element("id", "d-title").text.startswith("#0 target")
    assert _errors(browser) == []
