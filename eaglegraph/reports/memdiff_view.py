"""Terminal view of a memdiff: two pool policies side by side, per pool, phase and graph.

Deltas read as b − a, so with `--pool shared --against dedicated` a positive delta is what the
dedicated pool costs. Upstream's own measurement (`eaglegraph.known.measurements`) is printed
beside ours, labelled as upstream's, because "how does this compare with upstream's 0.27 GiB" is
the first question a reader asks — and a tiny preset will never reproduce an 8B model's number.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.padding import Padding
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from eaglegraph.known.measurements import SHARED_POOL_SAVING
from eaglegraph.reports.capture_view import context_grid, render_failure
from eaglegraph.reports.findings_view import render_findings
from eaglegraph.reports.format import fmt_bytes
from eaglegraph.reports.layout import Folded
from eaglegraph.reports.timeline_view import EMULATED_NA, memory_na
from eaglegraph.results.memdiff import MemdiffRun
from eaglegraph.results.pools import PoolDiff


def render_memdiff(run: MemdiffRun, console: Console) -> None:
    """The full memdiff report, as `memdiff` prints it and `report` re-renders it."""
    a, b = run.a.pool_policy, run.b.pool_policy
    title = Text("Memdiff", style="bold")
    model = run.config.get("model") or run.config.get("model_dir")
    if isinstance(model, str):
        title.append(f"  {model}")
    title.append(f"  a = {a}  vs  b = {b}", style="cyan")
    title.append(f"  backend {run.a.backend}", style="dim")
    console.print(Rule(title, align="left", style="dim"))
    console.print(context_grid(run.config, run.a.environment))
    for side, capture in (("a", run.a), ("b", run.b)):
        if capture.failed is not None:
            console.print(Text(f"run {side} ({capture.pool_policy}) did not finish:", style="red"))
            render_failure(capture, console)
    if memory_na(run.a) or memory_na(run.b):
        console.print(Text(f"memory figures: {EMULATED_NA}", style="yellow"))
    else:
        render_diffs(run, console)
        render_total(run, console)
    render_tokens(run, console)
    render_findings(run.findings, console)


def signed_bytes(delta: int) -> Text:
    """A delta with its sign: red when b needs more, green when it needs less."""
    if delta == 0:
        return Text("±0", style="dim")
    text = fmt_bytes(delta)
    return Text(text if delta < 0 else f"+{text}", style="red" if delta > 0 else "green")


def render_diffs(run: MemdiffRun, console: Console) -> None:
    graphs, quiet = _graph_rows(run.per_graph)
    groups = [
        ("per pool", run.per_pool),
        ("per phase", run.per_phase),
        ("per graph", graphs),
    ]
    groups = [(name, diffs) for name, diffs in groups if diffs]
    if not groups:
        return
    heads = (f"a: {run.a.pool_policy}", f"b: {run.b.pool_policy}", "Δ b−a")
    # One width per column for all three tables so they line up: each number column as wide
    # as its widest figure (numbers never fold); the labels get the rest and wrap at spaces.
    rows = [_cells(d) for _, diffs in groups for d in diffs]
    numbers = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    room = console.width - _INDENT - sum(numbers) - _GAP * len(numbers)
    longest = max(len(d.label) for _, diffs in groups for d in diffs)
    label_width = max(min(room, longest), 12)
    for n, (name, diffs) in enumerate(groups):
        table = _diff_table(name, heads, numbers, label_width, header=n == 0)
        for d in diffs:
            table.add_row(Folded(d.label), *_cells(d)[:2], signed_bytes(d.delta))
        console.print(Padding(table, (0, 0, 0, _INDENT)))
    if quiet:
        note = (
            f"⋮ {quiet} more graph{'s' if quiet != 1 else ''} added 0 B under both policies "
            "(every graph: --json)"
        )
        console.print(Padding(Text(note, style="dim"), (0, 0, 0, _INDENT + 2)))


_INDENT, _GAP = 2, 2  # the tables' indent; the blanks between two columns
LONG = 40  # per-graph rows from which graphs that added nothing under either policy are left out


def _cells(d: PoolDiff) -> tuple[str, str, str]:
    return fmt_bytes(d.a_bytes), fmt_bytes(d.b_bytes), signed_bytes(d.delta).plain


def _graph_rows(diffs: Sequence[PoolDiff]) -> tuple[list[PoolDiff], int]:
    """The per-graph rows worth reading, and how many rows of 0 B under both were left out."""
    if len(diffs) <= LONG:
        return list(diffs), 0
    shown = [d for d in diffs if d.a_bytes or d.b_bytes]
    return shown, len(diffs) - len(shown)


def _diff_table(
    name: str, heads: Sequence[str], widths: Sequence[int], label_width: int, header: bool
) -> Table:
    table = Table(
        title=Text(name, style="bold cyan"),
        title_justify="left",
        show_header=header,
        box=None,
        padding=(0, 1),
        pad_edge=False,
        header_style="dim",
    )
    table.add_column("", width=label_width)
    for head, width in zip(heads, widths, strict=True):
        table.add_column(Text(head), justify="right", no_wrap=True, width=width)
    return table


def render_total(run: MemdiffRun, console: Console) -> None:
    line = Text("Total", style="bold")
    line.append(f"  a ({run.a.pool_policy}) {fmt_bytes(run.total_a)}")
    line.append(f" → b ({run.b.pool_policy}) {fmt_bytes(run.total_b)}  ")
    line.append_text(signed_bytes(run.total_delta))
    if run.total_a:
        line.append(f" ({run.total_delta / run.total_a:+.1%})", style="dim")
    console.print(line)
    console.print(Padding(_reference_table(run), (0, 0, 0, _INDENT)))
    ref = SHARED_POOL_SAVING
    setup = Text(f"{ref.source} measured upstream: {ref.setup}", style="dim")
    console.print(Padding(setup, (0, 0, 0, _INDENT)))


def _reference_table(run: MemdiffRun) -> Table:
    """This run beside upstream's figure, in the upstream change's terms (dedicated → shared)."""
    ref = SHARED_POOL_SAVING
    table = Table(box=None, padding=(0, 1), pad_edge=False, header_style="dim")
    table.add_column("graph-pool memory")
    for head in ("dedicated", "shared", "saved"):
        table.add_column(head, justify="right", no_wrap=True)
    by_policy = {run.a.pool_policy: run.total_a, run.b.pool_policy: run.total_b}
    if {"dedicated", "shared"} <= set(by_policy):
        dedicated, shared = by_policy["dedicated"], by_policy["shared"]
        table.add_row(
            Text("this run (measured)", style="bold"),
            fmt_bytes(dedicated),
            fmt_bytes(shared),
            fmt_bytes(dedicated - shared),
        )
    table.add_row(
        Text(f"{ref.source}'s number, not ours", style="dim"),
        f"{ref.dedicated_gib:.2f} GiB",
        f"{ref.shared_gib:.2f} GiB",
        f"{ref.saved_gib:.2f} GiB",
        style="dim",
    )
    return table


def render_tokens(run: MemdiffRun, console: Console) -> None:
    """The accuracy half: a pool policy must never change what the draft proposes."""
    line = Text("Draft tokens  ", style="bold")
    steps = f"over {run.token_steps} step{'s' if run.token_steps != 1 else ''} of the same schedule"
    if run.tokens_identical is None:
        line.append("not compared", style="dim")
    elif run.tokens_identical:
        line.append("✓ identical under both policies ", style="green")
        line.append(steps, style="dim")
    else:
        line.append("✗ differ between the policies ", style="bold red")
        line.append(steps, style="dim")
    console.print(line)
