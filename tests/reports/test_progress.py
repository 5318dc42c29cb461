"""Progress when stderr is piped: one line per milestone with count, rate and ETA, and the
latest status again every few seconds; on a terminal the bar shows the rate and ETA too."""

from __future__ import annotations

import io
import time

from rich.console import Console
from rich.progress import Progress

from eaglegraph.reports.progress import PlainLines, RateColumn, eta


def test_milestones_carry_count_rate_and_eta() -> None:
    said: list[str] = []
    lines = PlainLines("capture", said.append, interval=60, total=10)
    lines.update("target FULL(tokens=8)", 4, None, "target: 10 graphs")
    (line,) = said
    assert line.startswith("capture: target: 10 graphs [4/10] (")
    assert "/s, ETA " in line
    lines.update("target FULL(tokens=4)", 1, None, None)  # no milestone: no line
    assert len(said) == 1


def test_a_long_silent_step_still_prints_every_interval() -> None:
    said: list[str] = []
    lines = PlainLines("inspect", said.append, interval=0.2)
    lines.update("recording the capture sequence", 0, None, None)
    lines.start()
    time.sleep(0.9)
    lines.stop()
    beats = [s for s in said if "recording the capture sequence" in s]
    assert 2 <= len(beats) <= 6, said  # about one per interval, no flood
    assert all(s.startswith("inspect: ") for s in beats)


def test_eta_from_the_rate_so_far() -> None:
    assert eta(0, 10, 5.0) is None and eta(10, 10, 5.0) is None and eta(3, None, 1.0) is None
    assert eta(5, 10, 10.0) == "ETA 10 s"
    assert eta(1, 10, 60.0) == "ETA 9 min"


def test_the_bar_shows_a_rate() -> None:
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=True)
    with Progress(RateColumn(), console=console, auto_refresh=False) as progress:
        task = progress.add_task("capture", total=10)
        for _ in range(3):
            progress.advance(task)
            time.sleep(0.05)
        rendered = RateColumn().render(progress.tasks[0]).plain
    assert rendered.endswith("/s") or rendered.endswith("s each")
