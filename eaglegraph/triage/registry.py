"""The line patterns of triage, in one declared order, and the matcher built from them.

Handlers of one line run in this order, so it is written down here rather than left to which
module happened to be imported first: configuration lines first (the engine's own dump, flags,
mode resolution), then health metrics, capture progress, and last the failure signals and
traceback frames, whose handlers only record hits.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from eaglegraph.triage import extract, health, phases, signals
from eaglegraph.triage.patterns import LinePattern, Matcher

GROUPS: tuple[tuple[str, tuple[LinePattern, ...]], ...] = (
    ("config", tuple(extract.PATTERNS)),
    ("health", tuple(health.PATTERNS)),
    ("capture", tuple(phases.PATTERNS)),
    ("signals", tuple(signals.PATTERNS)),
)
MATCHER = Matcher([p for _, group in GROUPS for p in group])
ANCHORS_STAY_IN_LINE = MATCHER.anchors_stay_in_line


def patterns() -> tuple[LinePattern, ...]:
    return MATCHER.patterns


def prefilter() -> re.Pattern[bytes]:
    return MATCHER.prefilter


def find_anchors(buf: bytes, start: int, end: int) -> Iterator[re.Match[bytes]]:
    """The prefilter's matches over buf[start:end], as `prefilter().finditer` finds them."""
    return MATCHER.finditer(buf, start, end)


def match_line(
    text: str, found: list[str] | None = None
) -> list[tuple[LinePattern, re.Match[str]]]:
    return MATCHER.match_line(text, found)
