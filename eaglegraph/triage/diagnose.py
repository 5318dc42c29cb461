"""From a log to a `TriageResult`: scan, settle the configuration, weigh, recommend.

This is the library entry point behind `eaglegraph triage`; it needs neither torch nor a GPU,
and it reads any input without raising except for a path that cannot be opened.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable
from typing import BinaryIO

from eaglegraph.known.versions import parse_version
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.results.triage import (
    CATEGORIES,
    Alternative,
    Evidence,
    Padding,
    TriageConfig,
    TriageResult,
)
from eaglegraph.triage import recommend, rules
from eaglegraph.triage.fixes import FixContext, matching_fixes
from eaglegraph.triage.locate import crash_frames
from eaglegraph.triage.reader import open_log
from eaglegraph.triage.scan import scan
from eaglegraph.triage.state import ScanState

STALE, OOB, OOM, CAPTURE, MODE, CONFIG, ACCEPT, HANG, OTHER = CATEGORIES


def triage_path(
    path: str | os.PathLike[str],
    stdin: BinaryIO | None = None,
    progress: Callable[[int], None] | None = None,
) -> TriageResult:
    """Triage a log file ('-' reads stdin); gzip/bz2/xz and UTF-16 are detected from content."""
    with open_log(path, stdin) as fh:
        state = scan(fh, progress=progress)
    return diagnose(state, "-" if str(path) == "-" else str(path))


def triage_bytes(data: bytes, source: str = "<bytes>") -> TriageResult:
    return diagnose(scan(io.BytesIO(data)), source)


def triage_text(text: str, source: str = "<text>") -> TriageResult:
    return triage_bytes(text.encode("utf-8", "surrogatepass"), source)


def _settle_config(state: ScanState) -> TriageConfig:
    """Fill what single lines could not decide: framework, TP/DP lower bounds, resolved mode."""
    cfg = state.config
    if state.framework_votes:
        cfg.framework = state.framework_votes.most_common(1)[0][0]
    if cfg.tp is None and "TP" in state.ranks:
        cfg.tp = state.ranks["TP"] + 1
    if cfg.dp is None and "DP" in state.ranks:
        cfg.dp = state.ranks["DP"] + 1
    if cfg.ep is None and "EP" in state.ranks:
        cfg.ep = state.ranks["EP"] + 1
    if cfg.cudagraph_mode_resolved is None:
        cfg.cudagraph_mode_resolved = _mode_from_captures(state) or cfg.cudagraph_mode_requested
    for h in state.hits("context.padding"):
        sizes = rules.padding_sizes(h)
        if sizes:
            cfg.padding = Padding(h.line, *sizes)
            break
    if cfg.num_spec_tokens is None:
        for h in state.hits("context.padding"):
            steps = _kv(h.text, "steps")
            if steps:
                cfg.num_spec_tokens = steps
                cfg.topk = cfg.topk or _kv(h.text, "topk")
                break
    return cfg


def _kv(text: str, key: str) -> int | None:
    m = re.search(rf"\b{key}=(\d+)", text)
    return int(m.group(1)) if m else None


def _mode_from_captures(state: ScanState) -> str | None:
    """vLLM's progress-bar labels name the mode each target pass captured."""
    target = [ph for ph in state.captures if ph.name.startswith("target") and ph.mode]
    modes = {ph.mode for ph in target}
    if not modes or state.config.framework != "vllm":
        return None
    if state.config.cudagraph_mode_requested and not all(ph.finished for ph in target):
        return None  # capture stopped early: the labels seen are not the whole story
    if modes == {"PIECEWISE"}:
        return "PIECEWISE"
    if modes == {"PIECEWISE", "FULL"}:
        return "FULL_AND_PIECEWISE"
    if modes == {"FULL"}:
        decode_only = all("decode" in ph.name and "mixed" not in ph.name for ph in target)
        return (
            "FULL_DECODE_ONLY" if decode_only and any("(" in ph.name for ph in target) else "FULL"
        )
    return None


def _findings(
    result_category: str, verdict: rules.Verdict, fixes_refs: list[str], check: str | None
) -> list[Finding]:
    crashed = verdict.primary is not None or bool(crash_frames(verdict.frames))
    if result_category == OTHER and not crashed:
        severity = Severity.INFO
    elif result_category in (MODE, ACCEPT) and not crashed:
        severity = Severity.WARNING
    else:
        severity = Severity.ERROR
    primary = verdict.primary
    message = f"{result_category} (confidence {verdict.confidence:.2f})"
    if primary is not None:
        message += f": line {primary.line}: {primary.text[:160]}"
    elif verdict.phase.detail:
        message += f": {verdict.phase.detail}"
    return [
        Finding(
            id=f"triage.{result_category.replace('/', '-')}",
            severity=severity,
            message=message,
            ref=fixes_refs[0] if fixes_refs else None,
            kind=result_category,
            phase=verdict.phase.at_failure,
            evidence=primary.text[:300] if primary else None,
            fix=check,
        )
    ]


def diagnose(state: ScanState, source: str) -> TriageResult:
    cfg = _settle_config(state)
    verdict = rules.score(state)
    ctx = FixContext(verdict, cfg, state, cfg.framework, parse_version(cfg.version))
    fixes = matching_fixes(ctx)
    notes = list(state.notes)
    command, also = recommend.reproduce(ctx, notes)
    checks = recommend.checks(ctx)
    evidence = rules.evidence_of(verdict)
    primary_ev = next((e for e in evidence if e.role == "primary"), None)
    if primary_ev is None and verdict.primary is not None:
        h = verdict.primary
        primary_ev = Evidence(h.line, h.text, h.signal, "primary")
    secondary = [Evidence(h.line, h.text, h.signal, "secondary") for h in verdict.secondary[:12]]
    if verdict.primary is None:
        notes.append(
            "no root error line in the log: the verdict rests on context (frames, phases, metrics)"
        )
    if state.bytes_read == 0:
        notes.append("the input is empty")
    return TriageResult(
        source=source,
        bytes_read=state.bytes_read,
        lines=state.lines,
        framework=cfg.framework,
        version=cfg.version,
        config=cfg,
        category=verdict.category,
        confidence=verdict.confidence,
        alternatives=[Alternative(c, s, conf) for c, s, conf in rules.alternatives(verdict)],
        scores=verdict.scores,
        phase=verdict.phase,
        primary_error=primary_ev,
        secondary_errors=secondary,
        evidence=evidence,
        fixes=fixes,
        checks=checks,
        reproduce=command,
        reproduce_also=also,
        findings=_findings(
            verdict.category, verdict, [f.ref for f in fixes], checks[0] if checks else None
        ),
        notes=notes,
    )
