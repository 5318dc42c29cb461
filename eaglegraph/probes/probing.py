"""`probe`: plan the cases of a run from its spec, run each in a worker, add up the findings.

Cases are planned from the same resolved spec the workers run (the draft's own K included),
so the padding batches chosen here are the ones that pad in the worker.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from eaglegraph.errors import BadInput
from eaglegraph.probes import checkpoint as breadcrumbs
from eaglegraph.probes.cases import (
    ProbeCase,
    execute_case,
    execute_cases,
    result_from_json,
    schedule_limits,
)
from eaglegraph.probes.environment import run_environment
from eaglegraph.probes.preflight import preflight
from eaglegraph.probes.runner import Job, Outcome, run_task, run_tasks
from eaglegraph.probes.schedules import Limits, check_schedule, default_schedules
from eaglegraph.probes.spec import RunSpec
from eaglegraph.probes.stale_read import SGLANG_MODES, VLLM_MODES, build_findings, build_matrix
from eaglegraph.results.probe import CaseResult, ProbeRun
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.options import PROBE_MAX_NUM_SEQS, PlanChoices
from eaglegraph.rig.plan import CapturePlan, build_plan
from eaglegraph.rig.workload import LiveSchedule

PROBE_DEFAULT_SEQS = PROBE_MAX_NUM_SEQS  # padding bugs need only a few requests


@dataclass(frozen=True)
class ProbeRequest:
    """What `probe` was asked: the resolved run, the modes (`all` or names), the batches (None:
    every batch that pads), and how cases run (own processes, timeout, workers at once)."""

    spec: RunSpec
    modes: tuple[str, ...] = ("all",)
    batches: tuple[int, ...] | None = None
    isolate: bool = True
    timeout: float = 900.0
    workers: int | None = None
    # live-server schedules run per mode (None: the default set, `probes.schedules`)
    schedules: tuple[LiveSchedule, ...] | None = None

    @classmethod
    def for_model(
        cls,
        model: str,
        plan: PlanChoices,
        rig: Mapping[str, Any],
        *,
        pool: str | None = None,
        **options: Any,
    ) -> ProbeRequest:
        """Resolve the run with probe's own defaults: a few requests (padding bugs need only a
        few) and no torch.compile unless asked (stale reads do not depend on it, and each
        isolated case would compile again). `options`: the other fields."""
        from eaglegraph.probes.spec import resolve_run

        settings = dict(rig)
        if settings.get("compile_model") is None:
            settings["compile_model"] = False
        spec = resolve_run(
            model, plan=plan, pool=pool, default_max_num_seqs=PROBE_DEFAULT_SEQS, **settings
        )
        return cls(spec=spec, **options)

    def run(
        self,
        on_plan: Callable[[list[ProbeCase]], None] | None = None,
        on_case: Callable[[str, CaseResult | None], None] | None = None,
    ) -> ProbeRun:
        # the request's fields are `probe`'s own arguments, by name
        return probe(**vars(self), on_plan=on_plan, on_case=on_case)


def select_modes(modes: Sequence[str], framework: str) -> list[str]:
    allowed = SGLANG_MODES if framework == "sglang" else VLLM_MODES
    if not modes or any(m.lower() == "all" for m in modes):
        return list(allowed)
    out = []
    for m in modes:
        name = Mode.parse(m).name
        if name not in allowed:
            raise BadInput(
                f"mode {name} does not apply to {framework}; choose from {', '.join(allowed)}"
            )
        if name not in out:
            out.append(name)
    return out


def padding_batches(plan: CapturePlan, max_num_seqs: int) -> list[int]:
    """Request counts that make some phase pad: each capture size minus one (in requests),
    kept when a phase dispatches it to a larger descriptor, plus the smallest batch."""
    k1 = plan.num_speculative_tokens + 1
    candidates = {1}
    for phase in plan.phases:
        for d in phase.descriptors:
            reqs = (
                d.num_reqs
                if d.num_reqs is not None
                else d.num_tokens // (k1 if phase.phase != "draft_decode" else 1)
            )
            if 1 <= reqs - 1 < max_num_seqs:
                candidates.add(reqs - 1)
    padded = []
    for b in sorted(candidates):
        for phase in plan.phases:
            tokens = b * (k1 if phase.phase != "draft_decode" else 1)
            desc = phase.dispatcher().dispatch(
                b, tokens, k1 if phase.phase != "draft_decode" else 1
            )
            if desc.mode is not Mode.NONE and (
                desc.num_tokens > tokens or (desc.num_reqs or b) > b
            ):
                padded.append(b)
                break
    return padded or [1]


def live_schedules(
    spec: RunSpec,
    schedules: Sequence[LiveSchedule] | None = None,
    batches: Sequence[int] | None = None,
) -> tuple[LiveSchedule, ...]:
    """The live schedules a probe of `spec` runs: the given ones; else the default set, unless
    the probe was asked for given padded `batches` only. Each is checked against the run
    first: a bad one is refused in one line naming step and field."""
    o, limits = spec.options, schedule_limits(spec)
    if schedules is None:  # the default set: those that fit the run (none when it is tiny)
        defaults = (
            ()
            if batches
            else default_schedules(
                o.max_num_seqs, o.num_speculative_tokens, limits.block_size, limits.max_model_len
            )
        )
        return tuple(s for s in defaults if _fits(s, limits))
    for schedule in schedules:
        check_schedule(schedule, limits)
    return tuple(schedules)


def _fits(schedule: LiveSchedule, limits: Limits) -> bool:
    try:
        check_schedule(schedule, limits)
    except BadInput:
        return False
    return True


def plan_cases(
    spec: RunSpec,
    modes: Sequence[str],
    batches: Sequence[int] | None = None,
    schedules: Sequence[LiveSchedule] | None = None,
) -> list[ProbeCase]:
    """One case per (mode, batch): the given batches, or every batch that pads under the mode;
    and one per (mode, live schedule)."""
    seqs = spec.options.max_num_seqs
    live = live_schedules(spec, schedules, batches)
    cases = []
    selected = select_modes(modes, spec.options.framework)
    # a schedule probed once runs in the run's own mode, else in the last one selected
    own = spec.options.mode.name if spec.options.mode.name in selected else selected[-1]
    for mode in selected:
        case_spec = spec.with_mode(mode)
        wanted = batches or padding_batches(build_plan(case_spec.options), seqs)
        for b in wanted:
            if not 1 <= b < seqs:
                raise BadInput(f"--batches {b}: must be between 1 and max_num_seqs-1 ({seqs - 1})")
            cases.append(ProbeCase(f"{mode.lower()}-b{b}", case_spec, large=seqs, batch=b))
        for schedule in live:
            if schedule.once and mode != own:
                continue
            most = max(len(_running_sizes(schedule)), 1)
            cases.append(
                ProbeCase(f"{mode.lower()}-{schedule.name}", case_spec, seqs, most, schedule)
            )
    return cases


def _running_sizes(schedule: LiveSchedule) -> set[int]:
    """The request ids a schedule ever runs (its case's `batch` is how many)."""
    return {a.rid for s in schedule.steps for a in s.arrive}


def run_case(
    case: ProbeCase, isolate: bool = True, timeout: float = 900.0, sync: bool = False
) -> CaseResult:
    """One case through the isolation runner; a dead or hung worker becomes its result,
    named by the checkpoint it left. `sync`: pin an asynchronous fault to its kernel (a
    crashed case's rerun)."""
    if not isolate:
        return execute_case(case)
    with tempfile.TemporaryDirectory(prefix="eaglegraph-case-") as tmp:
        path = _checkpoint_file(Path(tmp), 0)
        args = {**case.to_json(), "checkpoint": path, "sync": sync}
        outcome = run_task("probe-case", args, name=case.name, timeout=timeout)
        return _case_result(case, outcome, path)


def _checkpoint_file(folder: Path, index: int) -> str:
    path = folder / f"checkpoint-{index}"
    path.touch()
    return str(path)


def _case_result(case: ProbeCase, outcome: Outcome, checkpoint: str | None = None) -> CaseResult:
    if outcome.status == "ok":
        return result_from_json(outcome.value)
    where = breadcrumbs.read(checkpoint) if checkpoint else None
    return CaseResult(
        case.name,
        case.mode,
        case.batch,
        case.large,
        "timeout" if outcome.status == "timeout" else "crash",
        outcome.duration_s,
        error=outcome.error,
        stderr=outcome.stderr,
        checkpoint=where,
    )


def by_mode(cases: Sequence[ProbeCase]) -> list[list[ProbeCase]]:
    """The cases of each spec (mode and runner flags: BREAKABLE is FULL_AND_PIECEWISE with a
    flag) together — one rig, captured once, serves them all — the groups with the most
    cases first so parallel workers finish together."""
    groups: dict[str, list[ProbeCase]] = {}
    for case in cases:
        key = json.dumps(case.spec.to_json(), sort_keys=True)
        groups.setdefault(key, []).append(case)
    return sorted(groups.values(), key=len, reverse=True)


def default_workers(device: str) -> int:
    """One worker per CPU core the process may use (each runs one thread); on a GPU at most
    four, so their contexts stay small next to the graphs they capture."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(cores or 1, 4 if device == "cuda" else cores or 1))


def run_cases(
    cases: Sequence[ProbeCase],
    *,
    isolate: bool = True,
    timeout: float = 900.0,
    workers: int | None = None,
    on_case: Callable[[str, CaseResult | None], None] | None = None,
) -> list[CaseResult]:
    """Every case, in plan order. Isolated: one worker per mode, modes in parallel; a worker
    that dies or hangs has its cases rerun one per worker, so the fault is pinned to one."""
    groups = by_mode(cases)
    results: dict[str, CaseResult] = {}

    def done(result: CaseResult) -> None:
        results[result.name] = result
        if on_case is not None:
            on_case(result.name, result)

    if not isolate:
        for group in groups:
            for case in group:
                if on_case is not None:
                    on_case(case.name, None)
            for result in execute_cases(group):
                done(result)
        return [results[c.name] for c in cases]
    failed: list[list[ProbeCase]] = []
    with tempfile.TemporaryDirectory(prefix="eaglegraph-probe-") as tmp:
        files = [_checkpoint_file(Path(tmp), i) for i in range(len(groups))]
        jobs = [
            Job("probe-cases", {"cases": [c.to_json() for c in group], "checkpoint": files[i]},
                ",".join(c.name for c in group), timeout * len(group))
            for i, group in enumerate(groups)
        ]  # fmt: skip

        def finished(i: int, outcome: Outcome) -> None:
            group = groups[i]
            if outcome.status != "ok":
                # on a GPU a fault surfaces asynchronously: the case reruns alone, synchronising
                # before each launch, so its checkpoint names the kernel that faulted
                exact = outcome.status == "timeout" or group[0].spec.device != "cuda"
                if len(group) == 1 and exact:
                    done(_case_result(group[0], outcome, files[i]))
                else:
                    failed.append(group)
                return
            for data in outcome.value["results"]:
                result = result_from_json(data)
                if result.status == "error" and group[0].spec.device == "cuda":
                    # a device fault leaves the context unusable for the cases after it, and
                    # surfaces late: each such case reruns alone, synchronising each launch
                    failed.append([c for c in group if c.name == result.name])
                else:
                    done(result)

        if on_case is not None:
            for case in cases:
                on_case(case.name, None)
        run_tasks(jobs, workers=workers or default_workers(cases[0].spec.device), on_done=finished)
    for group in failed:
        for case in group:
            done(run_case(case, True, timeout, sync=case.spec.device == "cuda"))
    return [results[c.name] for c in cases]


def probe(
    spec: RunSpec,
    *,
    modes: Sequence[str] = ("all",),
    batches: Sequence[int] | None = None,
    isolate: bool = True,
    timeout: float = 900.0,
    workers: int | None = None,
    schedules: Sequence[LiveSchedule] | None = None,
    on_plan: Callable[[list[ProbeCase]], None] | None = None,
    on_case: Callable[[str, CaseResult | None], None] | None = None,
) -> ProbeRun:
    """Probe every (mode, padded batch) of `spec`; `on_plan` sees the cases before any runs.
    `workers`: worker processes at once (default: `default_workers`).

    Input that cannot be built (no weights without random_weights, an unsupported draft kind)
    and a non-positive timeout are refused here, before any worker starts, so they never turn
    into "crash" findings."""
    if not timeout > 0:
        raise BadInput(f"timeout must be a positive number of seconds, got {timeout}")
    if workers is not None and workers < 1:
        raise BadInput(f"--workers must be at least 1, got {workers}")
    live = live_schedules(spec, schedules, batches)  # a bad one is refused before any work
    preflight(spec.open_pair(), spec.rig_config())  # what each worker would build
    start = time.perf_counter()
    cases = plan_cases(spec, modes, batches, live)
    if on_plan is not None:
        on_plan(cases)
    workers = workers or default_workers(spec.device)
    results = run_cases(cases, isolate=isolate, timeout=timeout, workers=workers, on_case=on_case)
    o = spec.options
    return ProbeRun(
        config={
            "model": spec.model,
            "framework": o.framework,
            "behavior": o.behavior.name,
            "runner": o.runner,
            "runner_why": o.runner_why,
            "attention_backend": o.attention_backend,
            "modes": list(dict.fromkeys(c.mode for c in cases)),
            "num_speculative_tokens": o.num_speculative_tokens,
            "max_num_seqs": o.max_num_seqs,
            "pool": spec.resolved_pool,
            "batches": list(batches) if batches else "padding",
            "schedules": [s.name for s in live],
            "device": spec.device,
            # worker processes at once (isolated runs; one process otherwise)
            "workers": workers if isolate else 1,
        },
        environment=run_environment(torch.device(spec.device)),
        backend=spec.backend,
        cases=results,
        findings=build_findings(results),
        matrix=build_matrix(results),
        duration_s=time.perf_counter() - start,
        isolated=isolate,
        reference_compares=next((c.compared for c in results if c.compared), []),
    )
