"""Findings: the one result type every check, probe and triage rule reports.

A finding always names the rule that produced it and, where one exists, the PR or issue that
documents the hazard, so a support engineer can go from a line in a report to the upstream fix.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 2, "warning": 1, "info": 0}[self.value]


@dataclass(frozen=True)
class Finding:
    """One observation. Optional fields are filled by the layers that know them."""

    id: str
    severity: Severity
    message: str
    ref: str | None = None
    kind: str | None = None
    phase: str | None = None
    buffer: str | None = None
    kernel: str | None = None
    mode: str | None = None
    descriptor: str | None = None
    batch: str | None = None
    evidence: str | None = None
    fix: str | None = None
    hazard: str | None = None  # the id of the known hazard this is (eaglegraph.known.hazards)
    rank: int | None = None  # the global rank it was seen on (multi-rank runs)


FAIL_ON_CHOICES = ("error", "warning", "never")


def reaches(findings: Iterable[Finding], fail_on: str) -> bool:
    """True when any finding is at or above the `--fail-on` threshold."""
    if fail_on == "never":
        return False
    threshold = Severity(fail_on).rank
    return any(f.severity.rank >= threshold for f in findings)
