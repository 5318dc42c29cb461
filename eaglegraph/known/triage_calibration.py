"""How often each kind of evidence was right on reports it was not tuned on (issue 29).

A verdict's confidence used to be its tier's share of right verdicts on data the rules had been
tuned on, so it was overstated: the tiers read 96 % there and 56 % on the first frozen held-out
set. Here the unit is the *evidence kind*: the rule whose evidence names the verdict's class (a
primary log line of that kind, or the reporter's own statement), counted on the FIT_SOURCES:
`heldout-frozen.jsonl` (52 real reports gathered before the rules of issue 29 existed) and
`heldout-2.jsonl` (22 gathered before its method change), each read once for its report and a
dev set since. The second round's rules were written after studying their misses, so rates of
the kinds added then (`stated-width-error`, `crash-with-outside-feature`, `stated-slowdown`) are optimistic until a later held-out set counts
them; none of them is proven yet (MIN_SUPPORT). `scripts/triage_eval.py FILES --fit` prints
these rows; a test checks that they are what it counts.

A kind's rate is Laplace-smoothed; a kind seen on fewer than MIN_SUPPORT unseen reports is
*unproven* and never commits, however well it did on the dev sets (where every kind reads
90-100 %). Kinds that ranked high on the dev sets but were wrong on unseen reports (a reporter
saying "garbage output" is not an acceptance regression to the maintainers: they file it by its
mechanism, a mode or a stale read) are kept with their counts so that the verdict says so.

The knowledge base's nearest reports were cross-validated as evidence the same way, each
report's own URL left out. A score-weighted vote of the KB_VOTERS nearest reports that merely
agrees with the rules' verdict is no evidence (`KB_AGREEMENT`). When all KB_VOTERS nearest
reports are filed under the verdict's class and the report's own evidence names that class (a
named tier, `triage.commit`), it is: that kind, `kb-unanimous`, is one more evidence kind,
counted like the others. Alone, beside a guess or nothing, it no longer counts (issue 29, third
round): on the fit sources it was then right 1 time in 2, and on the dev sets (own URL left
out) 5 in 7.
"""

from __future__ import annotations

from dataclasses import dataclass

# Where the counts come from (relative to the repository root) and how many reports they hold:
# the first frozen held-out set, and the second since it was reported once (issue 29, second
# round). Both are dev sets now; the third held-out set (heldout-3.jsonl) is not counted here.
FIT_SOURCES: tuple[str, ...] = (
    "tests/triage/data/heldout-frozen.jsonl",
    "tests/triage/data/heldout-2.jsonl",
)
FIT_REPORTS = 74

# The nearest known reports (triage.similar) whose categories are weighed.
KB_VOTERS = 3
# The evidence kind of a verdict whose KB_VOTERS nearest known reports all share its class.
KB_UNANIMOUS = "kb-unanimous"

# A kind commits only when it was seen naming the verdict on at least this many unseen reports.
MIN_SUPPORT = 3
# Laplace smoothing: one right and one wrong verdict assumed before any count.
PRIOR_RIGHT = 1
PRIOR_N = 2


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
    def proven(self) -> bool:
        return self.n >= MIN_SUPPORT


# Counted by `scripts/triage_eval.py tests/triage/data/heldout-frozen.jsonl
# tests/triage/data/heldout-2.jsonl --fit`: for each report whose verdict rests on named
# evidence, every rule that names the winner.
KINDS: dict[str, KindRate] = {
    k.kind: k
    for k in (
        KindRate("stated-hang", 11, 12),
        KindRate(KB_UNANIMOUS, 6, 6),
        KindRate("stated-corruption", 2, 7),
        KindRate("log-hang-prose", 5, 6),
        KindRate("stated-memory", 1, 4),
        KindRate("stated-load-mismatch", 3, 3),
        KindRate("crash-with-outside-feature", 2, 2),
        KindRate("log-index-assert", 1, 2),
        KindRate("log-shape", 2, 2),
        KindRate("stated-capture", 2, 2),
        KindRate("stated-shrink", 1, 2),
        KindRate("stated-width-error", 2, 2),
        KindRate("log-acceptance-collapsed", 0, 1),
        KindRate("log-draft-load", 1, 1),
        KindRate("log-fault-during-capture", 1, 1),
        KindRate("log-k-limit", 0, 1),
        KindRate("log-shape-tokens", 1, 1),
        KindRate("log-stack-dump", 1, 1),
        KindRate("log-stall", 1, 1),
        KindRate("log-watchdog", 1, 1),
        KindRate("stated-slowdown", 1, 1),
        KindRate("stated-stale", 1, 1),
    )
}

# The same count for verdicts that do not rest on one proven kind, by tier (commit.tier_of):
# named evidence of unproven kinds, a guess from context, nothing at all.
TIER_RATES: dict[str, KindRate] = {
    t.kind: t
    for t in (
        KindRate("named", 30, 43),
        KindRate("guess", 6, 11),
        KindRate("nothing", 9, 20),
    )
}

# The knowledge base's top-k vote agreeing with the rules' verdict, on the same reports.
KB_AGREEMENT = KindRate("kb-vote-agrees", 26, 40)
