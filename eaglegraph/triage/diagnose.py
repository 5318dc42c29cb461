"""From a log to a `TriageResult`: scan, settle the configuration, weigh, recommend.

This is the library entry point behind `eaglegraph triage`; it needs neither torch nor a GPU,
and it reads any input without raising except for a path that cannot be opened.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable
from dataclasses import replace
from typing import BinaryIO

from eaglegraph.known.hazards import Hazard
from eaglegraph.known.triage_calibration import COMMIT_LOWER, KB_UNANIMOUS, KB_VOTERS, KINDS
from eaglegraph.known.triage_commit import NO_EVIDENCE_CLASS, NO_EVIDENCE_NOTE
from eaglegraph.known.triage_rules import MISSING, WEAK
from eaglegraph.known.versions import parse_version, version_text
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.results.triage import (
    Alternative,
    Category,
    Evidence,
    Fix,
    Padding,
    Role,
    TriageConfig,
    TriageResult,
)
from eaglegraph.triage import facts, known_issues, recommend, rules
from eaglegraph.triage.commit import commitment
from eaglegraph.triage.distributed import distributed
from eaglegraph.triage.fixes import FixContext, applies, matching_fixes
from eaglegraph.triage.locate import crash_frames
from eaglegraph.triage.reader import _Reader, chain, open_log, sniff
from eaglegraph.triage.scan import scan
from eaglegraph.triage.similar import query_from, similar_reports
from eaglegraph.triage.state import ScanState
from eaglegraph.triage.ticket import TICKET_LIMIT, Ticket, read_ticket


def triage_path(
    path: str | os.PathLike[str],
    stdin: BinaryIO | None = None,
    progress: Callable[[int], None] | None = None,
) -> TriageResult:
    """Triage a log or a pasted ticket ('-' reads stdin); gzip/bz2/xz and UTF-16 by content."""
    source = "-" if str(path) == "-" else str(path)
    with open_log(path, stdin) as fh:
        notes: list[str] = []
        stream = sniff(fh, notes)
        head = _Reader(stream, notes).read(TICKET_LIMIT + 1)
        if len(head) <= TICKET_LIMIT:
            if progress is not None:
                progress(len(head))
            return _triage_small(head, source, notes)
        state = ScanState(notes=notes)
        state = scan(chain(head, stream), state, progress=progress)
    return diagnose(state, source)


def triage_bytes(data: bytes, source: str = "<bytes>") -> TriageResult:
    """Triage bytes (a log, a ticket, compressed or not)."""
    return triage_path("-", stdin=io.BytesIO(data)) if data else _triage_small(b"", source, [])


def triage_text(text: str, source: str = "<text>") -> TriageResult:
    return _triage_small(text.encode("utf-8", "surrogatepass"), source, [])


def _triage_small(data: bytes, source: str, notes: list[str]) -> TriageResult:
    """Small inputs may be tickets: split title and prose from the logs before scanning."""
    t = read_ticket(data.decode("utf-8", "replace"))
    body = t.log_text.encode("utf-8", "surrogatepass") if t.is_ticket else data
    state = scan(io.BytesIO(body), ScanState(notes=list(notes)))
    state.bytes_read = len(data)
    if t.is_ticket:
        state.notes.append(
            "read as a pasted issue: title and prose are statements, fenced text is the log"
        )
    return diagnose(state, source, t)


def _settle_config(state: ScanState) -> TriageConfig:
    """Fill what single lines could not decide: framework, TP/DP lower bounds, resolved mode."""
    cfg = state.config
    if state.framework_votes:
        cfg.framework = state.framework_votes.most_common(1)[0][0]
    # Rank names give only a lower bound: the log may not show the highest rank.
    seen = {kind: n + 1 for kind, n in state.ranks.items() if n >= 1}
    if cfg.tp is None and "TP" in seen:
        cfg.tp_at_least = seen["TP"]
    if cfg.dp is None and "DP" in seen:
        cfg.dp_at_least = seen["DP"]
    if cfg.ep is None and "EP" in seen:
        cfg.ep_at_least = seen["EP"]
    if cfg.cudagraph_mode_resolved is None:
        cfg.cudagraph_mode_resolved = _mode_from_captures(state) or cfg.cudagraph_mode_requested
    for h in state.hits("context.padding"):
        sizes = facts.padding_sizes(h)
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


def _from_ticket(cfg: TriageConfig, ticket: Ticket, notes: list[str]) -> None:
    """Engine and version named in a ticket's text, where no log line gave them."""
    if cfg.framework is None and ticket.engine is not None:
        cfg.framework = ticket.engine
        notes.append(f"engine {ticket.engine}: named in the report's text, not in a log prefix")
    if cfg.spec_method is None and ticket.draft is not None:
        cfg.spec_method = ticket.draft
        notes.append(f"draft kind {ticket.draft}: named in the report's text, not in a config line")
    if cfg.version is None and cfg.framework in ticket.versions:
        cfg.version = ticket.versions[cfg.framework]
        notes.append(f"version {cfg.version}: stated in the report's text")
    if cfg.framework is None and ticket.outside is not None:
        notes.append(
            f"engine {ticket.outside}: outside vLLM, SGLang and TensorRT-LLM; its graph capture, "
            "drafts and fixes are not those triage knows, so the class rests on the report's "
            f"own error lines and words, and a suggested reproduction runs vLLM or SGLang, "
            f"not {ticket.outside}"
        )


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
    result_category: Category,
    verdict: rules.Verdict,
    confidence: float,
    fixes_refs: list[str],
    check: str | None,
) -> list[Finding]:
    crashed = verdict.primary is not None or bool(crash_frames(verdict.frames))
    if result_category == Category.OTHER and not crashed:
        severity = Severity.INFO
    elif result_category in (Category.MODE, Category.ACCEPT) and not crashed:
        severity = Severity.WARNING
    else:
        severity = Severity.ERROR
    primary = verdict.primary
    message = f"{result_category} (confidence {confidence:.2f})"
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


def _known_issues(
    verdict: rules.Verdict, ctx: FixContext, fixes: list[Fix], notes: list[str]
) -> list[Hazard]:
    """The known hazards this verdict can be whose fix applies to the report's version (or may,
    when the version is unknown): their statement in the notes, their fix among `fixes`."""
    cfg = ctx.config
    issues, ruled_out = known_issues.match(verdict.category, set(verdict.facts), cfg)
    notes += ruled_out
    out: list[Hazard] = []
    for issue in issues:
        change = issue.hazard.fix_change
        gate = applies(change, ctx) if change is not None else ("related", None)
        if gate is None:
            notes.append(
                f"not {issue.hazard.id}: its fix ({change.pr if change else '?'}) does not apply "
                f"to {cfg.framework} {cfg.version or ''}".rstrip()
            )
            continue
        out.append(issue.hazard)
        notes.append(issue.sentence)
        same = next((f for f in fixes if f.ref == issue.full_ref), None)
        if same is not None:
            same.why = issue.sentence
        elif issue.full_ref is not None:
            fixed = version_text(change.released_in) if change and change.released_in else None
            fixes.insert(
                0,
                Fix(
                    issue.full_ref, issue.hazard.mechanism, issue.sentence, gate[0], fixed, gate[1]
                ),
            )
    return out


def _kind_notes(kinds: list[str], kind: str | None) -> list[str]:
    """How often the evidence this verdict rests on was right at the first read of held-out
    reports, before any rule was written from them (known.triage_calibration's ledger), so the
    reader can weigh it."""
    out: list[str] = []
    for k in kinds:
        rate = KINDS.get(k)
        if k == KB_UNANIMOUS and rate is not None:
            out.append(
                f"evidence {k}: the {KB_VOTERS} nearest known reports are all filed under this "
                f"class; right on {rate.right} of {rate.n} reports at their first read"
            )
            continue
        if rate is None:
            out.append(f"evidence {k}: no first read has counted it yet, so it cannot commit")
        elif not rate.proven:
            out.append(
                f"evidence {k}: right on {rate.right} of {rate.n} reports at their first "
                f"read, too few to commit on (interval's lower end {rate.lower:.2f} < {COMMIT_LOWER})"
            )
        elif k == kind:
            out.append(
                f"evidence {k}: right on {rate.right} of {rate.n} reports at their first read"
            )
        else:
            out.append(
                f"evidence {k}: right on {rate.right} of {rate.n} reports at their first read "
                "(not the one relied on)"
            )
    return out


def diagnose(state: ScanState, source: str, ticket: Ticket | None = None) -> TriageResult:
    cfg = _settle_config(state)
    if ticket is not None:
        _from_ticket(cfg, ticket, state.notes)
    verdict = rules.verdict(facts.read_log(state), ticket)
    evidence = rules.evidence_of(verdict)
    primary_ev = next((e for e in evidence if e.role == Role.PRIMARY), None)
    if primary_ev is None and verdict.primary is not None:
        h = verdict.primary
        primary_ev = Evidence(h.line, h.text, h.signal, Role.PRIMARY)
    secondary = [Evidence(h.line, h.text, h.signal, Role.SECONDARY) for h in verdict.secondary[:12]]
    pasted = "\n".join(x for x in (ticket.title, ticket.log_text) if x) if ticket else None
    found = [*([primary_ev] if primary_ev else []), *secondary, *evidence]
    similar = similar_reports(query_from([e.text for e in found], cfg, pasted))
    neighbours = [r.category for r in similar]
    if not any(w > 0 for w in verdict.scores.values()):
        # No rule found anything: the verdict stays NO_EVIDENCE_CLASS ("other") with what to
        # ask for; the nearest known reports are shown, never taken for the class.
        verdict = replace(verdict, category=NO_EVIDENCE_CLASS)
        state.notes.append(NO_EVIDENCE_NOTE)
        neighbours = []
    commit = commitment(verdict, cfg, state, neighbours)
    confidence = commit.confidence
    ctx = FixContext(verdict, cfg, state, cfg.framework, parse_version(cfg.version))
    fixes = matching_fixes(ctx)
    notes = list(state.notes)
    hazards = _known_issues(verdict, ctx, fixes, notes)
    command, also = recommend.reproduce(ctx, notes, hazards)
    checks = recommend.checks(ctx)
    if verdict.primary is None:
        notes.append(
            "no root error line in the log: the verdict rests on context (frames, phases, metrics)"
        )
    if state.bytes_read == 0:
        notes.append("the input is empty")
    notes += _kind_notes(commit.kinds, commit.kind)
    ask_for = commit.ask_for
    # A runner-up is never stated as likelier than the verdict: the verdict is the class with
    # the most evidence, and its confidence is the calibrated rate of that evidence, while a
    # runner-up's is only its calibrated share of the scores.
    alternatives = [
        Alternative(c, s, min(rules.calibrated(conf), confidence))
        for c, s, conf in rules.alternatives(verdict)
    ]
    if commit.undecided is not None:
        u = commit.undecided
        # The evidence weighs the pair's other class as much: it is the runner-up, at the
        # verdict's confidence.
        pair = [c for c in u.classes if c != verdict.category]
        alternatives = [Alternative(c, verdict.scores.get(c, 0.0), confidence) for c in pair] + [
            a for a in alternatives if a.category not in pair
        ]
        others = " or ".join(pair)
        notes.append(
            f"between {verdict.category} and {others}: {u.why}; nothing in the report tells "
            "them apart"
        )
        ask_for = [u.ask.format(probe=command or "eaglegraph probe PAIR"), *ask_for]
    elif not commit.committed:
        notes.append(
            f"not enough evidence to commit to {verdict.category}: nothing in the report names "
            "it (a primary error line of that kind, the phase, the reporter's own statement)"
        )
    if confidence < WEAK:
        notes.append(
            f"weak evidence (confidence {confidence:.2f}): to confirm {verdict.category}, the "
            f"report lacks {MISSING[verdict.category]}"
        )
    result = TriageResult(
        source=source,
        bytes_read=state.bytes_read,
        lines=state.lines,
        framework=cfg.framework,
        version=cfg.version,
        config=cfg,
        category=verdict.category,
        confidence=confidence,
        alternatives=alternatives,
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
            verdict.category,
            verdict,
            confidence,
            [f.ref for f in fixes if f.applies == "yes"],
            checks[0] if checks else None,
        ),
        notes=notes,
        committed=commit.committed,
        tier=commit.tier,
        ask_for=ask_for,
        evidence_kinds=commit.kinds,
        evidence_kind=commit.kind,
        distributed=distributed(verdict, cfg, state),
        similar=similar,
    )
    return result
