"""The pre-launch graph-memory prediction: each pool under each policy, per phase.

Renders `results.prediction` (policies → pools → reserved bytes, per-phase growth); it
computes nothing.
"""

from __future__ import annotations

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from eaglegraph.reports.format import fmt_bytes
from eaglegraph.reports.layout import Fitted
from eaglegraph.results.prediction import MemoryPrediction, PredictedPool

PHASES = ("target", "draft_prefill", "draft_decode")


def render_prediction(
    prediction: MemoryPrediction | None, console: Console, kv_budget: str | None = None
) -> None:
    if prediction is None:
        return
    head = Text("Graph memory, predicted", style="bold")
    head.append(f"  {prediction.method}; {prediction.dtype}", style="dim")
    console.print(head)
    table = Table(box=None, padding=(0, 1), pad_edge=False, header_style="dim")
    table.add_column("policy", no_wrap=True)
    table.add_column("pool")
    table.add_column("graphs", justify="right", no_wrap=True)
    table.add_column("reserved", justify="right", no_wrap=True)
    for phase in PHASES:
        table.add_column(phase.removeprefix("draft_"), justify="right", no_wrap=True)
    for policy in prediction.policies:
        pools = policy.pools
        if len(pools) > 4:  # per-graph: one pool per capture, summed
            rows = [("one per graph", sum(p.graphs for p in pools), policy.reserved_bytes,
                     _phase_sum(pools))]  # fmt: skip
        else:
            rows = [(p.label, p.graphs, p.reserved_bytes, p.bytes_per_phase) for p in pools]
        for i, (label, graphs, reserved, per_phase) in enumerate(rows):
            table.add_row(
                Text(policy.policy if i == 0 else "", style="bold"),
                label,
                str(graphs),
                fmt_bytes(reserved),
                *[fmt_bytes(per_phase.get(ph)) if per_phase.get(ph) else "—" for ph in PHASES],
            )
        if len(rows) > 1:
            table.add_row("", Text("total", style="dim"), "", fmt_bytes(policy.reserved_bytes))
    console.print(Fitted(table))
    if kv_budget is not None:
        console.print(Padding(Text(kv_budget), (0, 0, 0, 2)))


def _phase_sum(pools: list[PredictedPool]) -> dict[str, int]:
    out: dict[str, int] = {}
    for pool in pools:
        for phase, n in pool.bytes_per_phase.items():
            out[phase] = out.get(phase, 0) + n
    return out
