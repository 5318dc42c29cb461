"""The registry of line patterns, and the prefilter built from their anchors.

Matching ~70 regexes against every line costs far too much for large logs, so each pattern
names *anchors*: literal strings (or small regexes starting with a literal character) of which
at least one occurs in every line the pattern can match. One bytes regex over a whole region,
grouped by first character, finds the candidate lines; only those are decoded, and for each
only the patterns whose anchors occur run their regex. (Which regions of a big log are read
this way, and how the rest is searched, is `scan.py`'s business.)

`anchors` name machine-written text; `extra` (given to `register`, gating the same way) name
reporter prose, command lines, YAML and periodic metrics lines, kept apart so that the
machine anchors stay easy to review. `tests/triage/test_triage_patterns.py` checks the
contract on every line of the test corpora.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

Handler = Callable[[Any, int, str, "re.Match[str]", Any], None]


@dataclass(frozen=True)
class LinePattern:
    """One regex over a prefix-stripped message, with the anchors that gate it."""

    id: str
    regex: re.Pattern[str]
    handler: Handler
    anchors: tuple[str, ...] = ()
    anchor_res: tuple[str, ...] = ()
    unless: tuple[str, ...] = ()
    last: bool = False
    why: str = ""
    _gate_res: tuple[re.Pattern[str], ...] = field(default=(), compare=False, repr=False)

    def gated(self, text: str) -> bool:
        """Cheap test that the line can match at all (an anchor occurs in it)."""
        return any(a in text for a in self.anchors) or any(r.search(text) for r in self._gate_res)


REGISTRY: list[LinePattern] = []
_compiled: dict[str, Any] = {}


def register(
    id: str,
    regex: str,
    handler: Handler,
    *,
    anchors: Iterable[str] = (),
    anchor_res: Iterable[str] = (),
    extra: Iterable[str] = (),
    extra_res: Iterable[str] = (),
    unless: Iterable[str] = (),
    last: bool = False,
    flags: int = 0,
    why: str = "",
) -> LinePattern:
    """Add a pattern. `unless` strings veto a line cheaply; `last` reads the last match
    (progress bars pasted without carriage returns); the prefilter is rebuilt lazily."""
    res = (*anchor_res, *extra_res)
    pattern = LinePattern(
        id=id,
        regex=re.compile(regex, flags),
        handler=handler,
        anchors=(*anchors, *extra),
        anchor_res=res,
        unless=tuple(unless),
        last=last,
        why=why,
        _gate_res=tuple(re.compile(r) for r in res),
    )
    if any(p.id == id for p in REGISTRY):
        raise ValueError(f"duplicate triage pattern id {id!r}")
    REGISTRY.append(pattern)
    _compiled.clear()
    return pattern


def _first_char(source: str) -> tuple[str, str]:
    """Split a regex source into its leading literal character and the rest."""
    if source.startswith("\\") and len(source) > 1 and not source[1].isalnum():
        return source[:2], source[2:]
    if source[0] in "()[]{}?*+|^$.\\":
        raise ValueError(f"anchor regex must start with a literal character: {source!r}")
    return source[0], source[1:]


def _alternation(literals: Iterable[str], regexes: Iterable[str]) -> bytes:
    """One alternation grouped by first character: `E(?:rror|RROR)|C(?:UDA|apture)|...`.

    `re` tries the branches of an alternation one by one at every position, rejecting each by
    its first character; grouping makes that one test per distinct first character instead of
    one per anchor.
    """
    groups: dict[str, set[str]] = {}
    for a in set(literals):
        if a:
            head, rest = _first_char(re.escape(a))
            groups.setdefault(head, set()).add(rest)
    for r in set(regexes):
        head, rest = _first_char(r)
        groups.setdefault(head, set()).add(rest)
    parts = []
    for head in sorted(groups):
        rests = sorted(groups[head], key=lambda s: (-len(s), s))
        if "" in rests:
            parts.append(head)
        elif len(rests) == 1:
            parts.append(head + rests[0])
        else:
            parts.append(head + "(?:" + "|".join(rests) + ")")
    return "|".join(parts).encode("ascii")


def _load_all() -> None:
    # Importing registers the patterns; done here so importing the registry alone is cheap.
    from eaglegraph.triage import extract, health, phases, signals  # noqa: F401


def _build() -> None:
    if "prefilter" not in _compiled:
        _load_all()
        alt = _alternation(
            [a for p in REGISTRY for a in p.anchors], [r for p in REGISTRY for r in p.anchor_res]
        )
        _compiled["prefilter"] = re.compile(alt, re.MULTILINE)
        _compiled["index"] = re.compile(alt.decode("ascii"))
        _compiled["cache"] = {}


def prefilter() -> re.Pattern[bytes]:
    """A bytes regex that finds candidate lines in a region of the log."""
    _build()
    return _compiled["prefilter"]


def patterns() -> list[LinePattern]:
    _build()
    return REGISTRY


def _patterns_for(found: str) -> tuple[int, ...]:
    """Registry positions of the patterns an anchor occurrence gates (cached by its text)."""
    cache: dict[str, tuple[int, ...]] = _compiled["cache"]
    hit = cache.get(found)
    if hit is None:
        hit = tuple(
            i
            for i, p in enumerate(REGISTRY)
            if any(a in found for a in p.anchors) or any(r.match(found) for r in p._gate_res)
        )
        if len(cache) < 4096:
            cache[found] = hit
    return hit


def match_line(text: str) -> list[tuple[LinePattern, re.Match[str]]]:
    """Every registered pattern that matches the message, in registration order.

    One scan finds which anchors occur (anchors contained in a longer anchor found at the same
    position count too); only the patterns gated by those anchors run their regex.
    """
    _build()
    found = _compiled["index"].findall(text)
    if not found:
        return []
    candidates: set[int] = set()
    for f in set(found):
        candidates.update(_patterns_for(f))
    out: list[tuple[LinePattern, re.Match[str]]] = []
    for i in sorted(candidates):
        p = REGISTRY[i]
        if p.unless and any(u in text for u in p.unless):
            continue
        if p.last:
            m = None
            for m in p.regex.finditer(text):  # noqa: B007 - keep the last one
                pass
        else:
            m = p.regex.search(text)
        if m is not None:
            out.append((p, m))
    return out
