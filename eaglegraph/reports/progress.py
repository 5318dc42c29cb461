"""How long work shows itself on stderr: a rich bar with its rate and ETA on a terminal, and a
plain line every few seconds when stderr is piped (a job log, CI), so silence never means
"stuck". Nothing here writes to stdout: `--json` output stays the document alone."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.progress import ProgressColumn, Task
from rich.text import Text

# seconds between two plain lines when nothing else was said
HEARTBEAT_S = 5.0


class RateColumn(ProgressColumn):
    """Items per second (graphs, cases) once a few are done; blank before."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        if speed is None or not task.total:
            return Text("")
        return Text(f"{speed:.1f}/s" if speed >= 1 else f"{1 / speed:.1f} s each", style="cyan")


def eta(done: float, total: float | None, elapsed: float) -> str | None:
    """'ETA 2 min' from the rate so far; None until something is done or without a total."""
    if not total or done <= 0 or done >= total:
        return None
    left = elapsed / done * (total - done)
    return f"ETA {left:.0f} s" if left < 90 else f"ETA {left / 60:.0f} min"


@dataclass
class PlainLines:
    """The piped form: one line per milestone, and the latest status again every
    `interval` seconds in between (from a daemon thread, so a long single step still shows).
    `emit` writes one line (stderr)."""

    label: str
    emit: Callable[[str], None]
    interval: float = HEARTBEAT_S
    description: str = ""
    done: float = 0
    total: float | None = None
    _start: float = field(default_factory=time.monotonic)
    _last: float = field(default_factory=time.monotonic)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)

    def line(self, what: str) -> str:
        elapsed = time.monotonic() - self._start
        count = f" [{self.done:.0f}/{self.total:.0f}]" if self.total else ""
        rate = ""
        if self.total and self.done > 0:
            rate = f", {self.done / max(elapsed, 1e-9):.1f}/s"
            rest = eta(self.done, self.total, elapsed)
            rate += f", {rest}" if rest else ""
        return f"{self.label}: {what}{count} ({elapsed:.0f} s{rate})"

    def say(self, what: str) -> None:
        with self._lock:
            self._last = time.monotonic()
            self.emit(self.line(what))

    def update(
        self, description: str | None, advance: float, total: float | None, milestone: str | None
    ) -> None:
        with self._lock:
            if description is not None:
                self.description = description
            if total is not None:
                self.total = total
            self.done += advance
        if milestone is not None:
            self.say(milestone)

    def start(self) -> None:
        threading.Thread(target=self._beat, name="eaglegraph-progress", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def _beat(self) -> None:
        while not self._stop.wait(self.interval / 5):
            if time.monotonic() - self._last >= self.interval:
                self.say(self.description or "working")
