"""A multi-rank failure told apart: all ranks in a collective, one step stuck, or a rank died.

The kind comes from the stop forms of `known.triage_distributed` found in the log; a root error
before them makes it a rank that died first, the rest being its cascade.
"""

from __future__ import annotations

import re

from eaglegraph.known.triage_distributed import NEXT_STEP, STOP_FORMS, StopKind
from eaglegraph.known.triage_signals import Mechanism
from eaglegraph.results.triage import Distributed, Evidence, Role, TriageConfig
from eaglegraph.triage.rules import Verdict
from eaglegraph.triage.state import Hit, ScanState

_ORDER = (StopKind.COLLECTIVE_WAIT, StopKind.STEP_STUCK, StopKind.RANK_DIED)


def _forms(state: ScanState) -> list[tuple[str, StopKind, Hit]]:
    out = []
    for form in STOP_FORMS:
        pattern = re.compile(form.pattern)
        hit = next((h for h in state.hits(*form.signals) if pattern.search(h.text)), None)
        if hit is not None:
            out.append((form.id, form.kind, hit))
    return out


def distributed(v: Verdict, cfg: TriageConfig, state: ScanState) -> Distributed | None:
    """The stop's kind, the first error across ranks and its cascade; None for a single rank
    with no stop form in the log."""
    forms = _forms(state)
    if not forms:
        return None
    primary = v.primary
    died = primary is not None and v.primary_mechanism != Mechanism.HANG
    if died:
        kind = StopKind.RANK_DIED
    else:
        kinds = {k for _, k, _ in forms}
        kind = next(k for k in _ORDER if k in kinds)
    first = None
    cascade = 0
    if died and primary is not None:
        first = Evidence(primary.line, primary.text, primary.signal, Role.PRIMARY)
        cascade = sum(1 for h in v.secondary if h.line >= primary.line)
    return Distributed(
        kind=kind,
        signals=[f"{fid} (line {h.line})" for fid, _, h in forms],
        first_error=first,
        cascade=cascade,
        next_step=NEXT_STEP[kind],
    )
