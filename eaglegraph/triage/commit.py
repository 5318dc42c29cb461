"""Whether a verdict commits to its category, the confidence it states, and what it lacks.

A verdict commits only on evidence that names its class (`known.triage_commit`): the weight
of the winner's rules that are not inferences must reach NAMED_WEIGHT and hold NAMED_SHARE of
all the weight in the report. Which of those rules it rests on is its *evidence kind*; the
confidence it states is that kind's rate on reports no rule was written for
(`known.triage_calibration`), and it commits only when the kind passes the gate there (the
lower end of the Wilson interval of its counts reaches COMMIT_LOWER: precise, and seen often
enough to say so) and its rate reaches COMMIT. Evidence that cannot tell two classes apart
(`known.triage_commit.UNDECIDED`: a bad address alone, an index assert that comes and goes)
puts the verdict "between" them: it never commits and asks for what separates them. The
knowledge base is one more kind: the nearest known reports all filed under
the verdict's class (`kb-unanimous`), counted only beside evidence of the report's own that
names the class (a named tier): similar reports are not evidence that names anything in this
report, and alone they were wrong as often as the unproven kinds on the dev sets (a guess of
an OOM as a capture failure, a stale read taken for an index check). Every other verdict
states its tier's rate on the same reports, capped below WEAK, says "not enough evidence" and
lists what to ask the customer for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from eaglegraph.known.triage_calibration import (
    COMMIT_LOWER,
    KB_UNANIMOUS,
    KB_VOTERS,
    KINDS,
    MIN_SUPPORT,
    TIER_RATES,
    KindRate,
)
from eaglegraph.known.triage_commit import (
    ASK_FOR,
    COMMIT,
    INFERRED,
    NAMED_SHARE,
    NAMED_WEIGHT,
    NOT_COMMITTED_CAP,
    UNDECIDED,
    Undecided,
)
from eaglegraph.known.triage_rules import NO_EVIDENCE_CONFIDENCE
from eaglegraph.results.triage import Category, TriageConfig
from eaglegraph.triage.rules import SAID, Contribution, Verdict
from eaglegraph.triage.state import ScanState


@dataclass(frozen=True)
class Commitment:
    tier: str
    confidence: float
    committed: bool
    ask_for: list[str]
    # The rules whose evidence names the winner, and the one its confidence rests on.
    kinds: list[str]
    kind: str | None
    # The evidence that cannot tell the verdict's class from another (tier "between").
    undecided: Undecided | None = None


def naming(v: Verdict) -> list[Contribution]:
    """The winner's contributions from rules whose evidence names the class."""
    return [c for c in v.contributions if c.category == v.category and c.rule not in INFERRED]


def undecided(v: Verdict) -> Undecided | None:
    """The first UNDECIDED row whose facts hold and whose classes hold the verdict's."""
    facts = set(v.facts)
    return next((u for u in UNDECIDED if v.category in u.classes and u.holds(facts)), None)


def tier_of(v: Verdict) -> str:
    """'named-log' (a log line names the class), 'named-said' (only the reporter's words do),
    'between' (the evidence cannot tell the class from another, `UNDECIDED`), 'guess'
    (evidence points at the class without naming it) or 'nothing'."""
    total = sum(w for w in v.scores.values() if w > 0)
    if total <= 0:
        return "nothing"
    if undecided(v) is not None:
        return "between"
    named = naming(v)
    weight = sum(c.weight for c in named)
    if weight < NAMED_WEIGHT or v.scores[v.category] / total < NAMED_SHARE:
        return "guess"
    from_log = any(not h.signal.startswith(SAID) for c in named for h in c.hits)
    return "named-log" if from_log else "named-said"


def evidence_kinds(v: Verdict) -> list[str]:
    """The distinct rules naming the winner, in the order they weighed in."""
    return list(dict.fromkeys(c.rule for c in naming(v) if c.rule))


def best_kind(
    kinds: list[str], table: Mapping[str, KindRate] = KINDS, bound: float = COMMIT_LOWER
) -> KindRate | None:
    """The kind with the highest rate among `kinds` whose counts in `table` pass the gate
    (the lower bound of their interval reaches `bound`); None when none does. The arguments
    are for cross-validation (`scripts/triage_eval.py --cv`); triage uses the defaults."""
    passing = [table[k] for k in kinds if k in table and table[k].passes(bound)]
    return max(passing, key=lambda k: (k.rate, k.n), default=None)


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


def kb_unanimous(v: Verdict, neighbours: list[str]) -> bool:
    """The KB_VOTERS nearest known reports (best first) are all filed under the verdict's class."""
    near = neighbours[:KB_VOTERS]
    return len(near) == KB_VOTERS and all(c == v.category for c in near)


def commitment(
    v: Verdict, cfg: TriageConfig, state: ScanState, neighbours: list[str] | None = None
) -> Commitment:
    """`neighbours`: the categories of the nearest known reports, best first."""
    tier = tier_of(v)
    named = tier.startswith("named")
    kinds = evidence_kinds(v) if named else []
    if named and kb_unanimous(v, neighbours or []):
        kinds.append(KB_UNANIMOUS)
    kind = best_kind(kinds)
    rated = kind or max(
        (KINDS[k] for k in kinds if k in KINDS and KINDS[k].n >= MIN_SUPPORT),
        key=lambda k: (k.rate, k.n),
        default=None,
    )
    if rated is not None:
        confidence = rated.rate
    elif tier == "nothing":
        confidence = NO_EVIDENCE_CONFIDENCE
    else:
        key = "named" if named else tier
        confidence = TIER_RATES.get(key, KindRate(key, 0, 0)).rate
    committed = kind is not None and confidence >= COMMIT
    if not committed:
        confidence = min(confidence, NOT_COMMITTED_CAP)
    lacks = set(_lacks(v, cfg, state))
    asks = [a.text for a in ASK_FOR if a.lacks in lacks]
    return Commitment(
        tier,
        confidence,
        committed,
        [] if committed else asks,
        kinds,
        rated.kind if rated is not None else None,
        undecided(v) if tier == "between" else None,
    )
