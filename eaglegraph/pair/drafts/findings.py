"""The findings a draft kind raises about its pair: a known hazard, a pair check, a width that
does not fit. Each takes its reference and fix text from `known/`, never from the kind."""

from __future__ import annotations

from eaglegraph.known.hazards import hazard
from eaglegraph.known.pair_checks import pair_check
from eaglegraph.results.findings import Finding, Severity


def hazard_finding(
    hazard_id: str,
    severity: Severity,
    message: str,
    *,
    fix: str | None = None,
    hazard_fix: bool = False,
) -> Finding:
    """The finding that is known hazard `hazard_id`: its id, the hazard's ref and the link to it;
    `fix` as given, or the hazard's own fix text with `hazard_fix`."""
    known = hazard(hazard_id)
    return Finding(
        id=hazard_id,
        severity=severity,
        message=message,
        ref=known.ref_text,
        fix=known.fix_text if hazard_fix else fix,
        hazard=hazard_id,
    )


def check_finding(check_id: str, severity: Severity, message: str) -> Finding:
    """The finding of pair check `check_id`: the message, then what the engine does with it;
    the check's fix and its public references (`known.pair_checks`)."""
    check = pair_check(check_id)
    return Finding(
        id=check_id,
        severity=severity,
        message=f"{message}: {check.engine_does}",
        ref=check.ref_text,
        fix=check.change,
    )


def width_mismatch(draft: int, target: int, message: str, fix: str | None = None) -> list[Finding]:
    """`hidden-mismatch` (an error) when what the draft consumes is not the target's width."""
    if draft == target:
        return []
    return [hazard_finding("hidden-mismatch", Severity.ERROR, message, fix=fix)]
