"""Terminal view of a `DpRun`: the rule it ran, each step's per-rank choices, the findings.

Readable at 80 columns: one row per rank and step, the phases folded onto as many lines as
they need; a rank in a step with a finding is marked. It reads the result only.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from eaglegraph.reports.findings_view import render_findings
from eaglegraph.results.dp import DpRun, RankStep


def _phases(rank: RankStep) -> str:
    """'target FULL(8) · draft_prefill PIECEWISE(8) · draft_decode 1-2 PIECEWISE(4)': draft
    decodes with one key are folded into a range."""
    parts: list[str] = []
    last: tuple[str, str] | None = None
    first_index = 0
    for p in rank.phases:
        if p.index and last == (p.phase, p.key) and parts:
            parts[-1] = f"{p.phase} {first_index}-{p.index} {p.key}"
            continue
        first_index = p.index
        last = (p.phase, p.key)
        parts.append(f"{p.label} {p.key}")
    return " · ".join(parts) or "no forward"


def render_dp_run(run: DpRun, console: Console) -> None:
    verdict = run.verdict
    style = "bold red" if verdict == "diverges" else "bold green"
    title = Text(f"DP agreement: {run.scenario or run.summary}", style="bold")
    console.print(title)
    if run.scenario and run.summary:
        console.print(Text(run.summary))
    console.print(
        Text(f"profile {run.profile} · rule {run.rule} · {run.dp_size} ranks", style="dim")
    )
    console.print(Text(f"rows: {', '.join(run.rows)}", style="dim"))
    console.print(Text(f"read in: {run.rule_source}", style="dim"))
    line = Text("verdict: ")
    line.append(verdict, style=style)
    if run.expect is not None:
        ok = run.as_expected
        line.append(f" (expected {run.expect}: {'as expected' if ok else 'NOT as expected'})")
    console.print(line)
    if run.hazards:
        console.print(Text(f"DP hazards of this profile: {', '.join(run.hazards)}", style="dim"))
    table = Table(box=None, pad_edge=False, show_edge=False)
    table.add_column("step", justify="right", no_wrap=True)
    table.add_column("rank", no_wrap=True)
    table.add_column("batch", overflow="fold")
    table.add_column("syncs", justify="right", no_wrap=True)
    table.add_column("forwards", overflow="fold", ratio=1)
    table.add_column("K", justify="right", no_wrap=True)
    for step in run.steps:
        odd = bool(step.findings)
        for r in step.ranks:
            mark = "▶ " if odd else "  "
            table.add_row(
                str(step.index) if r is step.ranks[0] else "",
                Text(f"{mark}{r.rank}", style="bold red" if odd else ""),
                r.batch,
                str(len(r.syncs)),
                _phases(r),
                str(r.draft_steps),
            )
    console.print(table)
    render_findings(run.findings, console)
