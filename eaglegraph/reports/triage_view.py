"""Terminal view of a `TriageResult` (rich). Renders only; every value comes from the result."""

from __future__ import annotations

from rich.console import Console, Group
from rich.markup import escape
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from eaglegraph.reports.layout import Folded
from eaglegraph.results.similar import SimilarReport
from eaglegraph.results.triage import Distributed, TriageResult

_CATEGORY_STYLE = {
    "other": "yellow",
    "mode-incompatibility": "yellow",
    "acceptance-regression": "yellow",
}
_ROLE_STYLE = {"primary": "bold red", "secondary": "dim", "context": "cyan"}


def _config_table(result: TriageResult) -> Table:
    cfg = result.config
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    rows: list[tuple[str, object]] = [
        (
            "framework",
            f"{cfg.framework or '?'} {cfg.version or ''}".strip()
            + (f" ({cfg.runner})" if cfg.runner else ""),
        ),
        ("target", cfg.target_model),
        (
            "speculative",
            " ".join(
                str(x)
                for x in (
                    cfg.spec_method,
                    f"K={cfg.num_spec_tokens}" if cfg.num_spec_tokens else None,
                    f"topk={cfg.topk}" if cfg.topk else None,
                )
                if x
            )
            or None,
        ),
        ("draft", cfg.draft_model),
        (
            "cudagraph mode",
            None
            if not (cfg.cudagraph_mode_requested or cfg.cudagraph_mode_resolved)
            else f"requested {cfg.cudagraph_mode_requested or '?'} -> ran {cfg.cudagraph_mode_resolved or '?'}",
        ),
        (
            "capture sizes",
            ", ".join(map(str, cfg.capture_sizes[:16]))
            + (" ..." if len(cfg.capture_sizes) > 16 else "")
            if cfg.capture_sizes
            else None,
        ),
        (
            "attention",
            " / ".join(x for x in (cfg.attention_backend_raw, cfg.decode_backend) if x) or None,
        ),
        (
            "parallel",
            " ".join(
                f"{k}={v}" if v else f"{k}>={least}"
                for k, v, least in (
                    ("TP", cfg.tp, cfg.tp_at_least),
                    ("DP", cfg.dp, cfg.dp_at_least),
                    ("EP", cfg.ep, cfg.ep_at_least),
                    ("PP", cfg.pp, None),
                )
                if v or least
            )
            or None,
        ),
        (
            "GPU",
            " ".join(
                str(x)
                for x in (
                    cfg.gpu,
                    cfg.gpu_arch,
                    f"{cfg.gpu_memory_gib} GiB" if cfg.gpu_memory_gib else None,
                )
                if x
            )
            or None,
        ),
        (
            "KV cache",
            f"{cfg.memory.available_kv_gib} GiB"
            if cfg.memory.available_kv_gib is not None
            else None,
        ),
        (
            "graph memory",
            f"estimate {cfg.memory.graph_estimate_gib} GiB"
            if cfg.memory.graph_estimate_gib is not None
            else None,
        ),
        ("acceptance", _acceptance(result)),
        (
            "padding",
            f"raw_bs={cfg.padding.raw_bs} -> graph_bs={cfg.padding.graph_bs} (line {cfg.padding.line})"
            if cfg.padding
            else None,
        ),
    ]
    for key, value in rows:
        if value not in (None, ""):
            table.add_row(key, escape(str(value)))
    return table


def _acceptance(result: TriageResult) -> str | None:
    acc = result.config.acceptance
    if not acc.samples:
        return None
    parts = []
    if acc.mean_length_last is not None:
        parts.append(
            f"mean length {acc.mean_length_first} -> {acc.mean_length_last} (min {acc.mean_length_min})"
        )
    if acc.rate_last is not None:
        parts.append(f"rate {acc.rate_first:.0%} -> {acc.rate_last:.0%} (min {acc.rate_min:.0%})")
    return "; ".join(parts) + f" over {acc.samples} samples"


def _phase(result: TriageResult) -> Text:
    ph = result.phase
    text = Text(ph.at_failure, style="bold")
    if ph.detail:
        text.append(f": {ph.detail}")
    for cap in ph.captures[-6:]:
        state = "finished" if cap.finished else "NOT finished"
        progress = f" {cap.done}/{cap.total}" if cap.total is not None else ""
        text.append(
            f"\n  capture {cap.name} ({cap.mode or '?'}){progress}: {state}, line {cap.begin_line}"
        )
    return text


def _evidence(result: TriageResult) -> Table:
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("line", justify="right", style="dim")
    table.add_column("role")
    table.add_column("signal", style="dim")
    table.add_column("text", overflow="fold")
    for ev in result.evidence:
        table.add_row(
            str(ev.line),
            Text(ev.role, style=_ROLE_STYLE.get(ev.role, "")),
            ev.signal,
            Folded(Text(ev.text[:240])),
        )
    return table


def _similar(report: SimilarReport) -> Group:
    """One known report: title, link, its verdict and fix, and what it shares with this log."""
    head = Text.assemble(
        (report.title, "bold"),
        (
            f"  ({report.engine}{' ' + report.version if report.version else ''}, "
            f"{report.category}, score {report.score:.1f})",
            "dim",
        ),
    )
    lines = [Folded(head), Folded(Text(report.url, style="cyan"))]
    why = [f"shares {', '.join(report.shared_terms)}"] if report.shared_terms else []
    why += report.shared_facts
    if why:
        lines.append(Folded(Text("why: " + "; ".join(why), style="dim")))
    if report.root_cause:
        lines.append(Folded(Text(f"cause: {report.root_cause}")))
    if report.fix:
        lines.append(Folded(Text(f"fix: {report.fix}")))
    return Group(*lines)


_FIX_HEADINGS = (
    ("yes", "Known fixes for this version"),
    ("if-older", "Known fixes, only if your version is older"),
    ("related", "Related upstream changes (not confirmed for this version)"),
)


def _bullets(console: Console, heading: str, items: list[str]) -> None:
    if items:
        console.print(Text(heading, style="bold underline"))
    for item in items:
        console.print(Padding(Folded(f"- {item}"), (0, 0, 0, 2)))


def _distributed(d: Distributed, console: Console) -> None:
    console.print(Text(f"Multi-rank stop: {d.kind}", style="bold underline"))
    if d.signals:
        console.print(Padding(Folded("seen: " + ", ".join(d.signals)), (0, 0, 0, 2)))
    if d.first_error is not None:
        first = f"first error: line {d.first_error.line}: {d.first_error.text[:200]}"
        console.print(Padding(Folded(first, style="red"), (0, 0, 0, 2)))
        console.print(Padding(Folded(f"then {d.cascade} cascade lines", style="dim"), (0, 0, 0, 2)))
    console.print(Padding(Folded(f"next: {d.next_step}"), (0, 0, 0, 2)))


def _guess(result: TriageResult) -> str:
    """The uncommitted verdict as the header states it: a "between" verdict names its pair."""
    if result.tier == "between" and result.alternatives:
        return f"between {result.category} and {result.alternatives[0].category}"
    return f"best guess {result.category}"


def render_triage(result: TriageResult, console: Console) -> None:
    style = _CATEGORY_STYLE.get(result.category, "red")
    title = Text.assemble(
        ("triage: ", "bold"),
        (result.category, f"bold {style}"),
        f"  confidence {result.confidence:.2f}",
    )
    if not result.committed:
        title = Text.assemble(
            ("triage: ", "bold"),
            ("not enough evidence", "bold yellow"),
            f"  ({_guess(result)}, confidence {result.confidence:.2f})",
        )
    alt = ", ".join(f"{a.category} {a.confidence:.2f}" for a in result.alternatives)
    header = [title]
    if alt:
        header.append(Text(f"runner-up: {alt}", style="dim"))
    header.append(
        Text(f"{result.source}: {result.lines} lines, {result.bytes_read} bytes", style="dim")
    )
    console.print(
        Panel(Group(*header, _config_table(result)), title="eaglegraph triage", expand=False)
    )

    console.print(Text("Phase", style="bold underline"))
    console.print(_phase(result))
    if result.primary_error is not None:
        console.print(Text("Primary error", style="bold underline"))
        line = Text(f"line {result.primary_error.line}: ", style="bold red")
        console.print(Folded(line + Text(result.primary_error.text[:400])))
    if result.secondary_errors:
        console.print(Text("Consequences (not the cause)", style="bold underline"))
        for ev in result.secondary_errors[:6]:
            console.print(Folded(f"  line {ev.line}: {ev.text[:160]}", style="dim"))
    if result.evidence:
        console.print(Text("Evidence", style="bold underline"))
        console.print(_evidence(result))
    if result.distributed is not None:
        _distributed(result.distributed, console)
    for applies, heading in _FIX_HEADINGS:
        fixes = [f for f in result.fixes if f.applies == applies]
        if fixes:
            console.print(Text(heading, style="bold underline"))
        for fix in fixes:
            line = Text.assemble((fix.ref, "bold"), f"  {fix.summary}", (f"  [{fix.why}]", "dim"))
            if fix.check:
                line.append(f"\n{fix.check}", style="yellow")
            console.print(Padding(Folded(line), (0, 0, 0, 2)))
    _bullets(console, "Ask the customer for", result.ask_for)
    if result.similar:
        console.print(Text("Similar known reports", style="bold underline"))
        for report in result.similar:
            console.print(Padding(_similar(report), (0, 0, 0, 2)))
    _bullets(console, "Check", result.checks)
    if result.reproduce:
        console.print(Text("Reproduce", style="bold underline"))
        console.print(Padding(Text(result.reproduce, style="bold green"), (0, 0, 0, 2)))
        for cmd in result.reproduce_also:
            console.print(Padding(Text(cmd, style="green"), (0, 0, 0, 2)))
    for note in result.notes:
        console.print(Folded(f"note: {note}", style="dim"))
