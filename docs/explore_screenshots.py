"""Regenerate the explore screenshots in docs/ from a saved run (the README shows them).

Terminal: the Textual app headless at 100×32 on a probe finding (kernel, descriptor, guard
evidence, and its links: hazard, buffer, case, the graph it replayed), saved as SVG and rendered
to PNG by headless Chromium; browser: the HTML explorer with the same finding selected, as PNG.

Run: python docs/explore_screenshots.py probe-all.json
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
from pathlib import Path

from eaglegraph.reports.explore_app import ExploreApp
from eaglegraph.reports.html import write_html
from eaglegraph.results import load_run

DOCS = Path(__file__).parent
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


async def terminal(run_path: str) -> Path:
    app = ExploreApp(load_run(run_path))
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        app.save_screenshot(filename="explore-terminal.svg", path=str(DOCS))
    return DOCS / "explore-terminal.svg"


def browser(url: str, out: Path, size: tuple[int, int]) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or ""  # Debian's, never a download
    for flag in (*FLAGS, f"--window-size={size[0]},{size[1]}"):
        options.add_argument(flag)
    profile = tempfile.mkdtemp()
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    try:
        driver.get(url)
        driver.save_screenshot(str(out))
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def main() -> None:
    run_path = sys.argv[1]
    svg = asyncio.run(terminal(run_path))
    browser(svg.resolve().as_uri(), DOCS / "explore-terminal.png", (1240, 820))
    with tempfile.TemporaryDirectory() as tmp:
        page = write_html(load_run(run_path), Path(tmp) / "explore.html")
        browser(page.as_uri() + "#finding%3A0", DOCS / "explore-browser.png", (1400, 900))
    print("wrote", *sorted(p.name for p in DOCS.glob("explore-*")))


if __name__ == "__main__":
    main()
