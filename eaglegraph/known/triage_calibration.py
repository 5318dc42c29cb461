"""How often each kind of evidence was right on reports it was not tuned on (issue 29).

A verdict's confidence used to be its tier's share of right verdicts on data the rules had been
tuned on, so it was overstated: the tiers read 96 % there and 56 % on the first frozen held-out
set. Here the unit is the *evidence kind*: the rule whose evidence names the verdict's class (a
primary log line of that kind, or the reporter's own statement), counted on the FIT_SOURCES:
`heldout-frozen.jsonl` (52 real reports gathered before the rules of issue 29 existed),
`heldout-2.jsonl` (22, gathered before its method change) and `heldout-3.jsonl` (20, gathered
before the second round's rules), each read once for its report and a dev set since. Rules
written after studying a set's misses make its rates optimistic until a later held-out set
counts them. `scripts/triage_eval.py FILES --fit` prints these rows; a test checks that they
are what it counts.

A kind's stated rate is Laplace-smoothed. Whether it *commits* is decided from its uncertainty,
not from that point estimate: the lower end of the Wilson score interval of its counts
(WILSON_Z = 1.645, one-sided 95 %) must reach COMMIT_LOWER, so a kind commits only when it was
both precise and seen often enough (3 of 3 passes at 0.53, 5 of 6 does not at 0.50, 14 of 15
does at 0.75). The bound was picked by leave-one-source-out cross-validation
(`scripts/triage_eval.py heldout-frozen heldout-2 heldout-3 --cv`): fit the counts on two sets,
count commits on the third, all three folds summed (issue 29, fourth round):

    gate                 frozen  heldout-2  heldout-3   committed right
    seen on >= 3, rate    15/22     6/6        6/6       27/34   79 %   (the gate it replaced)
    no gate               15/22     6/6        8/8       29/36   81 %
    lower >= 0.40         14/19     6/6        8/8       28/33   85 %
    lower >= 0.50         14/15     6/6        6/6       26/27   96 %   (COMMIT_LOWER)
    lower >= 0.60         12/13     5/5        5/5       22/23   96 %
    lower >= 0.65          0/0      2/2        5/5        7/7   100 %

0.50 is the loosest bound that keeps every fold at >= 90 %; against the old gate it costs 7
commits of 34 (1 of them right). Kinds that ranked high on the dev sets but were wrong on
unseen reports (a reporter saying "garbage output" is not an acceptance regression to the
maintainers: they file it by its mechanism, a mode or a stale read) keep their counts, and a
verdict resting on one states that low rate (MIN_SUPPORT).

The knowledge base's nearest reports were cross-validated as evidence the same way, each
report's own URL left out. A score-weighted vote of the KB_VOTERS nearest reports that merely
agrees with the rules' verdict is no evidence (`KB_AGREEMENT`). When all KB_VOTERS nearest
reports are filed under the verdict's class and the report's own evidence names that class (a
named tier, `triage.commit`), it is: that kind, `kb-unanimous`, is one more evidence kind,
counted like the others. Alone, beside a guess or nothing, it does not count (issue 29, third
round): on the fit sources it was then right 1 time in 2, and on the dev sets (own URL left
out) 5 in 7. Verdicts between two classes (tier "between", `known.triage_commit.UNDECIDED`)
carry no kind: on the fit sources the class they would have picked was right 0 times in 6.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Where the counts come from (relative to the repository root) and how many reports they hold:
# the three held-out sets read once each (issue 29), dev sets now. heldout-4.jsonl, frozen for
# the lead's final read, is never counted here.
FIT_SOURCES: tuple[str, ...] = (
    "tests/triage/data/heldout-frozen.jsonl",
    "tests/triage/data/heldout-2.jsonl",
    "tests/triage/data/heldout-3.jsonl",
)
FIT_REPORTS = 94

# The nearest known reports (triage.similar) whose categories are weighed.
KB_VOTERS = 3
# The evidence kind of a verdict whose KB_VOTERS nearest known reports all share its class.
KB_UNANIMOUS = "kb-unanimous"

# A kind commits only when the lower end of the Wilson score interval of its counts (WILSON_Z
# standard deviations, one-sided) reaches COMMIT_LOWER: precise *and* seen often enough.
WILSON_Z = 1.645
COMMIT_LOWER = 0.5
# A kind seen naming the verdict on at least this many unseen reports states its own rate, low
# as it may be, when no kind of the verdict passes the gate (a verdict resting on "garbage
# output", right 2 times in 7, says so rather than its tier's rate).
MIN_SUPPORT = 3
# Laplace smoothing: one right and one wrong verdict assumed before any count.
PRIOR_RIGHT = 1
PRIOR_N = 2


def wilson_lower(right: int, n: int, z: float = WILSON_Z) -> float:
    """The lower end of the Wilson score interval of `right` successes in `n` (0 when n is 0)."""
    if n <= 0:
        return 0.0
    p = right / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - spread) / (1 + z * z / n)


@dataclass(frozen=True)
class KindRate:
    """An evidence kind (a rule id of `triage_rules.RULES` or `triage_log_rules.LOG_RULES`) and
    how often a verdict it named was right on the reports of FIT_SOURCES."""

    kind: str
    right: int
    n: int

    @property
    def rate(self) -> float:
        return round((self.right + PRIOR_RIGHT) / (self.n + PRIOR_N), 2)

    @property
    def lower(self) -> float:
        return round(wilson_lower(self.right, self.n), 2)

    def passes(self, bound: float = COMMIT_LOWER) -> bool:
        """Precise enough on enough reports to commit on (its lower bound reaches `bound`)."""
        return wilson_lower(self.right, self.n) >= bound

    @property
    def proven(self) -> bool:
        return self.passes()


# Counted by `scripts/triage_eval.py tests/triage/data/heldout-frozen.jsonl
# tests/triage/data/heldout-2.jsonl tests/triage/data/heldout-3.jsonl --fit`: for each report whose verdict rests on named
# evidence, every rule that names the winner.
KINDS: dict[str, KindRate] = {
    k.kind: k
    for k in (
        KindRate("stated-hang", 14, 15),
        KindRate("stated-corruption", 4, 9),
        KindRate(KB_UNANIMOUS, 8, 8),
        KindRate("log-hang-prose", 7, 8),
        KindRate("stated-memory", 3, 6),
        KindRate("stated-capture", 4, 4),
        KindRate("stated-load-mismatch", 4, 4),
        KindRate("log-shape", 3, 3),
        KindRate("crash-with-outside-feature", 2, 2),
        KindRate("stated-shrink", 1, 2),
        KindRate("stated-width-error", 2, 2),
        KindRate("log-acceptance-collapsed", 0, 1),
        KindRate("log-capture-unsupported", 1, 1),
        KindRate("log-draft-load", 1, 1),
        KindRate("log-fault-during-capture", 1, 1),
        KindRate("log-index-assert", 1, 1),
        KindRate("log-k-limit", 0, 1),
        KindRate("log-oom", 1, 1),
        KindRate("log-shape-tokens", 1, 1),
        KindRate("log-stack-dump", 1, 1),
        KindRate("log-stall", 1, 1),
        KindRate("log-watchdog", 1, 1),
        KindRate("stated-mode", 0, 1),
        KindRate("stated-oob", 1, 1),
        KindRate("stated-slowdown", 1, 1),
        KindRate("stated-stale", 1, 1),
    )
}

# The same count for verdicts that do not rest on one proven kind, by tier (commit.tier_of):
# named evidence of unproven kinds, evidence between two classes, a guess from context,
# nothing at all.
TIER_RATES: dict[str, KindRate] = {
    t.kind: t
    for t in (
        KindRate("between", 0, 6),
        KindRate("guess", 7, 9),
        KindRate("named", 42, 55),
        KindRate("nothing", 11, 24),
    )
}

# The knowledge base's top-k vote agreeing with the rules' verdict, on the same reports.
KB_AGREEMENT = KindRate("kb-vote-agrees", 36, 53)
