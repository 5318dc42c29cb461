"""Parsing the values log lines print: numbers with commas, Python/JSON booleans, lists.

Log values arrive as repr() text ('True', "'fp8'", '[1, 2, 4]', '2,102,112'), so every
conversion here accepts the spellings seen in the wild and returns None instead of raising.
"""

from __future__ import annotations

import re
from typing import Any

from eaglegraph.triage.state import ScanState


def to_int(v: str | None) -> int | None:
    if v is None:
        return None
    try:
        return int(v.replace(",", "").strip("'\""))
    except ValueError:
        return None


def to_float(v: str | None) -> float | None:
    if v is None:
        return None
    try:
        return float(v.strip("'\""))
    except ValueError:
        return None


def to_bool(v: str | None) -> bool | None:
    if v is None:
        return None
    low = v.strip("'\"").lower()
    if low in ("true", "1", "yes", "on"):
        return True
    if low in ("false", "0", "no", "off", "none"):
        return False
    return None


def to_ints(v: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", v)][:4096]


def vote(state: ScanState, framework: str, weight: int = 1) -> None:
    state.framework_votes[framework] += weight


def set_missing(obj: Any, name: str, value: Any, override: bool = False) -> None:
    """Set `obj.name` unless it already holds a value (first source wins unless `override`)."""
    if value is None:
        return
    if override or getattr(obj, name) in (None, [], ""):
        setattr(obj, name, value)
