"""HTML export of a multi-rank run: the ranks view, then each rank's own report.

A RankedRun keeps every rank's capture/probe run whole, so each rank's section is the
single-run report recorded as `html.py` records it (`html_record`); only the rank table and the
findings (each naming its rank) come from `ranks_view`. Nothing here computes.
"""

from __future__ import annotations

import html

from eaglegraph.reports.html_record import recorded_report
from eaglegraph.results.rank_runs import RankedRun


def render_ranked_html(run: RankedRun, *, title: str | None = None, width: int = 120) -> str:
    """One page: the run's rank table and findings, then a collapsible section per rank."""
    parts = [f'<section id="ranks"><h2>ranks</h2>{recorded_report(run, width)}</section>']
    for r in run.ranks:
        own = r.capture if r.capture is not None else r.probe
        head = f"rank {r.rank} (tp {r.tp_rank}, dp {r.dp_rank}) — {html.escape(r.status)}"
        body = recorded_report(own, width) if own is not None else ""
        if r.error:
            body = f"<p>{html.escape(r.error)}</p>" + body
        parts.append(
            f'<details id="rank-{r.rank}" class="rank" data-rank="{r.rank}">'
            f"<summary>{head}</summary>{body}</details>"
        )
    page_title = html.escape(title or f"eaglegraph report — {run.command} ({len(run.ranks)} ranks)")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="UTF-8">'
        f'<meta name="generator" content="eaglegraph"><title>{page_title}</title></head>'
        f'<body style="margin:1.5em">{"".join(parts)}</body></html>\n'
    )
