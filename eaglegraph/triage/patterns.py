"""Line patterns, and the prefilter built from their anchors.

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

This module imports no pattern module: each one declares its `PatternGroup`, and
`triage.registry` puts the groups in one explicit order (the order handlers of a line run in).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from eaglegraph.triage.prefixes import Prefix
from eaglegraph.triage.state import ScanState

Handler = Callable[[ScanState, int, str, "re.Match[str]", Prefix], None]


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
    requires: tuple[str, ...] = ()
    _gate_res: tuple[re.Pattern[str], ...] = field(default=(), compare=False, repr=False)
    _folds: bool = field(default=False, compare=False, repr=False)  # the regex ignores case

    def gated(self, text: str) -> bool:
        """Cheap test that the line can match at all (an anchor occurs in it)."""
        return any(a in text for a in self.anchors) or any(r.search(text) for r in self._gate_res)

    def may_match(self, text: str) -> bool:
        """False when none of `requires` occurs in the text, so the regex cannot match.

        `requires` lists literals of which every match holds one (lower case when the whole
        regex ignores case; then only an ASCII line is checked, where lower-casing is exactly
        what the regex's case folding does). It spares a slow regex the lines its anchors let
        through but it cannot match: metrics lines that say "cuda graph" or "acceptance"
        every few seconds for hours.
        """
        if not self.requires:
            return True
        if self._folds:
            if not text.isascii():
                return True
            text = text.lower()
        return any(r in text for r in self.requires)


class PatternGroup(list[LinePattern]):
    """One module's patterns, in the order it declares them; `triage.registry` orders groups."""

    def register(
        self,
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
        requires: Iterable[str] = (),
    ) -> LinePattern:
        """Add a pattern. `unless` strings veto a line cheaply; `requires` literals, one of
        which every match holds, spare the regex lines that lack them (`LinePattern.may_match`);
        `last` reads the last match (progress bars pasted without carriage returns)."""
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
            requires=tuple(requires),
            _gate_res=tuple(re.compile(r) for r in res),
        )
        object.__setattr__(pattern, "_folds", bool(pattern.regex.flags & re.IGNORECASE))
        self.append(pattern)
        return pattern

    def on(self, id: str, regex: str, **options: Any) -> Callable[[Handler], Handler]:
        """`register` as a decorator: the handler below handles the pattern's matches."""

        def decorate(handler: Handler) -> Handler:
            self.register(id, regex, handler, **options)
            return handler

        return decorate


def _first_char(source: str) -> tuple[str, str]:
    """Split a regex source into its leading literal character and the rest."""
    if source.startswith("\\") and len(source) > 1 and not source[1].isalnum():
        return source[:2], source[2:]
    if source[0] in "()[]{}?*+|^$.\\":
        raise ValueError(f"anchor regex must start with a literal character: {source!r}")
    return source[0], source[1:]


def _branches(literals: Iterable[str], regexes: Iterable[str]) -> list[tuple[str, str]]:
    """The prefilter's branches, one per first character, sorted by it: `("E", "E(?:rror|RROR)")`.

    `re` tries the branches of an alternation one by one at every position, rejecting each by
    its first character; grouping makes that one test per distinct first character instead of
    one per anchor. Within a branch longer rests come first.
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
            parts.append((head, head))
        elif len(rests) == 1:
            parts.append((head, head + rests[0]))
        else:
            parts.append((head, head + "(?:" + "|".join(rests) + ")"))
    return parts


def _alternation(literals: Iterable[str], regexes: Iterable[str]) -> bytes:
    """One alternation grouped by first character: `E(?:rror|RROR)|C(?:UDA|apture)|...`."""
    return "|".join(branch for _, branch in _branches(literals, regexes)).encode("ascii")


def _own_search(head: str) -> bool:
    """Whether a branch gets a regex of its own in `Matcher.finditer`: lower-case letters and
    `.`, `-`, `_` begin most words and identifiers, so they stand at most positions of a log;
    branches starting with anything else are tried rarely and share one regex."""
    char = head[-1]  # an escaped head ("\\.") is the character after the backslash
    return char.islower() or char in ".-_"


def _stays_in_line(source: str) -> bool:
    """True when an anchor regex can match no line end and looks at nothing but what it
    matches: no `.`, `^`, `$`, negated class, lookaround, inline flag, or escape that is a
    class (`\\s`, `\\W`, ...) other than `\\d`. Conservative: anything unusual is False."""
    i = 0
    while i < len(source):
        c = source[i]
        nxt = source[i + 1 : i + 2]
        if c == "\\":
            if (nxt.isalnum() and nxt != "d") or nxt in ("\r", "\n"):
                return False
            i += 2
            continue
        special = c in ".^$\r\n" or (c == "[" and nxt == "^") or (c == "(" and nxt == "?")
        if special and not source.startswith("(?:", i):
            return False
        i += 1
    return True


class Matcher:
    """Matches lines against an ordered sequence of patterns through the anchor prefilter.

    The prefilter is built on first use, so importing the patterns costs no regex compilation
    beyond their own.
    """

    def __init__(self, patterns: Sequence[LinePattern]) -> None:
        seen: set[str] = set()
        for p in patterns:
            if p.id in seen:
                raise ValueError(f"duplicate triage pattern id {p.id!r}")
            seen.add(p.id)
        self.patterns: tuple[LinePattern, ...] = tuple(patterns)
        self._cache: dict[str, tuple[int, ...]] = {}
        # the patterns a list of found anchors gates, in order: lines of one kind (metrics
        # every few seconds) find the same anchors again and again
        self._gated: dict[tuple[str, ...], tuple[LinePattern, ...]] = {}

    @cached_property
    def _branches(self) -> list[tuple[str, str]]:
        return _branches(
            [a for p in self.patterns for a in p.anchors],
            [r for p in self.patterns for r in p.anchor_res],
        )

    @cached_property
    def _alt(self) -> bytes:
        return "|".join(branch for _, branch in self._branches).encode("ascii")

    @cached_property
    def anchors_stay_in_line(self) -> bool:
        """Whether no anchor can match across a line or `\\r` segment end, nor depend on text
        outside its match: then the prefilter's matches over a whole ASCII line are the
        anchors `match_line` finds in the message (`scan` hands them on instead of searching
        twice)."""
        literals = [a for p in self.patterns for a in p.anchors]
        return not any("\r" in a or "\n" in a for a in literals) and all(
            _stays_in_line(r) for p in self.patterns for r in p.anchor_res
        )

    @cached_property
    def prefilter(self) -> re.Pattern[bytes]:
        """A bytes regex that finds candidate lines in a region of the log."""
        return re.compile(self._alt, re.MULTILINE)

    @cached_property
    def _searches(self) -> tuple[Callable[[bytes, int, int], re.Match[bytes] | None], ...]:
        """The prefilter cut in pieces: one regex per frequent first character, one for the
        rest (`_own_search`); `search` of each, for `finditer`."""
        own = [branch for head, branch in self._branches if _own_search(head)]
        rest = [branch for head, branch in self._branches if not _own_search(head)]
        sources = [*own, "|".join(rest)] if rest else own
        return tuple(re.compile(src.encode("ascii"), re.MULTILINE).search for src in sources)

    def finditer(self, buf: bytes, start: int, end: int) -> Iterator[re.Match[bytes]]:
        """Exactly the matches of `prefilter.finditer(buf, start, end)`, found about twice as
        fast.

        `re` tests every branch of the one big alternation at every position whose character
        starts some branch (~2.5 ns a branch, ~50 branches, at most bytes of a log); a regex of
        one branch instead skips to its first character in a tight loop and tries only that
        branch there. So each piece of `_searches` is searched on its own, and their matches
        are merged the way `finditer` takes them: the leftmost match at or after the end of the
        last one taken. Two pieces never match at one position (they start with different
        characters), and whether a piece matches at a position does not depend on where its
        search began; a piece whose next match starts inside one taken from another piece is
        searched again from that one's end, so matches hidden behind a match that was not
        taken are found as the one alternation would find them. (Every branch starts with a
        literal character, so no match is empty and the search always moves on.)
        """
        searches = self._searches
        heap: list[tuple[int, int, re.Match[bytes]]] = []
        for i, search in enumerate(searches):
            m = search(buf, start, end)
            if m is not None:
                heap.append((m.start(), i, m))
        heapq.heapify(heap)
        pos = start
        while heap:
            at, i, m = heap[0]
            if at >= pos:
                yield m
                pos = m.end()
            m = searches[i](buf, pos, end)
            if m is None:
                heapq.heappop(heap)
            else:
                heapq.heapreplace(heap, (m.start(), i, m))

    @cached_property
    def _index(self) -> re.Pattern[str]:
        return re.compile(self._alt.decode("ascii"))

    def _patterns_for(self, found: str) -> tuple[int, ...]:
        """Positions of the patterns an anchor occurrence gates (cached by its text)."""
        hit = self._cache.get(found)
        if hit is None:
            hit = tuple(
                i
                for i, p in enumerate(self.patterns)
                if any(a in found for a in p.anchors) or any(r.match(found) for r in p._gate_res)
            )
            if len(self._cache) < 4096:
                self._cache[found] = hit
        return hit

    def match_line(
        self, text: str, found: list[str] | None = None
    ) -> list[tuple[LinePattern, re.Match[str]]]:
        """Every pattern that matches the message, in the declared order.

        One scan finds which anchors occur (anchors contained in a longer anchor found at the
        same position count too); only the patterns gated by those anchors run their regex.
        `found`, when given, is that scan's result, already made over the line.
        """
        if found is None:
            found = self._index.findall(text)
        if not found:
            return []
        key = tuple(found)
        gated = self._gated.get(key)
        if gated is None:
            candidates: set[int] = set()
            for f in set(found):
                candidates.update(self._patterns_for(f))
            gated = tuple(self.patterns[i] for i in sorted(candidates))
            if len(self._gated) < 4096:
                self._gated[key] = gated
        out: list[tuple[LinePattern, re.Match[str]]] = []
        for p in gated:
            if p.unless and any(u in text for u in p.unless):
                continue
            if p.requires and not p.may_match(text):
                continue
            m: re.Match[str] | None = None
            if p.last:
                for m in p.regex.finditer(text):  # noqa: B007 - keep the last one
                    pass
            else:
                m = p.regex.search(text)
            if m is not None:
                out.append((p, m))
        return out
