"""Which known hazard a triage verdict can be, and the evidence each match needs.

A hazard (`known.hazards`) is one mechanism with its fix; a match here says which class of
failure it produces and which facts of a report (the same fact names as `triage_rules`) must
hold before triage may say "matches X, fixed by Y in Z". Without those facts it says nothing:
a wrong PR number costs a support engineer more than none.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.known.triage_rules import CONFIG, MODE, OOB, OOM, STALE, Conditions

_FAULT = ("mech.async", "says.fault")


@dataclass(frozen=True)
class IssueMatch(Conditions):
    hazard: str  # id in known.hazards
    category: str
    # The symptom alone is common (an OOM); only the version that ran ties it to this hazard.
    needs_version: bool = False


ISSUE_MATCHES: tuple[IssueMatch, ...] = (
    IssueMatch(
        "stale-padded-positions",
        STALE,
        needs=("fw.sglang",),
        any_of=_FAULT,
        unless=("phase.capture", "says.capture-failed", "says.no-padding"),
    ),
    IssueMatch(
        "piecewise-draft-decode",
        STALE,
        needs=("fw.vllm",),
        any_of=("ctx.mode-downgrade", "attn.flashinfer"),
        unless=("phase.capture", "says.capture-failed", "says.no-padding"),
    ),
    IssueMatch(
        "unpadded-last-token-indices",
        OOB,
        needs=("fw.vllm", "ctx.replay"),
        any_of=("mech.oob", "says.oob"),
    ),
    IssueMatch(
        "draft-max-positions",
        OOB,
        any_of=("says.long-context", "ctx.position-bound"),
        unless=("says.nograph-works",),
    ),
    IssueMatch(
        "dedicated-eagle-pool",
        OOM,
        needs=("fw.vllm",),
        any_of=("mech.oom", "says.oom"),
        needs_version=True,
    ),
    IssueMatch(
        "mode-downgraded",
        MODE,
        needs=("fw.vllm",),
        any_of=("ctx.mode-downgrade",),
    ),
    IssueMatch(
        "hidden-mismatch",
        CONFIG,
        any_of=("says.hidden", "ctx.hidden-shape"),
    ),
    IssueMatch(
        "lm-head-rows-mismatch",
        CONFIG,
        needs=("fw.sglang",),
        any_of=("says.vocab", "ctx.vocab-shape"),
    ),
)
