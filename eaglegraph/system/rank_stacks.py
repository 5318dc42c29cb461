"""Every rank of a hung server side by side: where each waits, and the one that waits elsewhere.

A multi-GPU deadlock looks the same from every rank but one: N−1 ranks sit in a collective
(all_reduce inside a captured graph, a DP all-gather) waiting for a rank that took another path
— ran eagerly, replays a different graph, faulted, or is still computing. Grouping identical
stacks across ranks shows the majority; the rank whose wait differs is the one to look at.
"""

from __future__ import annotations

from collections import Counter

from eaglegraph import frames as fr
from eaglegraph.results.stacks import RankStack, StackGroup, StacksReport
from eaglegraph.system.ranks import rank_name

_MEANINGFUL = {fr.CAPTURE, fr.REPLAY, fr.SPEC, fr.SAMPLING, fr.COLLECTIVE}


def _score(group: StackGroup, pid: int) -> float:
    """How much `group` says about where process `pid` is stuck (its own threads only)."""
    mine = [t for t in group.threads if t.pid == pid]
    meaningful = bool(set(group.tags) & _MEANINGFUL)
    idle = group.phase in ("idle", "unknown") and not meaningful
    active = sum(1 for t in mine if t.active or t.owns_gil)
    return (3.0 if meaningful else 0.0) + (0.0 if idle else 1.0) + 2.0 * active + 0.1 * len(mine)


def _collective(group: StackGroup) -> str | None:
    """The innermost collective frame's function (all_reduce, broadcast, recv, …)."""
    return next((f.name for f in group.frames if fr.COLLECTIVE in f.tags), None)


def rank_rows(report: StacksReport) -> list[RankStack]:
    """One row per process of the report, in PID order: its busiest stack and what it waits in."""
    rows = []
    for proc in report.processes:
        candidates = [
            (i, g) for i, g in enumerate(report.groups) if any(t.pid == proc.pid for t in g.threads)
        ]
        if not candidates:
            continue
        index, group = max(candidates, key=lambda c: (_score(c[1], proc.pid), -c[0]))
        if group.phase_frame is not None:
            f = group.frames[group.phase_frame]
            wait = f"{f.name} ({f.short_filename}:{f.line})"
        else:
            wait = group.frames[0].name if group.frames else "?"
        rows.append(
            RankStack(
                pid=proc.pid,
                rank=rank_name(proc.pid, proc.command_line),
                group=index,
                phase=group.phase,
                wait=wait,
                collective=_collective(group),
                active=any(t.active for t in group.threads if t.pid == proc.pid),
            )
        )
    return rows


def divergence(rows: list[RankStack]) -> str:
    """Mark the ranks that wait elsewhere than the majority; one sentence saying so.

    The majority is the place most ranks wait in, when more than half do. Without one (two
    ranks, or an even split), ranks outside any collective differ from ranks inside one: the
    collective waits for them. Nothing differs when every rank waits in the same place.
    """
    if len(rows) < 2:
        return ""
    where = {id(r): (r.phase, r.wait.split(" (")[0], r.collective) for r in rows}
    counts = Counter(where.values())
    top, top_n = counts.most_common(1)[0]
    if top_n == len(rows):
        return f"all {len(rows)} ranks: {rows[0].phase} at {rows[0].wait}"
    if top_n * 2 > len(rows):
        odd = [r for r in rows if where[id(r)] != top]
        waiting = [r for r in rows if where[id(r)] == top]
    else:
        odd = [r for r in rows if r.collective is None]
        waiting = [r for r in rows if r.collective is not None]
        if not odd or not waiting:
            places = len(counts)
            return f"no majority: the {len(rows)} ranks wait in {places} different places"
    for r in odd:
        r.differs = True
    names = ", ".join(r.rank.label for r in odd)
    verb = "differs" if len(odd) == 1 else "differ"
    first = odd[0]
    state = "busy" if first.active else "waiting"
    others = ", ".join(r.rank.label for r in waiting)
    return (
        f"{names} {verb}: {first.phase} at {first.wait} ({state}), while {others} "
        f"wait in {waiting[0].collective or waiting[0].phase}"
    )
