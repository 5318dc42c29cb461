"""Match a verdict against the known hazards, and say so only when the evidence supports it.

The sentence follows the data: "matches <issue> (<hazard id>)", "fixed by <PR> in <engine> ≥
<release>", and what the report says about the version that ran. A report whose version
already carries the fix does not match: the same symptom then has another cause.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.known.hazards import Hazard, hazard
from eaglegraph.known.triage_issues import ISSUE_MATCHES
from eaglegraph.known.upstream import UPSTREAM
from eaglegraph.known.versions import ENGINE_LABELS, parse_version
from eaglegraph.results.triage import TriageConfig


@dataclass(frozen=True)
class KnownIssue:
    hazard: Hazard
    sentence: str
    full_ref: str | None  # the GitHub ref of the fix, else of the first issue


def _named(h: Hazard) -> str:
    if h.refs:
        return f"matches {h.refs[0]} ({h.id})"
    if h.ref_note:
        return f"matches {h.id} ({h.ref_note})"
    return f"matches {h.id}"


def match(category: str, facts: set[str], cfg: TriageConfig) -> tuple[list[KnownIssue], list[str]]:
    """The hazards this verdict can be, each with its one-line statement; and the hazards ruled
    out because the version that ran already carries their fix."""
    out: list[KnownIssue] = []
    ruled_out: list[str] = []
    version = parse_version(cfg.version)
    for m in ISSUE_MATCHES:
        if m.category != category or not m.holds(facts):
            continue
        h = hazard(m.hazard)
        if h.engine is not None and cfg.framework not in (None, h.engine):
            continue
        if m.needs_version and version is None:
            continue
        engine = h.engine or cfg.framework
        label = ENGINE_LABELS.get(engine or "", "engine")
        change = h.fix_change
        if change is not None and engine != change.engine:
            change = None  # the fix is another engine's: say nothing about it
        affected = h.affected if change is not None else None
        if version is not None and affected is not None and version not in affected:
            ruled_out.append(
                f"not {h.id}: {label} {cfg.version} carries its fix ({change.pr if change else ''})"
            )
            continue
        parts = [_named(h)]
        if change is not None:
            where = f" in {change.carried_by()}" if change.released_in else " (no release yet)"
            parts.append(f"fixed by {change.pr}{where}")
        if version is not None and cfg.version:
            tail = ", which predates the fix" if affected is not None else ""
            parts.append(f"you run {label} {cfg.version}{tail}")
        else:
            parts.append(f"the {label} version is not in the report")
        ref = change.full_ref if change else (UPSTREAM[h.refs[0]].full_ref if h.refs else None)
        out.append(KnownIssue(h, "; ".join(parts), ref))
    return out, ruled_out
