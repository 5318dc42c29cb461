"""Pool usage: what each graph pool reserved, what its biggest graph needed, and the audit.

The reserved-vs-ideal ratio is the number a support engineer wants when a capture OOMs: a pool
reserving several times its largest graph points at fragmentation or an extra private pool
(hazard `dedicated-eagle-pool`), not at the graphs themselves. The `accounted` line says whether
the pools explain everything the allocator holds, showing both numbers so a mismatch can be read
at a glance.
"""

from __future__ import annotations

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from eaglegraph.reports.format import fmt_bytes
from eaglegraph.reports.layout import Fitted
from eaglegraph.reports.timeline_view import EMULATED_NA, memory_na, phase_order
from eaglegraph.results.capture import CaptureRun
from eaglegraph.results.pools import PoolUsage


def render_pools(run: CaptureRun, console: Console) -> None:
    if not run.pools:
        console.print(Text("Pool usage: no pools recorded", style="bold"))
        return
    na = memory_na(run)
    title = Text("Pool usage", style="bold")
    title.append(f"  policy {run.pool_policy}", style="dim")
    console.print(title)
    console.print(Padding(Fitted(_usage_table(run, na)), (0, 0, 0, 2)))
    _more_pools(run.pools, console, "in the total above; every pool: --json")
    if (run.prediction or {}).get("compiled_run"):
        note = "predicted: the uncompiled forward; this run's target is compiled (Inductor)"
        console.print(Padding(Text(note, style="dim"), (0, 0, 0, 2)))
    phases = phase_order(p for pool in run.pools for p in pool.bytes_per_phase)
    if phases and not na:
        console.print(Padding(Fitted(_phase_table(run.pools, phases)), (0, 0, 0, 2)))
        _more_pools(run.pools, console, "every pool: --json")
    console.print(_accounted_line(run, na))


LONG_POOLS, SHOWN_POOLS = 12, 6  # per-graph pools: one per capture, the first few shown


def _shown(pools: list[PoolUsage]) -> list[PoolUsage]:
    return pools[:SHOWN_POOLS] if len(pools) > LONG_POOLS else pools


def _more_pools(pools: list[PoolUsage], console: Console, where: str) -> None:
    if len(pools) > LONG_POOLS:
        note = f"⋮ {len(pools) - SHOWN_POOLS} more pools (one per graph), {where}"
        console.print(Padding(Text(note, style="dim"), (0, 0, 0, 4)))


def _bytes(n: int | None, na: bool) -> str:
    return "N/A" if na else fmt_bytes(n)


def _ratio(pool: PoolUsage, na: bool) -> Text:
    """Reserved over ideal; red once a pool holds more than twice its largest graph's need."""
    if na or pool.ideal_bytes <= 0:
        return Text("—", style="dim")
    ratio = pool.reserved_bytes / pool.ideal_bytes
    return Text(f"×{ratio:.2f}", style="red" if ratio > 2 else "yellow" if ratio > 1.25 else "")


def _usage_table(run: CaptureRun, na: bool) -> Table:
    table = Table(box=None, padding=(0, 1), pad_edge=False, header_style="dim", show_footer=True)
    table.add_column("pool", footer=Text("total", style="bold"))
    mixed = any(p.policy != run.pool_policy for p in run.pools)
    if mixed:
        table.add_column("policy", no_wrap=True)
    table.add_column(
        "graphs", justify="right", footer=str(sum(p.graphs for p in run.pools)), no_wrap=True
    )
    table.add_column(
        "reserved",
        justify="right",
        footer=_bytes(run.totals.pool_reserved_bytes, na),
        no_wrap=True,
    )
    table.add_column(
        "allocated",
        justify="right",
        footer=_bytes(sum(p.allocated_bytes for p in run.pools), na),
        no_wrap=True,
    )
    table.add_column("ideal", justify="right", no_wrap=True)
    table.add_column("vs ideal", justify="right", no_wrap=True)
    predicted = (run.prediction or {}).get("pools") or {}
    if predicted:
        total = (run.prediction or {}).get("reserved_bytes")
        table.add_column("predicted", justify="right", footer=fmt_bytes(total), no_wrap=True)
    for pool in _shown(run.pools):
        name = Text(pool.label, style="bold")
        if str(pool.id) != pool.label:
            name.append(f" {pool.id}", style="dim")
        table.add_row(
            name,
            *([Text(pool.policy)] if mixed else []),
            str(pool.graphs),
            _bytes(pool.reserved_bytes, na),
            _bytes(pool.allocated_bytes, na),
            _bytes(pool.ideal_bytes, na),
            _ratio(pool, na),
            *([_predicted(predicted, pool)] if predicted else []),
        )
    return table


def _predicted(predicted: dict[str, int], pool: PoolUsage) -> Text:
    """The CPU prediction beside the measurement, with its error when both exist."""
    guess = predicted.get(pool.label)
    if guess is None or not pool.graphs:
        return Text("—", style="dim")
    text = Text(fmt_bytes(guess))
    if pool.reserved_bytes:
        error = (guess - pool.reserved_bytes) / pool.reserved_bytes
        text.append(f" {100 * error:+.0f}%", style="green" if abs(error) <= 0.1 else "yellow")
    return text


def _phase_table(pools: list[PoolUsage], phases: list[str]) -> Table:
    table = Table(
        title=Text("bytes per phase", style="dim"),
        title_justify="left",
        box=None,
        padding=(0, 1),
        pad_edge=False,
        header_style="dim",
    )
    table.add_column("pool")
    for phase in phases:
        table.add_column(Text(phase), justify="right", no_wrap=True)
    for pool in _shown(pools):
        table.add_row(
            Text(pool.label, style="bold"),
            *[fmt_bytes(pool.bytes_per_phase.get(phase)) for phase in phases],
        )
    return table


def _accounted_line(run: CaptureRun, na: bool) -> Text:
    t = run.totals
    line = Text("  accounted ")
    if na:
        line.append(EMULATED_NA, style="yellow")
        return line
    if t.accounted is None:
        line.append("not checked", style="dim")
    elif t.accounted:
        line.append("✓", style="bold green")
    else:
        line.append("✗", style="bold red")
    line.append(f"  snapshot {fmt_bytes(t.snapshot_reserved_bytes)}")
    line.append(" = " if t.accounted else " ≠ ", style="dim")
    line.append(f"memory_reserved() {fmt_bytes(t.reserved_bytes)}")
    return line
