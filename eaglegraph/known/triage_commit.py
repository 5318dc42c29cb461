"""When a triage verdict commits, how sure it may say it is, and what to ask for when it does not.

Precision first: a category is *committed* only on evidence that names it — a root error line
of that kind, the phase the failure happened in, or the reporter's own statement. The rules of
`triage_rules.RULES` and `triage_log_rules.LOG_RULES` listed in `INFERRED` weigh what is
*likely* (an async fault in serving is most often a stale read, a device assert is most often
an index check): they still rank the categories, so a ticket gets a best guess, but they never
make a verdict committed. A verdict that is not committed says "not enough evidence" and lists
what to ask the customer for (`ASK_FOR`).

The confidence a verdict states is the share of right verdicts in its tier (`TIERS`) on the
calibration part of the dev/tune data (`scripts/triage_eval.py --part calibration`: the reports
whose URL hashes to 0 mod 3), a part the rules of issue 29 were not developed on.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.known.triage_rules import NO_EVIDENCE_CONFIDENCE, WEAK

# A verdict at or above this stated confidence is committed (and must be right >= 90 %).
COMMIT = 0.6

# Rules whose weight is an inference from context, not evidence that names the class.
INFERRED: frozenset[str] = frozenset(
    {
        # log rules: a mechanism that usually, not always, means the class
        "log-device-assert",
        "log-shape-width",
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


@dataclass(frozen=True)
class Tier:
    """A kind of verdict and how often verdicts of that kind were right on the calibration part.

    `right`/`n` are counted by `scripts/triage_eval.py --part calibration` on the dev/tune data
    (tests/triage/data/*.jsonl, tests/triage/fixtures/*.jsonl, the shared crash-logs-dev*.jsonl);
    the stated confidence is their Laplace-smoothed share, capped below COMMIT for tiers that do
    not commit.
    """

    id: str
    commits: bool
    right: int
    n: int
    why: str
    stated: float | None = None  # a confidence fixed by definition, not by counts

    @property
    def confidence(self) -> float:
        if self.stated is not None:
            return self.stated
        p = round((self.right + 1) / (self.n + 2), 2)
        return p if self.commits else min(p, NOT_COMMITTED_CAP)


# A verdict that does not commit states less than WEAK, whatever its tier's share: it comes with
# "not enough evidence" and what to ask for, never as an answer.
NOT_COMMITTED_CAP = round(WEAK - 0.05, 2)

TIERS: dict[str, Tier] = {
    t.id: t
    for t in (
        Tier("named-log", True, 20, 21, "a line of the log names the class"),
        Tier("named-said", True, 18, 19, "only the reporter's own statements name the class"),
        Tier("guess", False, 6, 6, "evidence points at the class, but none names it"),
        Tier(
            "nothing",
            False,
            1,
            1,
            "no rule fired: nothing in the report points anywhere",
            NO_EVIDENCE_CONFIDENCE,
        ),
    )
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
