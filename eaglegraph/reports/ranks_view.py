"""Terminal view of a `RankedRun`: one row per rank, what diverged, then the findings."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from eaglegraph.reports.findings_view import render_findings
from eaglegraph.reports.format import fmt_bytes
from eaglegraph.results.rank_runs import RankedRun, RankOutcome

_STATUS_STYLE = {"ok": "green", "failed": "bold red", "stuck": "bold red", "stopped": "yellow"}


def _replay(o: RankOutcome) -> str:
    if o.replay_equals_eager is None:
        return "—"
    return "= eager" if o.replay_equals_eager else "≠ eager"


def _where(o: RankOutcome) -> str:
    if o.waiting_in is not None:
        return f"waits: {o.waiting_in.describe()}"
    if o.status != "ok" and o.error:
        return ("after peer: " if o.consequence else "") + o.error
    registered = (
        f", {o.custom_ar_registrations} registered" if o.custom_ar_registrations is not None else ""
    )
    return f"{len(o.graphs)} graphs, {o.collectives} collectives{registered}"


def render_ranks(run: RankedRun, console: Console) -> None:
    console.print(
        Text.assemble(
            (f"{run.command} · {run.layout.describe()}", "bold"),
            f" · {len(run.ranks)} ranks on {run.device} ({run.backend}) · {run.seconds:.1f} s",
        )
    )
    if run.interrupted:
        console.print(
            Text(f"{run.interrupted}: every rank was ended; what they measured is shown", "bold")
        )
    table = Table(box=None, pad_edge=False, show_edge=False)
    for name, kw in (
        ("rank", {"no_wrap": True}),
        ("tp/dp", {"no_wrap": True}),
        ("status", {"no_wrap": True}),
        ("replay", {"no_wrap": True}),
        ("pools", {"justify": "right", "no_wrap": True}),
        ("comm", {"justify": "right", "no_wrap": True}),
        ("", {"overflow": "fold"}),
    ):
        table.add_column(name, **kw)
    for o in run.ranks:
        table.add_row(
            str(o.rank),
            f"{o.tp_rank}/{o.dp_rank}",
            Text(o.status, _STATUS_STYLE.get(o.status, "")),
            _replay(o),
            fmt_bytes(o.graph_pool_bytes),
            fmt_bytes(o.comm_bytes),
            _where(o),
        )
    console.print(table)
    if run.pool_spread_bytes is not None or run.comm_spread_bytes is not None:
        console.print(
            f"spread across ranks: pools {fmt_bytes(run.pool_spread_bytes)}, "
            f"communicators {fmt_bytes(run.comm_spread_bytes)}"
        )
    if run.single_rank is not None:
        s = run.single_rank
        console.print(
            f"rank 0 vs TP 1: {s.equal} of {s.tokens} draft tokens equal "
            f"(tolerance: {s.tolerance})"
            + (f"; first difference: {s.first_difference}" if s.first_difference else "")
        )
    if run.dp_agreement:
        console.print(Text("DP agreement across the replicas (gloo)", "bold"))
        for d in run.dp_agreement:
            name = d.scenario or f"exploration, seed {d.seed}"
            style = "bold red" if d.verdict == "diverges" else "green"
            line = Text(f"  {name}: ")
            line.append(d.verdict, style)
            line.append(f" under {d.profile} ({d.rule}, {len(d.steps)} steps)")
            if d.as_expected is False:
                line.append(f"; its data says {d.expect}", "bold yellow")
            console.print(line, overflow="fold")
    for o in run.ranks:  # where a rank that did not finish was, in its own words
        if o.status != "ok" and o.log_tail:
            console.print(Text(f"rank {o.rank}, last lines:", "bold"))
            for said in o.log_tail[-4:]:
                console.print(Text("  " + said[:300]), overflow="fold")
    render_findings(run.findings, console)
