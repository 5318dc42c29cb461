"""How often each kind of evidence was right on reports no rule had been written from (issue 29).

A verdict's confidence is the rate of its *evidence kind* (the rule whose evidence names the
verdict's class: a primary log line of that kind, the reporter's own statement, or the nearest
known reports all filed under the class beside such evidence). Those rates are counted on the
**first-read ledger** (LEDGER, rebuilt by `scripts/triage_ledger.py`): every held-out set's
reports as triage gave them at the set's one read (FIRST_READS: the set and the commit whose
rules read it), checked verdict for verdict against the `.result.txt` recorded then. Nothing
in a row was written after its set was seen, so the ledger is the one split no rule was tuned
on.

Until issue 29's forty-first stop the rates were counted by today's rules on the same sets
(FIT_SOURCES), after rules had been written from their misses; they overstated: a stated load
mismatch 17 of 24 there, 18 of 31 at the reads; a stated acceptance drop 30 of 35 there, 13
of 17 at the reads; the pooled first-read commits were right 86 times in 104 (83 %) while
that in-sample table promised 93 %. A kind written or widened after the last read has no
rows here, or rows from its older reading, until the next read counts it: it states its
tier's rate and does not commit.

A kind's stated rate is Laplace-smoothed. Whether it *commits* is decided from its
uncertainty: the lower end of the Wilson score interval of its counts (WILSON_Z = 1.645,
one-sided 95 %) must reach COMMIT_LOWER, so a kind commits only when it was both precise and
seen often enough (0.72 for 7 of 7, 0.69 for 6 of 6, 0.78 for 17 of 18). The bound is picked
by leaving one read out (`scripts/triage_eval.py LEDGER --cv`): the counts of the other reads,
the commits of the one left out, all folds summed. The rule: the loosest bound that keeps
every fold at >= 90 % right; when none does, the bound whose worst fold is best, and among
bounds whose worst folds tie, the one right most often over all folds, the looser on a
further tie. Over the fifteen reads heldout-2 to heldout-16 (529 reports):

    gate     h-2 h-3 h-4 h-5   h-6   h-7 h-8 h-9   h-10 h-11 h-12 h-13 h-14 h-15 h-16 all
    >= 0.60  5/6 6/7 5/8 11/11 10/10 8/9 5/6 13/17 5/5  3/4  5/6  5/6  5/9  3/3  5/5  94/112
    >= 0.65  5/6 6/7 5/6 9/9   9/9   6/7 5/5 11/12 4/4  3/4  5/6  5/6  5/8  3/3  4/4  85/96
    >= 0.70  5/6 6/7 4/5 9/9   9/9   6/7 5/5 10/11 4/4  2/2  5/6  3/3  4/6  3/3  4/4  79/87
    >= 0.75  3/4 3/4 1/2 3/3   5/5   2/3 4/4 2/3   3/3  1/1  5/6  3/3  3/5  2/2  2/2  42/50

(all folds 84 %, 89 %, 91 %, 84 %.) No bound keeps every fold at 90 %; 0.70's worst fold
(heldout-14, 4 of 6) is the best worst fold, so COMMIT_LOWER is 0.70. Of its eight wrong
commits five rest on `kb-unanimous` beside a weak kind of the report's own, two on a stated
hang, one on an acceptance title. Fitted on the fourteen reads before heldout-16 the same rule
picked 0.70 (68 of 76, 89 %), and heldout-16's read under that table committed 4, all right.

The knowledge base's nearest reports are counted the same way, each read's reports never
being in the knowledge base at their read. A score-weighted vote of the KB_VOTERS nearest
reports that merely agrees with the rules' verdict is no evidence (`KB_AGREEMENT`: 133 right
of 196 at the reads). When all KB_VOTERS nearest reports are filed under the verdict's class
and the report's own evidence names that class (a named tier, `triage.commit`), it is: that
kind, `kb-unanimous`, is counted like the others. Verdicts between two classes (tier
"between", `known.triage_commit.UNDECIDED`) carry no kind: at the reads the class they picked
was right 1 time in 15.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# The held-out sets read once each (issue 29), dev sets now, and how many reports they hold
# (relative to the repository root). Until the forty-first stop the rates were counted here by
# the rules of the day; the sets stay the ones a new set must not overlap.
FIT_SOURCES: tuple[str, ...] = (
    "tests/triage/data/heldout-frozen.jsonl",
    "tests/triage/data/heldout-2.jsonl",
    "tests/triage/data/heldout-3.jsonl",
    "tests/triage/data/heldout-4.jsonl",
    "tests/triage/data/heldout-5.jsonl",
    "tests/triage/data/heldout-6.jsonl",
    "tests/triage/data/heldout-7.jsonl",
    "tests/triage/data/heldout-8.jsonl",
    "tests/triage/data/heldout-9.jsonl",
    "tests/triage/data/heldout-10.jsonl",
    "tests/triage/data/heldout-11.jsonl",
    "tests/triage/data/heldout-12.jsonl",
    "tests/triage/data/heldout-13.jsonl",
    "tests/triage/data/heldout-14.jsonl",
    "tests/triage/data/heldout-15.jsonl",
    "tests/triage/data/heldout-16.jsonl",
)
FIT_REPORTS = 581

# Each held-out set's one read: the set and the commit whose rules read it, before any rule was
# written from it. `scripts/triage_ledger.py` triages each set again at its commit, checks the
# verdicts against the set's `.result.txt` and writes one row per report to LEDGER; KINDS and
# TIER_RATES are counted there (`scripts/triage_eval.py LEDGER --fit`). heldout-frozen has no
# recorded read and is not in it. A new set's read adds its row here, then the ledger is
# rebuilt and the tables refitted; until then nothing in it counts.
FIRST_READS: tuple[tuple[str, str], ...] = (
    ("tests/triage/data/heldout-2.jsonl", "7b02344"),
    ("tests/triage/data/heldout-3.jsonl", "d191afb"),
    ("tests/triage/data/heldout-4.jsonl", "598ed71"),
    ("tests/triage/data/heldout-5.jsonl", "4adcbde"),
    ("tests/triage/data/heldout-6.jsonl", "9b24347"),
    ("tests/triage/data/heldout-7.jsonl", "85d7391"),
    ("tests/triage/data/heldout-8.jsonl", "8626dc6"),
    ("tests/triage/data/heldout-9.jsonl", "6e2a543"),
    ("tests/triage/data/heldout-10.jsonl", "b0b8326"),
    ("tests/triage/data/heldout-11.jsonl", "e033889"),
    ("tests/triage/data/heldout-12.jsonl", "ece76ee"),
    ("tests/triage/data/heldout-13.jsonl", "565d613"),
    ("tests/triage/data/heldout-14.jsonl", "68f70da"),
    ("tests/triage/data/heldout-15.jsonl", "82e65d4"),
    ("tests/triage/data/heldout-16.jsonl", "cdc52ba"),
)
LEDGER = "tests/triage/data/first-reads.jsonl"

# The nearest known reports (triage.similar) whose categories are weighed.
KB_VOTERS = 3
# The evidence kind of a verdict whose KB_VOTERS nearest known reports all share its class.
KB_UNANIMOUS = "kb-unanimous"

# A kind commits only when the lower end of the Wilson score interval of its counts (WILSON_Z
# standard deviations, one-sided) reaches COMMIT_LOWER: precise *and* seen often enough.
WILSON_Z = 1.645
COMMIT_LOWER = 0.70
# A kind seen naming the verdict on at least this many first-read reports states its own rate,
# low as it may be, when no kind of the verdict passes the gate (a verdict resting on a stated
# slowdown, right 3 times in 9 at the reads, says so rather than its tier's rate).
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
    how often a verdict it named was right at the first reads (LEDGER)."""

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


# Counted by `scripts/triage_eval.py LEDGER --fit`: for each first-read verdict resting on named
# evidence, every rule that named the winner.
KINDS: dict[str, KindRate] = {
    k.kind: k
    for k in (
        KindRate(KB_UNANIMOUS, 38, 43),
        KindRate("stated-corruption", 29, 41),
        KindRate("stated-load-mismatch", 18, 32),
        KindRate("stated-hang", 20, 22),
        KindRate("log-acceptance-collapsed", 16, 19),
        KindRate("stated-acceptance-drop", 14, 18),
        KindRate("stated-memory", 11, 17),
        KindRate("log-hang-prose", 14, 16),
        KindRate("titled-acceptance", 15, 16),
        KindRate("stated-oob", 8, 15),
        KindRate("log-shape", 6, 11),
        KindRate("stated-capture", 11, 11),
        KindRate("stated-slowdown", 3, 9),
        KindRate("log-capture-unsupported", 7, 7),
        KindRate("log-index-assert", 4, 6),
        KindRate("log-oom", 6, 6),
        KindRate("log-stall", 4, 5),
        KindRate("log-watchdog", 4, 5),
        KindRate("stated-shrink", 3, 5),
        KindRate("stated-stale", 4, 5),
        KindRate("stated-load-and-mismatch", 3, 4),
        KindRate("crash-with-outside-feature", 2, 3),
        KindRate("log-draft-load", 3, 3),
        KindRate("stated-k-gated", 1, 3),
        KindRate("stated-mode", 1, 3),
        KindRate("log-collective-timeout", 1, 1),
        KindRate("log-config-key", 0, 1),
        KindRate("log-frames-through-capture", 1, 1),
        KindRate("log-k-limit", 0, 1),
        KindRate("log-shape-tokens", 1, 1),
        KindRate("log-spec-refused", 0, 1),
        KindRate("log-stack-dump", 1, 1),
    )
}

# The same count for verdicts that do not rest on one proven kind, by tier (commit.tier_of):
# named evidence of unproven kinds, evidence between two classes, a guess from context,
# nothing at all.
TIER_RATES: dict[str, KindRate] = {
    t.kind: t
    for t in (
        KindRate("between", 1, 15),
        KindRate("guess", 42, 89),
        KindRate("named", 158, 228),
        KindRate("nothing", 70, 197),
    )
}

# The knowledge base's top-k vote agreeing with the rules' verdict, on the same reports.
KB_AGREEMENT = KindRate("kb-vote-agrees", 133, 196)
