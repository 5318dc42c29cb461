"""Whether a verdict commits to its category, the confidence it states, and what it lacks.

A verdict commits only on evidence that names its class (`known.triage_commit`): the weight
of the winner's rules that are not inferences must reach NAMED_WEIGHT and hold NAMED_SHARE of
all the weight in the report. Its stated confidence is its tier's share of right verdicts on
the calibration part of the dev/tune data; a verdict that does not commit says "not enough
evidence" and lists what to ask the customer for.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.known.triage_commit import ASK_FOR, COMMIT, INFERRED, NAMED_SHARE, NAMED_WEIGHT
from eaglegraph.known.triage_commit import TIERS as TIERS
from eaglegraph.results.triage import Category, TriageConfig
from eaglegraph.triage.rules import SAID, Contribution, Verdict
from eaglegraph.triage.state import ScanState


@dataclass(frozen=True)
class Commitment:
    tier: str
    confidence: float
    committed: bool
    ask_for: list[str]


def naming(v: Verdict) -> list[Contribution]:
    """The winner's contributions from rules whose evidence names the class."""
    return [c for c in v.contributions if c.category == v.category and c.rule not in INFERRED]


def tier_of(v: Verdict) -> str:
    """'named-log' (a log line names the class), 'named-said' (only the reporter's words do),
    'guess' (evidence points at the class without naming it) or 'nothing'."""
    total = sum(w for w in v.scores.values() if w > 0)
    if total <= 0:
        return "nothing"
    named = naming(v)
    weight = sum(c.weight for c in named)
    if weight < NAMED_WEIGHT or v.scores[v.category] / total < NAMED_SHARE:
        return "guess"
    from_log = any(not h.signal.startswith(SAID) for c in named for h in c.hits)
    return "named-log" if from_log else "named-said"


def _lacks(v: Verdict, cfg: TriageConfig, state: ScanState) -> list[str]:
    out: list[str] = []
    if v.primary is None:
        out.append("first-error")
    if not (cfg.cudagraph_mode_requested or cfg.enforce_eager or cfg.disable_cuda_graph):
        out.append("mode")
    if cfg.framework is None or cfg.version is None:
        out.append("launch")
    multi_rank = any(n > 0 for n in state.ranks.values()) or (cfg.tp or 1) > 1
    if v.category == Category.HANG or multi_rank:
        out.append("ranks")
    return out


def commitment(v: Verdict, cfg: TriageConfig, state: ScanState) -> Commitment:
    tier = TIERS[tier_of(v)]
    confidence = tier.confidence
    committed = tier.commits and confidence >= COMMIT
    lacks = set(_lacks(v, cfg, state))
    asks = [a.text for a in ASK_FOR if a.lacks in lacks]
    return Commitment(tier.id, confidence, committed, [] if committed else asks)
