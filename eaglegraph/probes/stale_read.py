"""What the probe's cases add up to: findings and the per-buffer matrix of a probe run.

`probing.py` plans and runs the cases (`cases.py` is one case). Guard violations, differential
changes between the two sentinels, NaN in valid outputs and written canary blocks become
findings, each tied to the buffer, phase, kernel, mode, batch and descriptor it was seen in,
and to the known hazard it is.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Any

from eaglegraph.known.hazards import hazard_for_buffer
from eaglegraph.probes.poisoning import is_sentinel
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.results.probe import (
    CanaryHit,
    CaseResult,
    GuardViolation,
    InvariantViolation,
    MatrixRow,
    ReferenceDivergence,
)

VLLM_MODES = ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE", "BREAKABLE")
SGLANG_MODES = ("NONE", "FULL", "BREAKABLE")


def _known(buffer: str, phase: str) -> tuple[str | None, str | None, str]:
    """(hazard id, ref, fix) of the known hazard this read is, or what to look for."""
    h = hazard_for_buffer(buffer, phase)
    if h is None:
        return None, None, "find the code that fills this buffer's padding rows for padded replays"
    return h.id, h.ref, h.fix_text or ""


def build_findings(cases: list[CaseResult]) -> list[Finding]:
    groups: dict[tuple[str, str, str, str], list[tuple[CaseResult, GuardViolation]]] = defaultdict(
        list
    )
    for case in cases:
        for v in case.violations:
            stale = is_sentinel(v.value)
            kind = "oob-read" if v.kernel == "gather_rows" or not stale else "stale-read"
            groups[(kind, v.phase, v.buffer, v.kernel)].append((case, v))
    findings: list[Finding] = []
    for (kind, phase, buffer, kernel), hits in groups.items():
        seen = sorted({(c.mode, c.batch, c.descriptors.get(phase, "")) for c, _ in hits})
        rows = sorted({v.row for _, v in hits})
        values = sorted({v.value for _, v in hits}, key=abs)[:3]
        first = hits[0][0]
        hazard_id, ref, fix = _known(buffer, phase)
        where = "; ".join(f"{m} batch {b} → {d}" for m, b, d in seen[:4])
        what = (
            "a padding row never refreshed for this batch"
            if is_sentinel(values[0])
            else "an out-of-range value"
        )
        findings.append(
            Finding(
                id=f"{kind}:{buffer}",
                severity=Severity.ERROR,
                kind=kind,
                phase=phase,
                buffer=buffer,
                kernel=kernel,
                mode=", ".join(sorted({m for m, _, _ in seen})),
                descriptor=first.descriptors.get(phase),
                batch=f"{first.counts[phase][0]} reqs / {first.counts[phase][1]} tokens"
                if phase in first.counts
                else None,
                message=f"{kernel} read {buffer} rows {rows[:6]} in {phase}: {what} "
                f"(values {values}) — seen in {len(seen)} case(s): {where}",
                evidence=f"{len(hits)} guard violation(s); sentinel ±{(1 << 30) + 17} marks padding",
                ref=ref,
                fix=fix,
                hazard=hazard_id,
            )
        )
    for case in cases:
        where = f"schedule {case.schedule}" if case.schedule else f"batch {case.batch}"
        label = f"{case.mode} {where}"
        if case.status in ("crash", "timeout", "error"):
            findings.append(_crash_finding(case, label))
        if case.differential:
            findings.append(
                _output_finding(
                    case,
                    "stale-read",
                    f"stale-read:differential:{case.name}",
                    case.differential,
                    f"{label}: valid outputs changed with the sentinel ({', '.join(case.differential)}): "
                    "something read a padding region no guard covers",
                    "runs A (+sentinel/NaN) and B (−sentinel/−60000) differ",
                    descriptor=", ".join(f"{p}={d}" for p, d in case.descriptors.items()),
                )
            )
        if case.nan_outputs:
            findings.append(
                _output_finding(
                    case,
                    "nan-read",
                    f"nan-read:{case.name}",
                    case.nan_outputs,
                    f"{label}: NaN poison reached valid outputs ({', '.join(case.nan_outputs)})",
                    "float padding is NaN in run A",
                )
            )
        by_phase: dict[tuple[str, str], list[CanaryHit]] = defaultdict(list)
        for c in case.canaries:
            whose = (
                "owned" if c.request is not None else "null-block" if c.null_block else "unowned"
            )
            by_phase[(c.phase, whose)].append(c)
        for (phase, whose), canaries in by_phase.items():
            findings.append(_canary_finding(case, label, phase, whose, canaries))
        findings.extend(_invariant_findings(case, label))
        if case.divergence:
            findings.append(_divergence_finding(case, label, case.divergence))
    return _merge_repeats(findings)


def _case_finding(
    case: CaseResult, id: str, kind: str, phase: str | None, **fields: Any
) -> Finding:
    """An error seen in one case: under the case's mode, at the descriptor `phase` ran at
    (unless `fields` names another)."""
    fields.setdefault("descriptor", case.descriptors.get(phase) if phase else None)
    return Finding(id=id, severity=Severity.ERROR, kind=kind, phase=phase, mode=case.mode, **fields)


def _record_finding(
    case: CaseResult,
    id: str,
    kind: str,
    record: InvariantViolation | ReferenceDivergence,
    **fields: Any,
) -> Finding:
    """An error at the phase, buffer and kernel a case's record names."""
    return _case_finding(
        case, id, kind, record.phase, buffer=record.buffer, kernel=record.kernel, **fields
    )


def _output_finding(
    case: CaseResult,
    kind: str,
    id: str,
    outputs: list[str],
    message: str,
    evidence: str,
    descriptor: str | None = None,
) -> Finding:
    """Valid outputs that a read no guard covers changed: the first names buffer and phase."""
    buffer, phase = OUTPUT_BUFFERS[outputs[0]]
    return _case_finding(
        case,
        id,
        kind,
        phase,
        buffer=buffer,
        kernel="unguarded read (ATen op)",
        descriptor=descriptor,
        message=message,
        evidence=evidence,
    )


def _crash_finding(case: CaseResult, label: str) -> Finding:
    """A case that died, named by its last checkpoint: the phase and step it was in, the
    kernel launched last and the buffer to suspect — an invariant already broken in that
    phase (checked before the phase's kernels ran), else what that kernel reads."""
    tail = (case.stderr or "").strip().splitlines()[-3:]
    cp = case.checkpoint or {}
    phase, kernel = cp.get("phase"), cp.get("kernel")
    broken = [b for b in cp.get("broken") or [] if b.get("phase") == phase] or list(
        cp.get("broken") or []
    )
    buffers = list(cp.get("buffers") or [])
    buffer = broken[0]["buffer"] if broken else buffers[0] if buffers else None
    stage = cp.get("stage")
    where = []
    if stage == "capture":
        where.append(f"capturing {phase or 'a'} graph {cp.get('graph', '')}".rstrip())
    elif phase is not None:
        step = cp.get("step")
        draft = cp.get("draft_step")
        where.append(
            f"in {phase}" + ("" if step is None else f" of step {step}")
            + (f" (draft step {draft})" if phase == "draft_decode" and draft else "")
        )  # fmt: skip
    if kernel:
        reads = f" (reads {', '.join(buffers)})" if buffers else ""
        where.append(f"last kernel launched: {kernel}{reads}")
    if broken:
        b = broken[0]
        where.append(
            f"before it, {b['buffer']} broke '{b['what']}' (element {b['element']} holds "
            f"{b['value']}" + ("" if b.get("expected") is None else f", expected {b['expected']}")
            + ")"
        )  # fmt: skip
    return _case_finding(
        case,
        f"crash:{case.name}",
        "crash",
        phase,
        buffer=buffer,
        kernel=kernel,
        message=f"case {label} {case.status}: {case.error}"
        + (f" — {'; '.join(where)}" if where else ""),
        evidence=" | ".join(tail),
        fix=f"check what {phase} hands {kernel} in {buffer}"
        if phase and kernel and buffer
        else "rerun the case with CUDA_LAUNCH_BLOCKING=1 (or compute-sanitizer) to locate the fault",
    )


def _canary_finding(
    case: CaseResult, label: str, phase: str, whose: str, hits: list[CanaryHit]
) -> Finding:
    blocks = sorted({c.first_block for c in hits})
    if whose == "owned":
        first = hits[0]
        what = (
            f"overwrote committed KV of request {first.request} (layer {first.layer}, "
            f"position {first.position}, block {first.first_block}) that no row of this step "
            "may write: a padded or misplaced row's slot points into a real request's blocks"
        )
        rids = sorted({c.request for c in hits if c.request is not None})
        evidence = (
            f"{sum(c.written for c in hits)} committed slot(s) differ from their copy taken "
            f"before the step (requests {rids})"
        )
    else:
        whose_text = (
            "the reserved null block (past its pad slots)"
            if whose == "null-block"
            else "KV blocks owned by no request"
        )
        what = f"wrote {whose_text} (runs starting at blocks {blocks[:6]})"
        evidence = f"{sum(c.written for c in hits)} canary elements overwritten"
    return _case_finding(
        case,
        f"kv-canary:{whose}:{case.name}",
        "kv-canary",
        phase,
        buffer="kv_cache",
        kernel=hits[0].kernel,
        message=f"{label}: {phase} {what}",
        evidence=evidence,
        fix=f"check the slot mapping {phase} hands to {hits[0].kernel} for padded rows",
    )


def _merge_repeats(findings: list[Finding]) -> list[Finding]:
    """One finding per invariant or first-divergence buffer, however many cases showed it."""
    order: list[str | int] = []
    seen: dict[str, tuple[Finding, set[str]]] = {}
    kept: list[Finding] = []
    for f in findings:
        if f.kind not in ("invariant", "reference-divergence"):
            order.append(len(kept))
            kept.append(f)
        elif f.id in seen:
            seen[f.id][1].add(f.mode or "")
        else:
            seen[f.id] = (f, {f.mode or ""})
            order.append(f.id)
    out = []
    for key in order:
        if isinstance(key, int):
            out.append(kept[key])
        else:
            first, modes = seen[key]
            out.append(replace(first, mode=", ".join(sorted(modes))))
    return out


# valid outputs the sentinel differential compares → (buffer, phase that produced it)
OUTPUT_BUFFERS = {
    "next tokens": ("verify.next_tokens", "target"),
    "accepted counts": ("verify.num_accepted", "target"),
    "draft tokens": ("eagle.draft_tokens", "draft_decode"),
    "target hidden rows": ("target.hidden", "target"),
    "draft hidden rows": ("eagle.hidden", "draft_decode"),
    "target KV of owned blocks": ("kv_cache", "target"),
    # the draft's layers are written by its prefill and decodes; the decodes write last
    "draft KV of owned blocks": ("kv_cache", "draft_decode"),
}


def _invariant_findings(case: CaseResult, label: str) -> list[Finding]:
    out = []
    for inv in case.invariants:
        expected = "" if inv.expected is None else f", expected {inv.expected}"
        hazard_id, ref, _ = _known(inv.buffer, inv.phase)  # a known hazard's buffer
        out.append(
            _record_finding(
                case,
                f"invariant:{inv.invariant}",
                "invariant",
                inv,
                message=f"{label}: {inv.buffer} breaks '{inv.what}' after {inv.phase}"
                f"{'' if inv.step is None else f' of step {inv.step}'}: "
                f"element {inv.element} holds {inv.value}{expected} "
                f"({inv.violations} element(s))",
                evidence=f"invariant {inv.invariant} checked on device after the phase",
                fix=f"check what {inv.kernel} writes into {inv.buffer} for this batch",
                hazard=hazard_id,
                ref=ref,
            )
        )
    return out


def _divergence_finding(case: CaseResult, label: str, d: ReferenceDivergence) -> Finding:
    r = case.reproduction
    repro = (
        f"--mode {r.get('mode')} --batches {r.get('batch')} -K {r.get('num_speculative_tokens')} "
        f"(dirtied at {r.get('large')} requests, prompt seed {r.get('prompt_seed')}, "
        f"weights seed {r.get('seed')}, step {d.step} of {r.get('steps')})"
    )
    return _record_finding(
        case,
        f"reference:{d.buffer}",
        "reference-divergence",
        d,
        message=f"{label}: step {d.step}, request {d.request}, {d.index}: the rig gives "
        f"{d.got}, the dense reference {d.want}",
        evidence=f"first divergence from the plain-torch reference; reproduce with {repro}"
        + (f"; {d.location_note}" if d.location_note else ""),
        fix=f"look at what {d.kernel} reads for request {d.request} in {d.phase}",
    )


_SHORT = {"num_reqs": "reqs", "num_reqs+1": "reqs+1", "num_tokens": "tokens", "num_pages": "pages"}


def build_matrix(cases: list[CaseResult]) -> list[MatrixRow]:
    """Per buffer: its padding region, which phases read it stale, and what the step left."""
    reads: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for case in cases:
        for v in case.violations:
            reads[v.buffer][v.phase] += 1
    regions: dict[str, dict[str, Any]] = {}
    for case in cases:
        for r in case.regions:
            entry = regions.setdefault(
                r.buffer,
                {"owner": r.phase, "extent": r.extent, "left": 0, "elements": 0},
            )
            entry["left"] += r.poisoned_after_a
            entry["elements"] += r.elements
    out = []
    for name, entry in sorted(regions.items(), key=lambda kv: (kv[1]["owner"], kv[0])):
        left, total = entry["left"], entry["elements"]
        after = "stale" if left == total else ("filled" if left == 0 else "partly")
        padding = f"[{_SHORT.get(entry['extent'], entry['extent'])}:]"
        out.append(MatrixRow(name, entry["owner"], padding, dict(reads.get(name, {})), after))
    for name in reads:
        if name not in regions:
            out.append(MatrixRow(name, "?", "?", dict(reads[name]), "?"))
    return out
