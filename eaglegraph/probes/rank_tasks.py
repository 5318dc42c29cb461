"""What one rank does in a multi-rank run: build its shard of the rig, capture, replay.

Called inside a joined `RankRuntime` (`probes.rank_worker`). Each rank captures its plan
with the collectives inside the graphs, then runs one schedule through the graphs and again
eagerly on the same rig (graphs hidden, so nothing but the graphs differs): replay equals
eager per rank. Rank 0 also rebuilds the pair unsharded (TP 1) and runs the same schedule,
so the TP > 1 tokens can be held against the single-rank ones.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
from collections.abc import Iterator
from typing import Any

from eaglegraph.probes.capture import CaptureRequest, run_capture
from eaglegraph.probes.spec import RunSpec
from eaglegraph.results.parallel import SINGLE_RANK
from eaglegraph.rig.driver import run_workload
from eaglegraph.rig.ranks import RankRuntime
from eaglegraph.rig.step import Rig
from eaglegraph.rig.workload import Schedule
from eaglegraph.serial import to_jsonable

TraceRow = tuple[int, tuple[int, ...], tuple[tuple[int, ...], ...]]


def _stage(rank: int, text: str) -> None:
    """A progress line on the rank's stderr, which the supervisor reads as a heartbeat."""
    sys.stderr.write(f"[rank {rank} {time.strftime('%H:%M:%S')}] {text}\n")
    sys.stderr.flush()


@contextlib.contextmanager
def graphs_hidden(rig: Rig) -> Iterator[None]:
    """Every phase dispatches as if nothing had been captured: the same rig, run eagerly."""
    saved = {phase: runner.graphs for phase, runner in rig.runners.items()}
    for runner in rig.runners.values():
        runner.graphs = {}
    try:
        yield
    finally:
        for phase, graphs in saved.items():
            rig.runners[phase].graphs = graphs


def token_agreement(ours: list[TraceRow], single: list[TraceRow]) -> dict[str, Any]:
    """Accepted counts and draft tokens of every step, ours against the single-rank run's."""
    tokens = equal = 0
    first: str | None = None
    for (step, accepted, drafts), (_, accepted1, drafts1) in zip(ours, single, strict=False):
        for row, (mine, theirs) in enumerate(zip(drafts, drafts1, strict=False)):
            for k, (a, b) in enumerate(zip(mine, theirs, strict=False)):
                tokens += 1
                equal += a == b
                if a != b and first is None:
                    first = f"step {step}, request {row}, draft token {k}: {a} vs {b} at TP 1"
        if accepted != accepted1 and first is None:
            first = f"step {step}: accepted {list(accepted)} vs {list(accepted1)} at TP 1"
    if len(ours) != len(single):  # a schedule that ran a different number of steps
        tokens += abs(len(ours) - len(single))  # each missing step counts as one difference
        first = first or f"{len(ours)} steps vs {len(single)} at TP 1"
    return {"tokens": tokens, "equal": equal, "first_difference": first}


def rank_capture(rt: RankRuntime, spec: RunSpec, args: dict[str, Any]) -> dict[str, Any]:
    """Capture this rank's graphs; with `replay`, replay == eager (and rank 0: vs TP 1)."""
    spec = dataclasses.replace(spec, layout=rt.layout, rank=rt.rank)
    pair = spec.open_pair()
    config = spec.rig_config()
    _stage(rt.rank, "building its shard of the rig")
    rig = Rig(pair, config)
    # every rank starts capturing together: a peer still building its shard would otherwise
    # count in this rank's first warm-up (its first collective waits for the peer)
    rt.barrier()
    request = CaptureRequest.from_spec(spec, predict=False)
    request.config = config
    run = run_capture(
        pair, request, rig=rig, on_stage=lambda s: _stage(rt.rank, s),
        on_event=lambda e: _stage(rt.rank, f"captured {e.phase} {e.descriptor}"),
    )  # fmt: skip
    out: dict[str, Any] = {
        "capture": to_jsonable(run),
        "collectives_per_forward": rig.collectives_per_forward,
        "comm_bytes": rt.comm_bytes,
        "graphs": [f"{e.phase} {e.descriptor}" for e in run.events],
    }
    if run.failed is not None or not args.get("replay"):
        return out
    schedule = Schedule.grow_shrink(min(config.max_num_seqs, 8), waves=int(args.get("waves", 2)))
    _stage(rt.rank, f"replaying schedule {schedule.name} through the graphs")
    graphs = run_workload(rig, schedule).token_trace()
    _stage(rt.rank, "running the same schedule eagerly")
    with graphs_hidden(rig):
        eager = run_workload(rig, schedule).token_trace()
    out["replay_equals_eager"] = graphs == eager
    if rt.rank == 0 and rt.layout.tp > 1 and args.get("compare_single", True):
        _stage(rt.rank, "running the same schedule unsharded (TP 1)")
        single_config = dataclasses.replace(config, layout=SINGLE_RANK, rank=0)
        single = run_workload(Rig(pair, single_config), schedule).token_trace()
        out["single_rank"] = token_agreement(graphs, single)
    return out


def rank_probe(rt: RankRuntime, spec: RunSpec, args: dict[str, Any]) -> dict[str, Any]:
    """The probe's cases on this rank's shard, in this process and in the same order on every
    rank, so their collectives pair up (a case that fails on one rank only shows as the
    ranks parting, with both named)."""
    from eaglegraph.probes.probing import probe

    spec = dataclasses.replace(spec, layout=rt.layout, rank=rt.rank)

    def on_case(name: str, result: Any) -> None:
        _stage(rt.rank, f"case {name}" + ("" if result is None else f": {result.status}"))

    run = probe(
        spec, modes=tuple(args.get("modes", ("all",))),
        batches=tuple(args["batches"]) if args.get("batches") else None,
        isolate=False, workers=1, on_case=on_case,
    )  # fmt: skip
    out: dict[str, Any] = {
        "probe": to_jsonable(run),
        "graphs": sorted({g for c in run.cases for g in _graphs(c)}),
    }
    if rt.layout.dp > 1:
        runs = dp_agreement(rt, spec, seeds=int(args.get("dp_seeds", 3)))
        out["dp_agreement"] = [to_jsonable(r) for r in runs]
    return out


def dp_agreement(rt: RankRuntime, spec: RunSpec, seeds: int = 3) -> list[Any]:
    """The DP agreement of the spec's profile across the real replicas: the named scenarios
    for this many replicas, then `seeds` seeded explorations. Each replica runs its own batch
    through the release's rule (`rig.dp_agreement.rank_step`), its vote rows exchanged by a
    gloo all_gather as the engines exchange them on their CPU groups; the replicas' steps are
    gathered and compared (`probes.dp_scenarios.compare_ranks`)."""
    from eaglegraph.known.dp_batch import BatchKind
    from eaglegraph.known.dp_scenarios import SCENARIOS
    from eaglegraph.probes.dp_scenarios import explore, run_scenario
    from eaglegraph.results.dp import RankStep
    from eaglegraph.rig.dp_agreement import rank_step

    replica = rt.layout.dp_rank(rt.rank)
    profile = spec.options.behavior

    def step_runner(batches: Any, prof: Any, setup: Any, runner: Any) -> tuple[RankStep, ...]:
        if prof.engine == "vllm" and all(b.kind is BatchKind.IDLE for b in batches):
            # vLLM's DP coordinator does not step the engines when every rank is idle
            return tuple(RankStep(r, b.label(), (), (), 0) for r, b in enumerate(batches))
        mine = rank_step(replica, batches[replica], prof, rt.dp_gather, setup, runner)
        return tuple(rt.dp_gather(mine))

    _stage(rt.rank, "DP agreement: named scenarios and explorations over gloo")
    runs = [
        run_scenario(s, profile, step_runner)
        for s in SCENARIOS.values()
        if s.engine == profile.engine and s.dp_size == rt.layout.dp
    ]
    runs += [
        explore(profile, seed, dp_size=rt.layout.dp, engine=profile.engine, step_runner=step_runner)
        for seed in range(seeds)
    ]
    return runs


def _graphs(case: Any) -> list[str]:
    return [f"{case.mode} {g.phase} {g.descriptor}" for g in getattr(case, "graphs", None) or []]


RANK_TASKS = {"capture": rank_capture, "probe": rank_probe}
