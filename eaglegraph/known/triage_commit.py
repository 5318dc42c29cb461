"""When a triage verdict commits, how sure it may say it is, and what to ask for when it does not.

Precision first: a category is *committed* only on evidence that names it — a root error line
of that kind, the phase the failure happened in, or the reporter's own statement. The rules of
`triage_rules.RULES` and `triage_log_rules.LOG_RULES` listed in `INFERRED` weigh what is
*likely* (an async fault in serving is most often a stale read, a device assert is most often
an index check): they still rank the categories, so a ticket gets a best guess, but they never
make a verdict committed. A verdict that is not committed says "not enough evidence" and lists
what to ask the customer for (`ASK_FOR`).

The confidence a verdict states is how often its kind of evidence was right on reports no rule
was written for (`known.triage_calibration`); a kind commits only once it has been right there
often enough, so a rule that reads 100 % on the dev sets it was tuned on does not commit on its
own say.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.known.triage_categories import Category
from eaglegraph.known.triage_rules import OOB, STALE, WEAK, Conditions, when

# A verdict at or above this stated confidence is committed (and must be right >= 90 %).
COMMIT = 0.6

# Rules whose weight is an inference from context, not evidence that names the class.
INFERRED: frozenset[str] = frozenset(
    {
        # log rules: a mechanism that usually, not always, means the class
        "log-device-assert",
        "log-shape-width",
        "log-shape-unsized",
        "log-capture-wrapper-beside-mechanism",
        "log-specific-during-capture",
        "log-capture-wrapper-after-capture",
        "log-assert-in-padded-replay",
        "log-fault-in-eager-kernel",
        "log-fault-in-eager-kernel-stale",
        "log-nan",
        "log-nan-stale",
        "log-fault-while-serving",
        "log-fault-elsewhere",
        "log-fault-without-context",
        "log-padded-replay-no-failure",
        "log-serving-frames",
        "log-serving-frames-other",
        "log-plain-exception",
        "log-mode-downgrade-beside-error",
        "log-mode-soft",
        "log-mode-info-only",
        "log-mode-changed",
        "log-acceptance-healthy-elsewhere",
        "log-gibberish",
        "log-peer-lost-alone",
        "log-hang-prose-beside-error",
        "log-capture-stopped-capture",
        # statement rules: the reporter's context, read through what is most frequent
        "fault-on-replay",
        "fault-gone-without-graphs",
        "fault-with-outside-feature",
        "serving-graph-named",
        "fault-without-padding",
        "fault-without-spec-decode",
        "fault-after-piecewise-downgrade",
        "fault-stated-only",
        "fault-stated-only-other",
        "fault-without-known-replay-hazard",
        "fault-under-load-with-graphs",
        "crash-in-outside-feature",
        "fault-at-startup-replay",
    }
)

# A verdict committed on named evidence needs this much of it for its class, and its class must
# hold this share of all the weight in the report (the rest points elsewhere).
NAMED_WEIGHT = 1.0
NAMED_SHARE = 0.55


# When no rule finds any evidence (tier "nothing"), the verdict is "other": a support desk's
# honest answer when nothing names a class, with what to ask for (`ASK_FOR`). Issue 29's
# seventh round measured three policies on those reports of every dev file (per-file table in
# benchmarks/triage_accuracy_round7.txt): the class the nearest known reports weigh most (the
# policy before), "other", and the most frequent label of the report's engine on the six fit
# sets (leave-one-source-out), which is "other" for vLLM, SGLang and the rest alike, so the
# same verdict. On the real public reports (the six held-out sets, gathered-holdout,
# held-out-2: 67 such reports) "other" is right 33 times, the neighbours' class 32; on the four
# sets gathered after the neighbours' policy was chosen (heldout-3 to 6) 26 against 22; only on
# heldout-frozen, which that policy was chosen on, does it do better (8 against 6). Chosen per
# left-out source on the others, the pick flips between the two and scores 28 of 67: the
# totals do not separate them, so the answer that claims nothing wins. Synthetic logs weigh
# less (crash-logs-dev*: no such report). Engine and phase together (27 of 67) are worse.
NO_EVIDENCE_CLASS = Category.OTHER
NO_EVIDENCE_NOTE = (
    "no rule found evidence naming a class: the verdict is 'other' until the report says more "
    "(see what to ask for); the similar known reports are listed, not taken for the class"
)

# A verdict that does not commit states less than WEAK, whatever its evidence's rate: it comes
# with "not enough evidence" and what to ask for, never as an answer.
NOT_COMMITTED_CAP = round(WEAK - 0.05, 2)

# What each tier of a verdict means (`triage.commit.tier_of`); the rates are in
# `known.triage_calibration`.
TIER_WHY: dict[str, str] = {
    "named-log": "a line of the log names the class",
    "named-said": "only the reporter's own statements name the class",
    "guess": "evidence points at the class, but none names it",
    "between": "the evidence names a pair of classes it cannot tell apart (UNDECIDED)",
    "nothing": "no rule fired: nothing in the report points anywhere",
}


@dataclass(frozen=True)
class Ask:
    """What to ask the customer for when a report lacks it (`lacks` is read in triage/)."""

    lacks: str
    text: str


ASK_FOR: tuple[Ask, ...] = (
    Ask(
        "first-error",
        "the first error line of the log (the first Traceback or CUDA error, not the NCCL "
        "watchdog or EngineDeadError that follow it)",
    ),
    Ask(
        "mode",
        "the CUDA-graph mode: vLLM `--compilation-config '{\"cudagraph_mode\": ...}'` or "
        "`--enforce-eager`, SGLang `--disable-cuda-graph` / `--cuda-graph-max-bs`",
    ),
    Ask("launch", "the launch command and the engine version (`pip show vllm sglang`)"),
    Ask(
        "ranks",
        "the stacks of every rank while it is stuck: `eaglegraph stacks PID --subprocesses` "
        "on each host, and every rank's log",
    ),
)


@dataclass(frozen=True, kw_only=True)
class Undecided(Conditions):
    """Evidence that cannot tell `classes` apart: when its facts hold and the verdict is one
    of them, the verdict names both and never commits (its tier is "between"); `ask` is what
    separates them, `{probe}` the reproduction triage suggests."""

    id: str
    classes: tuple[Category, ...]
    why: str
    ask: str


# What separates a stale read from an index computed out of range (crash-triage.md,
# "Discriminating facts" 3 and 4): a synchronous error names the faulting index, and a stale
# replayed buffer goes away with graphs off.
_SEPARATE = (
    "what separates an out-of-range index from a stale buffer: the first error with "
    "`CUDA_LAUNCH_BLOCKING=1` (the faulting line and its index), and whether it still fails "
    'with CUDA graphs off (vLLM `--compilation-config \'{{"cudagraph_mode": "NONE"}}\'`, '
    "SGLang `--disable-cuda-graph`); `{probe}` replays the step's padded batches and reports "
    "a stale or out-of-range read"
)


def _undecided(rid: str, classes: tuple[Category, ...], facts: str, why: str) -> Undecided:
    return Undecided(id=rid, classes=classes, why=why, ask=_SEPARATE, **vars(when(facts)))


UNDECIDED: tuple[Undecided, ...] = (
    # An illegal memory access or a misaligned address says only that an address was bad.
    # crash-triage.md files such faults under both classes: a stale row of a padded buffer
    # (vllm#43682 block_table[-1], sglang#10892 positions) and a misaligned offset or an index
    # past the end (vllm#46324, vllm#39773). Nothing of the report names either here: no index
    # assert, no padding or shrink, no stale values, no synchronous faulting line.
    _undecided(
        "bad-address",
        (STALE, OOB),
        "?mech.async ?says.fault !mech.oob !says.oob !ctx.replay !ctx.fault-at-index "
        "!log.padding !log.shrink-fault !log.position-key !says.shrink !says.stale "
        "!says.garbage-index !phase.capture !says.capture-failed",
        "an illegal memory access or misaligned address is a bad address, which a stale "
        "row of a replayed buffer gives as often as an index computed past a buffer's end",
    ),
    # A device-side index assert names an index out of range, but not where the index came
    # from. When the failure comes and goes with load or time for the same setup, the index
    # was read from a buffer whose contents depend on timing: freed and reused, or left stale
    # by an earlier replay (crash-triage.md: vllm#39773's stale gather indices, sglang#23037's
    # stale padded rows). An index computed out of range from the requests fails the same way
    # each time they recur; only a synchronous faulting line tells the two apart.
    _undecided(
        "index-assert-comes-and-goes",
        (OOB, STALE),
        "mech.oob ?says.under-load ?says.intermittent !phase.capture !says.capture-failed "
        "!ctx.launch-blocking !says.launch-blocking",
        "an index assert that comes and goes with load or time read its index from a buffer "
        "whose contents depend on timing: a stale or reused buffer as often as an index "
        "computed out of range",
    ),
)
