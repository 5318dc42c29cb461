"""`capture`: build the rig, capture every planned graph, account pools, optionally replay.

The result is a `CaptureRun` (schema eaglegraph.capture/1). On CUDA the memory figures come
from the allocator (per-graph reserved growth, snapshot segments per pool, the free-memory
delta vLLM logs as "took … GiB"); on CPU the emulated backend gives the timeline only.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from eaglegraph.errors import BadInput, MissingEnvironment
from eaglegraph.pair.model import Pair
from eaglegraph.probes.environment import run_environment
from eaglegraph.probes.fit import check_fit
from eaglegraph.probes.memory_predict import predict_policy, record_capture
from eaglegraph.probes.pool_accounting import (
    emulated_pools,
    pools_from_segments,
    releasable_bytes,
    snapshot_segments,
)
from eaglegraph.probes.preflight import preflight
from eaglegraph.probes.spec import RunSpec
from eaglegraph.results.capture import CaptureEvent, CaptureRun, CaptureTotals
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.driver import run_workload
from eaglegraph.rig.graphs import MemoryReading
from eaglegraph.rig.plan import build_plan
from eaglegraph.rig.step import CaptureFailed, Rig
from eaglegraph.rig.workload import Schedule
from eaglegraph.serial import default_file_mode, to_jsonable


@dataclass
class CaptureRequest:
    """Everything `capture` needs besides the pair (what the CLI parsed)."""

    config: RigConfig
    pool: str | None = None
    schedule: Schedule | None = None
    snapshot: Path | None = None
    overwrite: bool = False
    model: str = ""
    predict: bool = True  # on CUDA: predict the pools first and refuse what will not fit
    left_out: Finding | None = None  # what a quick CPU plan left out, and how to get it

    @classmethod
    def from_spec(
        cls,
        spec: RunSpec,
        *,
        replay: bool = False,
        snapshot: Path | None = None,
        overwrite: bool = False,
        predict: bool = True,
    ) -> CaptureRequest:
        """`replay` runs a grow/shrink schedule through the graphs after capture; `predict`
        checks the CPU prediction against the device first (CUDA)."""
        config = spec.rig_config()
        return cls(
            config=config,
            pool=spec.pool,
            schedule=Schedule.grow_shrink(min(config.max_num_seqs, 8)) if replay else None,
            snapshot=snapshot,
            overwrite=overwrite,
            model=spec.model,
            predict=predict,
            left_out=quick_plan_note(spec),
        )


def quick_plan_note(spec: RunSpec) -> Finding | None:
    """An info finding when the CPU quick plan replaced the default --max-num-seqs: how many
    graphs the full plan has, and the flag that captures them."""
    full = spec.full_max_num_seqs
    if full is None:
        return None
    options = spec.options
    quick = sum(p.descriptor_count for p in build_plan(options).phases)
    whole = dataclasses.replace(options, max_num_seqs=full)
    total = sum(p.descriptor_count for p in build_plan(whole).phases)
    return Finding(
        id="cpu-quick-plan",
        severity=Severity.INFO,
        message=(
            f"quick CPU answer: planned for --max-num-seqs {options.max_num_seqs} "
            f"({quick} graphs); the default plan (--max-num-seqs {full}) has {total} graphs, "
            "each captured through the Triton interpreter, and the emulated backend measures "
            "no memory"
        ),
        fix=f"pass --full-plan (or --max-num-seqs {full}) to capture all {total}",
    )


def capture_task(args: dict[str, Any]) -> dict[str, Any]:
    """The runner's "capture" task (memdiff's fresh processes): spec in, the run as JSON out."""
    spec = RunSpec.from_json(args["spec"])
    request = CaptureRequest.from_spec(
        spec, replay=bool(args.get("replay")), predict=bool(args.get("predict", True))
    )
    return to_jsonable(run_capture(spec.open_pair(), request))


def _free_bytes() -> int:
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.synchronize()
    return int(torch.cuda.mem_get_info()[0])


def _write_snapshot(path: Path, overwrite: bool) -> None:
    """The allocator history pickle PyTorch's memory_viz opens; written atomically."""
    if path.exists() and not overwrite:
        raise BadInput(f"{path} already exists", "pass --force to replace it")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or Path("."))
    os.close(fd)
    try:
        torch.cuda.memory._dump_snapshot(tmp)
        os.chmod(tmp, default_file_mode())
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def run_capture(
    pair: Pair,
    request: CaptureRequest,
    on_event: Callable[[CaptureEvent], None] | None = None,
    on_stage: Callable[[str], None] | None = None,
    rig: Rig | None = None,
) -> CaptureRun:
    """Capture with a fresh rig (or a prebuilt one, for tests that shape memory first)."""
    cfg = request.config
    cuda = cfg.device.type == "cuda"
    if request.snapshot is not None and not cuda:
        raise BadInput("--snapshot needs CUDA: the allocator snapshot exists only for GPU memory")
    if request.snapshot is not None and request.snapshot.exists() and not request.overwrite:
        raise BadInput(f"{request.snapshot} already exists", "pass --force to replace it")
    stage = on_stage or (lambda _: None)
    stage("loading the pair")
    if rig is None:
        preflight(pair, cfg)
        try:
            rig = Rig(pair, cfg)
        except torch.OutOfMemoryError as exc:
            raise MissingEnvironment(
                "not enough GPU memory to load the pair and its KV cache: "
                + str(exc).splitlines()[0][:200]
            ) from None
    policy = request.pool or rig.behavior.default_pool
    prediction = None
    if cuda and request.predict:
        stage("predicting graph memory")
        prediction = _predict_and_check(pair, cfg, policy)
    if request.snapshot is not None:
        torch.cuda.memory._record_memory_history(max_entries=200_000)
    free_before = _free_bytes() if cuda else None
    reserved_start = int(torch.cuda.memory_reserved()) if cuda else None
    stage("capturing graphs")
    start = time.perf_counter()
    failed: CaptureEvent | None = None
    findings: list[Finding] = []
    try:
        # the first graph's window opens here, so the per-graph figures add up to "took"
        mark = (
            MemoryReading(int(torch.cuda.memory_allocated()), reserved_start, free_before, None)
            if cuda
            else None
        )
        events, findings = rig.capture(policy, on_event, memory_mark=mark)
    except CaptureFailed as exc:
        events, failed = exc.events, exc.failed
        findings.append(
            Finding(
                id="capture-oom" if failed.status == "oom" else "capture-failed",
                severity=Severity.ERROR,
                phase=failed.phase,
                mode=failed.mode,
                descriptor=failed.descriptor,
                message=f"capture of {failed.phase} {failed.descriptor} failed: {failed.error}",
                fix="lower --max-num-seqs or the capture sizes, or use a shared pool",
            )
        )
    seconds = time.perf_counter() - start
    assert rig.graph_context is not None
    manager = rig.graph_context.pools
    if cuda:
        free_after = _free_bytes()
        segments = snapshot_segments()
        pools = pools_from_segments(segments, events, manager)
        reserved = int(torch.cuda.memory_reserved())
        snap_total = sum(int(s.get("total_size", 0)) for s in segments)
        graph_pools = sum(p.reserved_bytes for p in pools if p.id.graph_pool)
        took = (free_before or 0) - free_after
        allocator = reserved - (reserved_start or 0)
        per_graph = [e.outside_allocator_bytes for e in events]
        totals = CaptureTotals(
            capture_seconds=seconds,
            graphs=len(events),
            took_bytes=took,
            pool_reserved_bytes=graph_pools,
            reserved_bytes=reserved,
            snapshot_reserved_bytes=snap_total,
            accounted=snap_total == reserved,
            allocator_bytes=allocator,
            outside_allocator_bytes=took - allocator,
            outside_in_captures_bytes=(
                sum(b for b in per_graph if b is not None) if events else None
            ),
        )
        if request.snapshot is not None:
            _write_snapshot(request.snapshot, request.overwrite)
            torch.cuda.memory._record_memory_history(enabled=None)
    else:
        pools = emulated_pools(events, manager)
        totals = CaptureTotals(seconds, len(events), None, None, None, None, None)
    replay = None
    if failed is None and request.schedule is not None:
        stage(f"replaying schedule {request.schedule.name}")
        result = run_workload(rig, request.schedule)
        replay = {
            "schedule": result.schedule,
            "steps": len(result.steps),
            "acceptance_rate": result.acceptance_rate,
            "draft_tokens": [s.draft_tokens for s in result.steps],
            "accepted": [s.accepted for s in result.steps],
            "descriptors": [s.descriptors for s in result.steps],
        }
    return CaptureRun(
        config=_config_json(request, rig, policy),
        environment=run_environment(cfg.device),
        backend=cfg.graph_backend,
        pool_policy=policy,
        events=events,
        pools=pools,
        totals=totals,
        findings=rig.plan.findings + findings + ([request.left_out] if request.left_out else []),
        failed=failed,
        replay=replay,
        prediction=prediction,
    )


def _available_bytes() -> int:
    """What graph pools can still get: free device memory plus the default pool's wholly
    free segments, which the allocator releases before it gives up."""
    torch.cuda.synchronize()
    return int(torch.cuda.mem_get_info()[0]) + releasable_bytes(snapshot_segments())


def _predict_and_check(pair: Pair, cfg: RigConfig, policy: str) -> dict[str, Any]:
    """The CPU prediction for this policy; stop before capturing when it cannot fit."""
    recording = record_capture(pair, cfg)
    check = check_fit(recording, policy, _available_bytes(), cfg.num_speculative_tokens)
    if not check.fits:
        raise MissingEnvironment(
            "capture would run out of GPU memory: " + check.message(),
            "pass --no-predict to capture anyway",
        )
    predicted = predict_policy(recording, policy)
    return {
        "policy": policy,
        "method": "caching-allocator simulation of the uncompiled capture sequence",
        "compiled_run": cfg.compiled,
        "reserved_bytes": predicted.reserved_bytes,
        "available_bytes": check.available_bytes,
        "pools": {p.label: p.reserved_bytes for p in predicted.pools},
    }


def _config_json(request: CaptureRequest, rig: Rig, policy: str) -> dict[str, Any]:
    cfg, plan = request.config, rig.plan
    return {
        "model": request.model,
        "framework": plan.framework,
        "behavior": plan.behavior,
        "runner": plan.runner,
        "runner_why": plan.runner_why,
        "mode": plan.requested_mode.name,
        "resolved_mode": plan.resolved_mode.name,
        "attention_backend": plan.attention_backend,
        "pool": policy,
        "num_speculative_tokens": plan.num_speculative_tokens,
        "max_num_seqs": plan.max_num_seqs,
        "max_num_batched_tokens": plan.max_num_batched_tokens,
        "capture_sizes": plan.capture_sizes,
        "dtype": str(rig.models.dtype).removeprefix("torch."),
        "device": str(cfg.device),
        "random_weights": cfg.random_weights,
        "compiled": cfg.compiled,
        "draft_kind": rig.models.kind,
        "phases": {p.phase: p.mode.name for p in plan.phases},
    }
