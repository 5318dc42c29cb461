"""What the probe's cases add up to: findings and the per-buffer matrix of a probe run.

`probing.py` plans and runs the cases (`cases.py` is one case). Guard violations, differential
changes between the two sentinels, NaN in valid outputs and written canary blocks become
findings, each tied to the buffer, phase, kernel, mode, batch and descriptor it was seen in,
and to the known hazard it is.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from eaglegraph.known.hazards import hazard_for_buffer
from eaglegraph.probes.poisoning import is_sentinel
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.results.probe import CaseResult, GuardViolation, MatrixRow

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
        label = f"{case.mode} batch {case.batch}"
        if case.status in ("crash", "timeout", "error"):
            tail = (case.stderr or "").strip().splitlines()[-3:]
            findings.append(
                Finding(
                    id=f"crash:{case.name}",
                    severity=Severity.ERROR,
                    kind="crash",
                    mode=case.mode,
                    message=f"case {label} {case.status}: {case.error}",
                    evidence=" | ".join(tail),
                    fix="rerun the case with CUDA_LAUNCH_BLOCKING=1 (or compute-sanitizer) to locate the fault",
                )
            )
        if case.differential:
            findings.append(
                Finding(
                    id=f"stale-read:differential:{case.name}",
                    severity=Severity.ERROR,
                    kind="stale-read",
                    mode=case.mode,
                    descriptor=", ".join(f"{p}={d}" for p, d in case.descriptors.items()),
                    message=f"{label}: valid outputs changed with the sentinel ({', '.join(case.differential)}): "
                    "something read a padding region no guard covers",
                    evidence="runs A (+sentinel/NaN) and B (−sentinel/−60000) differ",
                )
            )
        if case.nan_outputs:
            findings.append(
                Finding(
                    id=f"nan-read:{case.name}",
                    severity=Severity.ERROR,
                    kind="nan-read",
                    mode=case.mode,
                    message=f"{label}: NaN poison reached valid outputs ({', '.join(case.nan_outputs)})",
                    evidence="float padding is NaN in run A",
                )
            )
        if case.canaries:
            blocks = [c.first_block for c in case.canaries]
            findings.append(
                Finding(
                    id=f"kv-canary:{case.name}",
                    severity=Severity.ERROR,
                    kind="kv-canary",
                    buffer="kv_cache",
                    mode=case.mode,
                    message=f"{label}: KV blocks owned by no request were written (runs starting at "
                    f"blocks {blocks[:6]})",
                    evidence=f"{sum(c.written for c in case.canaries)} canary elements overwritten",
                )
            )
    return findings


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
