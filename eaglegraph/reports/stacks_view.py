"""Terminal view of a `StacksReport` (rich): grouped stacks, meaningful frames highlighted."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from eaglegraph.results import stacks as fr
from eaglegraph.results.stacks import StacksReport

_TAG_STYLE = {
    fr.CAPTURE: "bold magenta",
    fr.REPLAY: "bold magenta",
    fr.SPEC: "bold cyan",
    fr.SAMPLING: "bold yellow",
    fr.COLLECTIVE: "bold red",
}


_SPECIFIC = (fr.CAPTURE, fr.REPLAY, fr.SPEC, fr.SAMPLING, fr.COLLECTIVE)


def _headline(report: StacksReport) -> tuple[str, str]:
    """ "stuck in" only for a busy stack; a sleeping one is "blocked in" a graph/draft/NCCL
    wait, or plainly "waiting" when none of its frames is one (an idle server looks so)."""
    if report.stuck_group is None or not report.groups:
        return "stuck in", " <- stuck here"
    group = report.groups[report.stuck_group]
    if any(t.active for t in group.threads):
        return "stuck in", " <- stuck here"
    if set(group.tags) & set(_SPECIFIC):
        return "blocked in", " <- blocked here"
    return "waiting, no thread busy", " <- waiting here"


def _render_ranks(report: StacksReport, console: Console) -> None:
    """One row per rank: its name, PID, where its busiest stack waits; the odd one marked."""
    if not report.ranks:
        return
    if report.divergence:
        odd = any(r.differs for r in report.ranks)
        console.print(Text(report.divergence, style="bold red" if odd else "bold"))
    table = Table(box=None, pad_edge=False, show_edge=False)
    for name, kw in (
        ("rank", {"no_wrap": True}),
        ("pid", {"justify": "right", "no_wrap": True}),
        ("waits in", {"overflow": "fold"}),
        ("stack", {"justify": "right", "no_wrap": True}),
    ):
        table.add_column(name, **kw)
    for r in report.ranks:
        table.add_row(
            Text(("▶ " if r.differs else "  ") + r.rank.label, "bold red" if r.differs else ""),
            str(r.pid),
            f"{r.phase}: {r.wait}" + (" (busy)" if r.active else ""),
            f"[{r.group}]" if r.group is not None else "-",
        )
    console.print(table)


def render_stacks(report: StacksReport, console: Console, max_groups: int = 12) -> None:
    label, marker_text = _headline(report)
    head = Text.assemble(
        (f"{label}: ", "bold"), (report.phase, "bold red"), f"  ({report.phase_detail})"
    )
    console.print(head)
    procs = ", ".join(f"{p.pid} ({p.threads} threads)" for p in report.processes)
    console.print(
        Text(
            f"PID {report.pid}: {report.threads} threads in {len(report.groups)} distinct "
            f"stacks; processes {procs}",
            style="dim",
        )
        if not report.ranks
        else Text(
            f"{len(report.ranks)} ranks, {report.threads} threads in {len(report.groups)} "
            "distinct stacks",
            style="dim",
        )
    )
    _render_ranks(report, console)
    for n, group in enumerate(report.groups[:max_groups]):
        marker = marker_text if n == report.stuck_group else ""
        names = ", ".join(sorted({f"{t.pid}:{t.name or t.thread_id}" for t in group.threads}))[:160]
        active = sum(1 for t in group.threads if t.active)
        console.print(
            Text.assemble(
                (f"\n[{n}] {group.count} thread(s)", "bold"),
                f" {group.phase}",
                (f", {active} active" if active else "", ""),
                (marker, "bold red"),
            )
        )
        console.print(Text(f"    {escape(names)}", style="dim"))
        for i, f in enumerate(group.frames):
            style = next(
                (_TAG_STYLE[t] for t in f.tags if t in _TAG_STYLE), "dim" if not f.tags else ""
            )
            tag = f"  [{', '.join(f.tags)}]" if f.tags else ""
            pointer = "=> " if i == group.phase_frame else "   "
            console.print(
                Text(f"  {pointer}{f.name} ({f.short_filename}:{f.line}){tag}", style=style)
            )
    if len(report.groups) > max_groups:
        console.print(
            Text(f"... {len(report.groups) - max_groups} more stacks (see --json)", style="dim")
        )
    for note in report.notes:
        console.print(Text(f"note: {note}", style="yellow"))
