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

from eaglegraph.known.triage_rules import WEAK

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


# A verdict that does not commit states less than WEAK, whatever its evidence's rate: it comes
# with "not enough evidence" and what to ask for, never as an answer.
NOT_COMMITTED_CAP = round(WEAK - 0.05, 2)

# What each tier of a verdict means (`triage.commit.tier_of`); the rates are in
# `known.triage_calibration`.
TIER_WHY: dict[str, str] = {
    "named-log": "a line of the log names the class",
    "named-said": "only the reporter's own statements name the class",
    "guess": "evidence points at the class, but none names it",
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
