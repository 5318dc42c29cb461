"""The findings list every report shares: one block per finding, readable at 80 columns."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from eaglegraph.reports.format import SEVERITY_STYLE
from eaglegraph.reports.layout import Folded
from eaglegraph.results.findings import Finding

_ORDER = {"error": 0, "warning": 1, "info": 2}
_MARK = {"error": "✖", "warning": "▲", "info": "•"}


def render_findings(findings: Sequence[Finding], console: Console, title: str = "Findings") -> None:
    if not findings:
        console.print(f"[bold]{title}[/bold]: [green]none[/green]")
        return
    counts = {s: sum(1 for f in findings if f.severity.value == s) for s in _ORDER}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    console.print(f"[bold]{title}[/bold] ({summary})")
    for f in sorted(findings, key=lambda f: _ORDER[f.severity.value]):
        sev = f.severity.value
        head = Text(f"{_MARK[sev]} {sev:<7} ", style=SEVERITY_STYLE[sev])
        head.append(f.id, style="bold")
        if f.rank is not None:
            head.append(f"  rank {f.rank}", style="bold magenta")
        if f.ref:
            head.append(f"  [{f.ref}]", style="dim")
        console.print(Folded(head))  # a long ref folds after a separator, never mid-name
        console.print(Padding(Folded(f.message), (0, 0, 0, 2)))
        if f.fix:
            console.print(Padding(Folded(f"→ {f.fix}", style="dim"), (0, 0, 0, 2)))
