"""Terminal view of a multi-rank memdiff: per rank both policies' pools, then what lives outside
the caching allocator, then max − min across ranks. Two narrow tables rather than one wide one,
so the view reads at 80 columns; every figure is also in `--json`."""

from __future__ import annotations

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from eaglegraph.reports.findings_view import render_findings
from eaglegraph.reports.format import fmt_bytes
from eaglegraph.reports.memdiff_view import signed_bytes
from eaglegraph.reports.timeline_view import EMULATED_NA
from eaglegraph.results.memdiff_ranks import MemdiffRanksRun, RankMemory

_STATUS_STYLE = {"ok": "green", "failed": "bold red", "stuck": "bold red", "stopped": "yellow"}
_INDENT = 2


def render_memdiff_ranks(run: MemdiffRanksRun, console: Console) -> None:
    """The whole report, as `memdiff --tp N` prints it and `report` re-renders it."""
    title = Text("Memdiff", style="bold")
    model = run.config.get("model")
    if isinstance(model, str):
        title.append(f"  {model}")
    title.append(f"  {run.layout.describe()}")
    title.append(f"  a = {run.pool}  vs  b = {run.against}", style="cyan")
    console.print(title)
    console.print(
        Text(
            f"{len(run.ranks)} ranks on {run.device} ({run.backend}), each policy its own "
            f"processes · {run.seconds:.1f} s",
            style="dim",
        )
    )
    for side, ranked in (("a", run.a), ("b", run.b)):
        if ranked.interrupted:
            console.print(
                Text(f"run {side}: {ranked.interrupted}, its ranks were ended", style="bold")
            )
    console.print(Padding(_pools_table(run), (0, 0, 0, _INDENT)))
    if run.memory_measured:
        console.print(Padding(_outside_table(run), (0, 0, 0, _INDENT)))
        if run.spreads:
            console.print(Padding(_spread_table(run), (0, 0, 0, _INDENT)))
        console.print(
            Text(
                f"pools may differ across ranks by {fmt_bytes(run.tolerance_bytes)} "
                f"({run.tolerance})",
                style="dim",
            )
        )
    else:
        console.print(Text(f"memory figures: {EMULATED_NA}", style="yellow"))
        if run.memory_note:
            console.print(Padding(Text(run.memory_note, style="dim"), (0, 0, 0, _INDENT)))
    render_findings(run.findings, console)


def _table(title: str) -> Table:
    return Table(
        title=Text(title, style="bold cyan"),
        title_justify="left",
        box=None,
        padding=(0, 1),
        pad_edge=False,
        header_style="dim",
    )


def _status(r: RankMemory) -> Text:
    if r.status_a == r.status_b:
        return Text(r.status_a, _STATUS_STYLE.get(r.status_a, ""))
    return Text.assemble(
        (r.status_a, _STATUS_STYLE.get(r.status_a, "")),
        "/",
        (r.status_b, _STATUS_STYLE.get(r.status_b, "")),
    )


def _count(n: int | None) -> str:
    return "—" if n is None else str(n)


def _pools_table(run: MemdiffRanksRun) -> Table:
    table = _table("graph pools per rank")
    for head, justify in (("rank", "left"), ("tp/dp", "left"), ("status", "left")):
        table.add_column(head, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    table.add_column("graphs a/b", justify="right", no_wrap=True)
    if run.memory_measured:
        for head in (f"a: {run.pool}", f"b: {run.against}", "Δ b−a"):
            table.add_column(head, justify="right", no_wrap=True)
    for r in run.ranks:
        cells: list[str | Text] = [
            str(r.rank),
            f"{r.tp_rank}/{r.dp_rank}",
            _status(r),
            f"{_count(r.graphs_a)}/{_count(r.graphs_b)}",
        ]
        if run.memory_measured:
            delta = signed_bytes(r.pool_delta) if r.pool_delta is not None else Text("—")
            cells += [fmt_bytes(r.pool_a), fmt_bytes(r.pool_b), delta]
        table.add_row(*cells)
    return table


def _outside_table(run: MemdiffRanksRun) -> Table:
    table = _table("outside the caching allocator")
    table.add_column("rank", no_wrap=True)
    for head in ("capture a", "capture b", "comm a", "comm b"):
        table.add_column(head, justify="right", no_wrap=True)
    for r in run.ranks:
        table.add_row(
            str(r.rank),
            fmt_bytes(r.outside_a),
            fmt_bytes(r.outside_b),
            fmt_bytes(r.comm_a),
            fmt_bytes(r.comm_b),
        )
    return table


def _spread_table(run: MemdiffRanksRun) -> Table:
    table = _table("across ranks")
    table.add_column("", overflow="fold")
    for head in ("max", "min", "max − min"):
        table.add_column(head, justify="right", no_wrap=True)
    for s in run.spreads:
        table.add_row(
            s.figure,
            f"{fmt_bytes(s.max_bytes)} r{s.max_rank}",
            f"{fmt_bytes(s.min_bytes)} r{s.min_rank}",
            Text(fmt_bytes(s.spread_bytes), style="bold" if s.spread_bytes else "dim"),
        )
    return table
