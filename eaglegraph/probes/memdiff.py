"""`memdiff`: capture under two pool policies, each in a fresh process, and diff the memory.

A fresh process per policy means neither capture inherits the other's cached blocks. Both runs
also replay the same grow/shrink schedule through their graphs, so the diff says whether the
policies produced identical draft tokens (the accuracy half of the shared-pool fix, hazard
`dedicated-eagle-pool`) as well as what each costs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from eaglegraph.errors import BadInput, MissingEnvironment
from eaglegraph.probes.runner import run_task
from eaglegraph.probes.spec import RunSpec
from eaglegraph.results.capture import CaptureRun
from eaglegraph.results.codec import decode
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.results.memdiff import MemdiffRun
from eaglegraph.results.pools import PoolDiff


def capture_isolated(
    spec: RunSpec, timeout: float, replay: bool = True, predict: bool = True
) -> CaptureRun:
    """Capture (and replay the grow/shrink schedule) under `spec.pool` in a fresh worker;
    `predict` has it check the CPU prediction against the device first."""
    pool = spec.resolved_pool
    args = {"spec": spec.to_json(), "replay": replay, "predict": predict}
    outcome = run_task("capture", args, name=f"capture-{pool}", timeout=timeout)
    outcome.raise_failure()
    if outcome.status == "timeout":
        raise MissingEnvironment(f"capture under --pool {pool} did not finish in {timeout:.0f} s")
    if outcome.status != "ok":
        tail = outcome.stderr.strip().splitlines()[-1:] or [outcome.error or "no output"]
        raise MissingEnvironment(f"capture under --pool {pool} failed ({outcome.error}): {tail[0]}")
    return decode(CaptureRun, outcome.value, f"capture --pool {pool}")


def _graph_key(phase: str, mode: str, tokens: int, reqs: int | None) -> str:
    return f"{phase} {mode}(tokens={tokens}, reqs={'—' if reqs is None else reqs})"


def diff_runs(a: CaptureRun, b: CaptureRun, config: dict[str, object]) -> MemdiffRun:
    def pools(run: CaptureRun) -> dict[str, int]:
        return {p.label: p.reserved_bytes for p in run.pools}

    def phases(run: CaptureRun) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for e in run.events:
            out[e.phase] += e.bytes or 0
        return out

    def graphs(run: CaptureRun) -> dict[str, int]:
        return {
            _graph_key(e.phase, e.mode, e.num_tokens, e.num_reqs): e.bytes or 0 for e in run.events
        }

    def pair(fa: dict[str, int], fb: dict[str, int]) -> list[PoolDiff]:
        keys = list(dict.fromkeys([*fa, *fb]))
        return [PoolDiff(k, fa.get(k, 0), fb.get(k, 0)) for k in keys]

    identical = None
    steps = 0
    if a.replay and b.replay:
        steps = int(a.replay.get("steps", 0))
        identical = (a.replay.get("draft_tokens"), a.replay.get("accepted")) == (
            b.replay.get("draft_tokens"),
            b.replay.get("accepted"),
        )
    return MemdiffRun(
        config=config,
        a=a,
        b=b,
        per_pool=pair(pools(a), pools(b)),
        per_phase=pair(phases(a), phases(b)),
        per_graph=pair(graphs(a), graphs(b)),
        total_a=a.totals.pool_reserved_bytes or 0,
        total_b=b.totals.pool_reserved_bytes or 0,
        tokens_identical=identical,
        token_steps=steps,
        findings=[] if identical is not False else [_tokens_differ(a, b)],
    )


def _tokens_differ(a: CaptureRun, b: CaptureRun) -> Finding:
    """Which steps differ, and how to tell a pool bug from numerics that differ between the
    two processes (a compiled target's kernels are chosen in each process)."""
    assert a.replay is not None and b.replay is not None
    steps = list(
        zip(a.replay.get("draft_tokens", []), b.replay.get("draft_tokens", []), strict=False)
    )
    differ = [i for i, (x, y) in enumerate(steps) if x != y]
    accepted = a.replay.get("accepted") != b.replay.get("accepted")
    where = (
        f"in {len(differ)} of {len(steps)} steps, first at step {differ[0]}"
        if differ
        else "in the accepted counts only"
    )
    if a.config.get("compiled") or b.config.get("compiled"):
        fix = (
            "the target is compiled, and Inductor may choose other kernels in each process "
            "(the last bit of a logit flips a greedy token): rerun with --no-compile; if the "
            "eager runs differ too, a graph reads memory another graph of the pool reused"
        )
    else:
        fix = (
            "both runs are eager and replay the same schedule: a graph reads memory another "
            f"graph of the --pool {a.pool_policy} pool reused; probe the pair under that pool"
        )
    return Finding(
        id="pool-changes-tokens",
        severity=Severity.WARNING,
        message=(
            f"draft tokens differ between --pool {a.pool_policy} and --pool {b.pool_policy} "
            f"{where}" + (" (accepted counts differ too)" if accepted and differ else "")
        ),
        evidence=f"replayed schedule {a.replay.get('schedule')} in both processes",
        fix=fix,
    )


def memdiff(
    spec: RunSpec,
    against: str,
    timeout: float = 1800.0,
    on_stage: Callable[[str], None] | None = None,
    predict: bool = True,
) -> MemdiffRun:
    """Capture `spec` under its pool and under `against`, each in a fresh process, and diff."""
    import torch

    pool = spec.resolved_pool
    if pool == against:
        raise BadInput(f"--pool and --against are both {pool}; pick two different policies")
    if not torch.cuda.is_available():
        # the CPU answer to "how much does each policy take" is the allocator simulation
        raise MissingEnvironment(
            "memdiff needs a CUDA GPU: pool memory exists only on the device",
            f"on CPU, `eaglegraph inspect {spec.model} --predict-memory` predicts each pool "
            "under each pool policy",
        )
    if spec.device != "cuda":
        raise BadInput("memdiff measures device memory: run it with --device cuda (or auto)")
    from eaglegraph.probes.preflight import preflight

    # each capture checks its own memory in its process; the rest is refused here, once
    preflight(spec.open_pair(), spec.rig_config(), memory=False)
    stage = on_stage or (lambda _: None)
    runs = []
    for policy in (pool, against):
        stage(f"capturing with --pool {policy} in a fresh process")
        runs.append(capture_isolated(spec.with_pool(policy), timeout, predict=predict))
    config: dict[str, object] = {"model": spec.model, "pool": pool, "against": against}
    config.update({k: v for k, v in runs[0].config.items() if k not in ("pool", "model")})
    return diff_runs(runs[0], runs[1], config)
