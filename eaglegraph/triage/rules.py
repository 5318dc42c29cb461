"""Weighing the evidence: which failure class explains the log, and how sure that is.

The order of reasoning follows how these failures actually arise (crash-triage.md):

1. Find the *primary* error: the first root error line, not its consequences (NCCL watchdog,
   engine death, "Scheduler hit an exception" wrappers, aborts after a C++ exception).
2. Name its *mechanism*: an asynchronous CUDA fault, a device-side index assert, an OOM, a
   stream-capture violation, a shape error, a watchdog.
3. Find the *phase* it happened in: during a capture, during serving, or at startup.
4. Weigh: steps 1-3 and every other fact are read by `triage.facts.read_log`; the rules that
   weigh facts are data, `known.triage_log_rules.LOG_RULES` for the log's own lines and
   `known.triage_rules.RULES` for what a reporter says beside them. One `weigh` serves both.

Each contribution carries the lines that justify it; the confidence comes from how much
evidence the winner has and how far ahead of the runner-up it is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from eaglegraph.known.triage_log_rules import LOG_RULES
from eaglegraph.known.triage_rules import (
    CALIBRATION,
    NO_EVIDENCE_CONFIDENCE,
    RULES,
    SATURATION,
    TITLE_BONUS,
    Rule,
)
from eaglegraph.known.triage_signals import Mechanism, SignalKind
from eaglegraph.results.triage import CATEGORIES, Category, Evidence, PhaseInfo, Role
from eaglegraph.triage.facts import LogFacts, said_facts
from eaglegraph.triage.state import Frame, Hit
from eaglegraph.triage.ticket import Said, Ticket


@dataclass
class Contribution:
    category: Category
    weight: float
    reason: str
    hits: list[Hit] = field(default_factory=list)
    rule: str = ""


@dataclass
class Verdict:
    category: Category
    confidence: float
    scores: dict[str, float]
    contributions: list[Contribution]
    primary: Hit | None
    primary_mechanism: Mechanism | None
    secondary: list[Hit]
    phase: PhaseInfo
    frames: list[Frame]
    facts: list[str] = field(default_factory=list)


def confidence(score: float, total: float) -> float:
    """Saturates with the amount of evidence, shrinks with competition."""
    if score <= 0 or total <= 0:
        return 0.0
    return round((1.0 - math.exp(-score / SATURATION)) * (score / total), 2)


def calibrated(raw: float) -> float:
    """The probability that a verdict of this raw confidence is right (known.CALIBRATION)."""
    for upper, p in CALIBRATION:
        if raw < upper:
            return p
    return CALIBRATION[-1][1]


# The signal prefix of a hit that stands for a reporter's statement.
SAID = "said."


def _said_hit(s: Said) -> Hit:
    return Hit(s.line, s.text, f"{SAID}{s.id.split('.', 1)[1]}", SignalKind.NARRATIVE)


def weigh(
    table: tuple[Rule, ...],
    facts: LogFacts,
    said: Mapping[str, list[Said]] | None = None,
    lines_per_fact: int | None = None,
) -> list[Contribution]:
    """One contribution per rule of `table` whose facts hold, with the lines behind them.

    A fact the reporter states is shown by its first statement (one in the title first, which
    earns the rule TITLE_BONUS); a log fact by its lines (`lines_per_fact` of them, or all).
    """
    said = said or {}
    names = facts.names() | set(said)
    if "says.spec" in names:
        names.add("ctx.spec")
    out: list[Contribution] = []
    for rule in table:
        if not rule.holds(names):
            continue
        hits: list[Hit] = []
        details: list[str] = []
        titled = False
        for f in (*rule.needs, *rule.any_of):
            if f in said:
                titled = titled or said[f][0].title
                hits.append(_said_hit(said[f][0]))
            elif f in facts:
                hits += [h for h in facts.hits[f][:lines_per_fact] if h not in hits]
                if f in facts.detail and facts.detail[f] not in details:
                    details.append(facts.detail[f])
        weight = rule.weight + (TITLE_BONUS if titled and rule.titled else 0.0)
        reason = rule.why + (f" ({'; '.join(details)})" if details else "")
        if weight > 0:
            out.append(Contribution(rule.category, weight, reason, hits, rule.id))
    return out


def verdict(facts: LogFacts, ticket: Ticket | None = None) -> Verdict:
    """The log's facts weighed by LOG_RULES, then with the reporter's statements by RULES."""
    said = said_facts(ticket)
    v = Verdict(
        Category.OTHER,
        0.0,
        {},
        [],
        facts.primary,
        facts.mechanism,
        facts.secondary,
        facts.phase,
        facts.frames,
    )
    contributions = weigh(LOG_RULES, facts) + weigh(RULES, facts, said, lines_per_fact=1)
    names = facts.names() | set(said) | ({"ctx.spec"} if "says.spec" in said else set())
    return settle(v, contributions, sorted(names))


def score(facts: LogFacts) -> Verdict:
    """The verdict of the log's own lines alone (LOG_RULES)."""
    return verdict(facts, None)


def settle(
    v: Verdict, contributions: list[Contribution], facts: list[str] | None = None
) -> Verdict:
    """The verdict these contributions give: best category and its raw confidence."""
    out: dict[str, float] = {c: 0.0 for c in CATEGORIES}
    for c in contributions:
        out[c.category] += c.weight
    scores = {k: round(w, 3) for k, w in out.items()}
    total = sum(scores.values())
    best = max(CATEGORIES, key=lambda c: (scores[c], c == Category.OTHER))
    if scores[best] <= 0:
        best = Category.OTHER
    conf = confidence(scores[best], total) if scores[best] > 0 else NO_EVIDENCE_CONFIDENCE
    return replace(
        v,
        category=best,
        confidence=conf,
        scores=scores,
        contributions=list(contributions),
        facts=list(facts if facts is not None else v.facts),
    )


def alternatives(v: Verdict, limit: int = 3) -> list[tuple[Category, float, float]]:
    total = sum(v.scores.values())
    ranked = sorted(
        (c for c in CATEGORIES if c != v.category and v.scores[c] > 0), key=lambda c: -v.scores[c]
    )
    return [(c, v.scores[c], confidence(v.scores[c], total)) for c in ranked[:limit]]


def evidence_of(v: Verdict, limit: int = 40) -> list[Evidence]:
    """Deduplicated evidence lines: the primary error, contributions, secondary errors."""
    out: dict[tuple[int, str], Evidence] = {}
    primary_line = v.primary.line if v.primary is not None else None
    if v.primary is not None:
        out[(v.primary.line, v.primary.signal)] = Evidence(
            v.primary.line, v.primary.text, v.primary.signal, Role.PRIMARY, None, 0.0
        )
    for c in sorted(v.contributions, key=lambda c: -c.weight):
        for h in c.hits:
            ev = out.get((h.line, h.signal))
            if ev is None:
                role = Role.PRIMARY if h.line == primary_line else Role.CONTEXT
                out[(h.line, h.signal)] = Evidence(
                    h.line, h.text, h.signal, role, c.category, c.weight
                )
            elif ev.category is None or (c.category == v.category != ev.category):
                ev.category, ev.weight = c.category, c.weight
    for h in v.secondary[:8]:
        out.setdefault((h.line, h.signal), Evidence(h.line, h.text, h.signal, Role.SECONDARY))
    items = sorted(out.values(), key=lambda e: (e.line, e.signal))
    return items[:limit]
