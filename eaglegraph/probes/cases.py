"""Probe cases: one (mode, batch) each, run in a fresh worker process or in-process.

A case builds the rig with guards on, captures its graphs, dirties every buffer with a large
batch, shrinks the batch (the real trigger of stale padding), snapshots all device state, and
then runs the probed step twice — once per sentinel — poisoning every padding region and every
unowned KV block first. It returns what the guards logged per phase, which padding regions
were still poisoned afterwards, which valid outputs differed between the two runs or turned
NaN, and which canary blocks were written.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from eaglegraph.kernels.poison import poison, scan
from eaglegraph.probes.poisoning import canary_regions, padding_regions, table
from eaglegraph.probes.spec import RunSpec
from eaglegraph.results.codec import decode
from eaglegraph.results.probe import CanaryHit, CaseResult, GuardViolation, PaddingRegion
from eaglegraph.rig.buffers import StepCounts
from eaglegraph.rig.driver import Session
from eaglegraph.rig.kv_cache import NULL_BLOCK
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.step import Rig


@dataclass(frozen=True)
class ProbeCase:
    """One (mode, batch): the run's spec under that mode, dirtied at `large` requests and
    probed at `batch`."""

    name: str
    spec: RunSpec
    large: int
    batch: int

    @property
    def mode(self) -> str:
        return self.spec.options.mode.name

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "spec": self.spec.to_json(),
            "large": self.large,
            "batch": self.batch,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProbeCase:
        return cls(data["name"], RunSpec.from_json(data["spec"]), data["large"], data["batch"])


def _bits(t: torch.Tensor) -> torch.Tensor:
    """Bitwise view for comparisons that treat NaN payloads as values."""
    width = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.contiguous().view(width)


class _Snapshot:
    """Every device tensor the probed step reads or writes, cloned so runs A and B start equal."""

    def __init__(self, rig: Rig) -> None:
        self.tensors = [b.tensor for b in rig.registry] + [c for kv in rig.kv_caches for c in kv]
        self.saved = [t.clone() for t in self.tensors]

    def restore(self) -> None:
        for t, s in zip(self.tensors, self.saved, strict=True):
            t.copy_(s)


def _prompts(count: int, vocab: int, seed: int = 7) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(3, vocab, size=5 + i % 4).tolist() for i in range(count)]


def case_task(args: dict[str, Any]) -> dict[str, Any]:
    """The runner's "probe-case" task: a case as JSON in, its result as JSON out."""
    return result_to_json(execute_case(ProbeCase.from_json(args)))


def execute_case(case: ProbeCase) -> CaseResult:
    start = time.perf_counter()
    try:
        return _execute(case, start)
    except Exception as exc:
        return CaseResult(
            case.name, case.mode, case.batch, case.large, "error", time.perf_counter() - start,
            error=f"{type(exc).__name__}: {exc}", stderr=traceback.format_exc()[-4000:],
        )  # fmt: skip


def _execute(case: ProbeCase, start: float) -> CaseResult:
    pair = case.spec.open_pair()
    config = case.spec.rig_config(guard=True)
    rig = Rig(pair, config)
    mode = config.options.mode
    if mode is not Mode.NONE:
        rig.capture(case.spec.pool)
    assert rig.guard_log is not None
    session = Session(rig)
    for rid, prompt in enumerate(_prompts(case.large, rig.vocab_size)):
        session.admit(rid, prompt, max_new_tokens=64)
    session.step()  # prefill at the large batch
    session.step()  # a verify step at the large batch: every buffer now holds its values
    for request in list(session.running[case.batch :]):
        session.finish(request)  # the batch shrinks right after the large one
    batch = session.batch()
    k = rig.num_speculative_tokens
    tokens = sum(len(b.query) for b in batch)
    counts = {
        "target": StepCounts(len(batch), tokens),
        "draft_prefill": StepCounts(len(batch), tokens),
        "draft_decode": StepCounts(len(batch), len(batch) if k > 1 else 0),
    }
    snapshot = _Snapshot(rig)
    owned = sorted({blk for r in session.running for blk in r.blocks})
    unowned = [b for b in rig.allocator.unowned_blocks() if b != NULL_BLOCK]
    result = CaseResult(
        case.name, mode.name, case.batch, case.large, "ok", 0.0,
        counts={p: [c.num_reqs, c.num_tokens] for p, c in counts.items()},
    )  # fmt: skip
    outputs: dict[str, dict[str, torch.Tensor | list[Any]]] = {}
    scans: dict[str, list[int]] = {}
    regions_a = padding_regions(list(rig.registry), counts, "A")
    for run in ("A", "B"):
        snapshot.restore()
        regions = padding_regions(list(rig.registry), counts, run)
        canaries = canary_regions(rig.kv_caches, unowned)
        tab = table([r.region for r in regions] + [c for _, c in canaries], config.device)
        poison(tab)
        rig.guard_log.reset()

        def collect(phase: str, run: str = run) -> None:
            for v in rig.guard_log.read():  # type: ignore[union-attr]
                buf = rig.registry.by_id(v.buffer_id)
                result.violations.append(
                    GuardViolation(
                        run=run, phase=phase, kernel=v.kernel,
                        buffer=buf.name if buf else f"id {v.buffer_id}",
                        row=int(v.row), value=int(v.value),
                    )
                )  # fmt: skip
            rig.guard_log.reset()  # type: ignore[union-attr]

        rig.phase_hook = collect
        try:
            out = rig.step(batch)
        finally:
            rig.phase_hook = None
        remaining = scan(tab).tolist()
        scans[run] = remaining
        result.descriptors = dict(out.descriptors)
        valid_kv = [torch.stack([c[owned] for c in kv]) for kv in rig.kv_caches] if owned else []
        outputs[run] = {
            "next tokens": out.next_tokens,
            "accepted counts": out.num_accepted,
            "draft tokens": out.draft_tokens,
            "target hidden rows": rig.bufs.target_hidden[:tokens].clone(),
            "draft hidden rows": rig.bufs.eagle_hidden[: len(batch)].clone(),
            "KV of owned blocks": torch.cat([t.flatten() for t in valid_kv])
            if valid_kv
            else torch.zeros(0),
        }
        if run == "A":
            for name, value in outputs[run].items():
                if (
                    isinstance(value, torch.Tensor)
                    and value.is_floating_point()
                    and bool(torch.isnan(value).any())
                ):
                    result.nan_outputs.append(name)
            n_regions = len(regions)
            for (first_block, region), left in zip(canaries, remaining[n_regions:], strict=True):
                if left < region.length:
                    result.canaries.append(
                        CanaryHit(
                            first_block=first_block,
                            elements=region.length,
                            written=region.length - left,
                        )
                    )
    for name, a in outputs["A"].items():
        b = outputs["B"][name]
        same = bool(torch.equal(_bits(a), _bits(b))) if isinstance(a, torch.Tensor) else a == b
        if not same:
            result.differential.append(name)
    for i, region in enumerate(regions_a):
        result.regions.append(
            PaddingRegion(
                buffer=region.buffer.name, phase=region.buffer.phase,
                extent=region.buffer.extent, first_row=region.first_row,
                rows=region.rows, elements=region.region.length,
                poisoned_after_a=scans["A"][i], poisoned_after_b=scans["B"][i],
            )
        )  # fmt: skip
    result.duration_s = time.perf_counter() - start
    return result


def result_to_json(result: CaseResult) -> dict[str, Any]:
    return asdict(result)


def result_from_json(data: dict[str, Any]) -> CaseResult:
    return decode(CaseResult, data, "probe worker result")
