"""The explorer model of a multi-rank run: rank as a level of the tree.

Each rank's own capture/probe run is arranged exactly as `explore` arranges a single run
(`explore_model.build`); its nodes are re-keyed under `rank<N>:` and grouped under "rank N",
so every section (Graphs, Pools, Findings, …) folds by rank. The run-level findings name their
rank. Nothing is measured here: it only re-labels what the RankedRun holds.
"""

from __future__ import annotations

from dataclasses import replace

from eaglegraph.reports.explore_model import Explorer, Node, build
from eaglegraph.results.rank_runs import RankedRun
from eaglegraph.results.registry import schema_of


def _rank_nodes(rank: int, own: object) -> dict[str, Node]:
    tag = f"rank{rank}:"
    inner = build(own)
    out: dict[str, Node] = {}
    for key, node in inner.nodes.items():
        group = f"rank {rank}" + (f" · {node.group}" if node.group else "")
        out[tag + key] = replace(
            node, id=tag + key, group=group, links=[tag + x for x in node.links]
        )
    return out


def build_ranked(run: RankedRun) -> Explorer:
    """Run → rank → that rank's nodes; run-level findings carry their rank."""
    nodes: dict[str, Node] = {}
    for r in run.ranks:
        own = r.capture if r.capture is not None else r.probe
        inner = _rank_nodes(r.rank, own) if own is not None else {}
        detail = [("rank", str(r.rank)), ("tp rank", str(r.tp_rank)), ("dp rank", str(r.dp_rank))]
        detail.append(("status", r.status))
        if r.error:
            detail.append(("error", r.error))
        if r.waiting_in is not None:
            detail.append(("waiting in", r.waiting_in.describe()))
        detail.append(("collectives", str(r.collectives)))
        if r.replay_equals_eager is not None:
            detail.append(("replay == eager", str(r.replay_equals_eager)))
        head = Node(
            f"rank:{r.rank}",
            "Run",
            f"rank {r.rank}: {r.status}",
            "rank",
            detail=detail,
            links=list(inner),
            group=f"rank {r.rank}",
        )
        nodes[head.id] = head
        nodes.update(inner)
    for i, f in enumerate(run.findings):
        where = f"rank {f.rank}" if f.rank is not None else "all ranks"
        node = Node(
            f"finding:{i}",
            "Findings",
            f"{f.id} [{where}]",
            f.kind or "finding",
            phase=f.phase,
            severity=f.severity.value,
            group=where,
            detail=[("rule", f.id), ("rank", where), ("message", f.message)]
            + ([("fix", f.fix)] if f.fix else []),
            links=[f"rank:{f.rank}"] if f.rank is not None else [],
        )
        nodes[node.id] = node
    for node in nodes.values():
        node.links = [x for x in node.links if x in nodes]
    title = f"{run.command} × {len(run.ranks)} ranks ({run.backend})"
    return Explorer(title=title, schema=schema_of(run), nodes=nodes)


def explorer_of(run: object) -> Explorer:
    """The explorer model of any saved run, a multi-rank one included (both front ends use it)."""
    return build_ranked(run) if isinstance(run, RankedRun) else build(run)
