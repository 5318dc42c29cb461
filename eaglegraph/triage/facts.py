"""From a scanned log and a reporter's statements to named facts, then through the rule table.

The log scorer (`rules.score`) reads mechanisms off log lines. This module adds what the
knowledge package's `RULES` conclude from facts: the log's mechanism and phase, the engine and
draft kind, and what the reporter says (`ticket.Said`). Each fired rule is a contribution with
the lines behind it, so the evidence of a verdict shows the statements it rests on.
"""

from __future__ import annotations

import re

from eaglegraph import frames as fr
from eaglegraph.known.triage_rules import CALIBRATION, RULES, TITLE_BONUS, Rule
from eaglegraph.triage import rules
from eaglegraph.triage.locate import crash_frames, tags_of
from eaglegraph.triage.state import Hit, ScanState
from eaglegraph.triage.ticket import Said, Ticket

# A statement that indexes or slices a tensor (`buf[: n] = -1`, `x[idx]`).
_SUBSCRIPT = re.compile(r"\w\[[^\]]+\]")
# An index bound that is a model's position limit (a draft trained for 2048 positions).
_BOUND = re.compile(r"<\s*(\d{3,6})\b")
_POSITION_LIMITS = {2048, 4096, 8192, 16384, 32768, 65536, 131072}
_MECH = {
    "async": "mech.async",
    "oob": "mech.oob",
    "assert": "mech.oob",
    "oom": "mech.oom",
    "shape": "mech.shape",
    "capture": "mech.capture",
    "config": "mech.config",
    "hang": "mech.hang",
    "nan": "mech.nan",
    "capture-wrapper": "mech.capture",
    "exception": "mech.exception",
}


def log_facts(state: ScanState, verdict: rules.Verdict) -> dict[str, list[Hit]]:
    """Facts the log itself supports, each with the lines that show it."""
    out: dict[str, list[Hit]] = {}
    primary = [verdict.primary] if verdict.primary else []
    if verdict.primary_mechanism:
        out[_MECH[verdict.primary_mechanism]] = primary
        out["ctx.log-fault"] = primary
    phase = verdict.phase.at_failure
    if phase:
        out[f"phase.{phase}"] = primary
    tags = tags_of(crash_frames(verdict.frames))
    padding = state.hits("context.padding")
    if padding or fr.REPLAY in tags:
        out["ctx.replay"] = padding[:1]
    blocking = [h for h in state.hits("context.launch-blocking")]
    if blocking:
        out["ctx.launch-blocking"] = blocking[:1]
    crash = crash_frames(verdict.frames)
    if crash and crash[-1].code and _SUBSCRIPT.search(crash[-1].code):
        f = crash[-1]
        out["ctx.fault-at-index"] = [Hit(f.line, f.text or f.code or "", "frame", "context")]
    for h in state.hits("shape.mismatch")[:1]:
        text = h.text.lower()
        nums = [int(x) for m in rules._NUMS.finditer(text) for x in m.groups() if x]
        if rules._VOCABISH.search(text) or any(n >= 30000 for n in nums):
            out["ctx.vocab-shape"] = [h]
        elif rules._HIDDENISH.search(text):
            out["ctx.hidden-shape"] = [h]
    for h in state.hits("index.oob")[:3]:
        bounds = {int(b) for b in _BOUND.findall(h.text)}
        if bounds & _POSITION_LIMITS or "position" in h.text:
            out["ctx.position-bound"] = [h]
            break
    downgrades = state.hits("mode.downgrade")
    if downgrades:
        out["ctx.mode-downgrade"] = downgrades[:1]
    cfg = state.config
    if cfg.attention_backend:
        out[f"attn.{cfg.attention_backend}"] = []
    spec_frames = [f for f in verdict.frames if fr.SPEC in f.tags]
    if cfg.spec_method or spec_frames:
        out["ctx.spec"] = []
    if cfg.framework:
        out[f"fw.{cfg.framework}"] = []
    if cfg.spec_method:
        out[f"draft.{cfg.spec_method.lower()}"] = []
    return out


def _holds(rule: Rule, facts: set[str]) -> bool:
    return (
        all(f in facts for f in rule.needs)
        and (not rule.any_of or any(f in facts for f in rule.any_of))
        and not any(f in facts for f in rule.unless)
    )


def _said_hits(said: list[Said]) -> list[Hit]:
    return [Hit(s.line, s.text, f"said.{s.id.split('.', 1)[1]}", "narrative") for s in said]


def apply_rules(state: ScanState, verdict: rules.Verdict, ticket: Ticket | None) -> rules.Verdict:
    """Add the contributions of every rule whose facts hold, and settle category and confidence."""
    found = log_facts(state, verdict)
    said = ticket.statements if ticket is not None else []
    by_fact: dict[str, list[Said]] = {}
    for s in said:
        by_fact.setdefault(s.id, []).append(s)
    facts = set(found) | set(by_fact)
    if "says.spec" in facts:
        facts.add("ctx.spec")
    contributions = list(verdict.contributions)
    for rule in RULES:
        if not _holds(rule, facts):
            continue
        hits: list[Hit] = []
        titled = False
        for f in (*rule.needs, *rule.any_of):
            if f in by_fact:
                said_f = sorted(by_fact[f], key=lambda s: not s.title)
                titled = titled or said_f[0].title
                hits += _said_hits(said_f[:1])
            elif f in found:
                hits += found[f][:1]
        weight = rule.weight + (TITLE_BONUS if titled and rule.titled else 0.0)
        contributions.append(rules.Contribution(rule.category, weight, rule.why, hits))
    return rules.settle(verdict, contributions, sorted(facts))


def calibrated(raw: float) -> float:
    """The probability that a verdict of this raw confidence is right (known.CALIBRATION)."""
    for upper, p in CALIBRATION:
        if raw < upper:
            return p
    return CALIBRATION[-1][1]
