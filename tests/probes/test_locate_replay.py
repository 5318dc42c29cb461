"""Findings that locate (issue 27): a divergence the end-of-step compare confirms is replayed
from the step's start, and the phase and kernel that last wrote the value are named.

The compare names the writer it expects (the target's write_kv for target K/V, the target
forward for hidden rows); a later phase that overwrites the value must be named instead. The
replay's bookkeeping is checked on a small stand-in step (no model: fast, every outcome); the
probe itself on two planted bugs of benchmarks/mutants.py and on the unmutated rig.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from benchmarks.mutants import by_name, planted
from eaglegraph.kernels import launch as kernel_launch
from eaglegraph.probes.locate import Hit, Site, locate
from eaglegraph.probes.spec import resolve_run
from eaglegraph.results.probe import ReferenceDivergence
from eaglegraph.rig.hooks import StepHooks
from tests.probes.shared_runs import clean_eager_run


class _Kernel:
    """Stands in for a Triton kernel: `kernel[grid](*args)` runs `body(*args)`."""

    def __init__(self, name: str, body: Callable[..., None]) -> None:
        self.__name__ = name
        self.body = body

    def __getitem__(self, grid: tuple[int, ...]) -> Callable[..., None]:
        return lambda *args, **constexprs: self.body(*args)


def _store(buf: torch.Tensor, row: int, value: float) -> None:
    buf[row] = value


WRITE = _Kernel("_write_kv_kernel", _store)
CLOBBER = _Kernel("_clobber_kernel", _store)


def _right(buf: torch.Tensor) -> None:
    kernel_launch.launch(WRITE, (1,), buf, 0, 1.0)


def _nothing(buf: torch.Tensor) -> None:
    return None


class _Step(StepHooks):
    """A two-phase step over one buffer: `target` runs in the target's forward (by default its
    write_kv writes row 0 right, 1.0), then `draft` inside the draft prefill."""

    def __init__(
        self,
        draft: Callable[[torch.Tensor], None],
        target: Callable[[torch.Tensor], None] = _right,
    ) -> None:
        super().__init__()
        self.buf = torch.zeros(4)
        self.draft, self.target = draft, target
        self.guard_log = None

    def step(self, batch: list[Any]) -> None:
        self.mark("target", 0, "prepare")
        self.mark("target", 0, "launch")
        self.target(self.buf)
        self.phase_done("target")
        self.mark("draft_prefill", 0, "prepare")
        self.mark("draft_prefill", 0, "launch")
        self.draft(self.buf)
        self.phase_done("draft_prefill")


def _locate(step: _Step) -> ReferenceDivergence:
    """Run the step once, then locate its divergence in row 0 (the reference wants 1.0)."""
    start = step.buf.clone()
    step.step([])
    left = step.buf.clone()
    d = ReferenceDivergence(0, "target", 0, "kv_cache", "write_kv", "row 0", "?", "1.0")
    hit = Hit(d, Site(step.buf, (0,), torch.tensor(1.0), tol=1e-3))
    out = locate(step, [], hit, lambda: step.buf.copy_(start), lambda: step.buf.copy_(left))  # type: ignore[arg-type]
    assert torch.equal(step.buf, left), "the state the step left is put back"
    assert kernel_launch.on_launch is None and kernel_launch.after_launch is None
    assert not step._phase and not step._launch, "the replay's hooks are removed"
    return out


def test_a_later_kernel_overwriting_the_value_is_named() -> None:
    d = _locate(_Step(lambda buf: kernel_launch.launch(CLOBBER, (1,), buf, 0, 7.0)))
    assert (d.phase, d.kernel, d.buffer, d.location) == (
        "draft_prefill", "clobber", "kv_cache", "kernel",
    )  # fmt: skip
    assert "where the compare expects write_kv in target" in (d.location_note or "")


def test_torch_ops_after_a_kernel_of_a_later_phase_are_named_as_such() -> None:
    def draft(buf: torch.Tensor) -> None:
        kernel_launch.launch(CLOBBER, (1,), buf, 1, 5.0)  # writes another row
        buf[0] = -1.0  # then a torch op overwrites the compared one

    d = _locate(_Step(draft))
    assert (d.phase, d.kernel, d.location) == (
        "draft_prefill", "torch ops after clobber", "phase",
    )  # fmt: skip


def test_a_wrong_write_by_the_expected_kernel_keeps_the_compared_names() -> None:
    wrong = _Kernel("_write_kv_kernel", lambda buf, row, value: _store(buf, row, value + 1))
    d = _locate(_Step(_nothing, target=lambda buf: kernel_launch.launch(wrong, (1,), buf, 0, 1.0)))
    assert (d.phase, d.kernel, d.location) == ("target", "write_kv", "kernel"), d
    assert "where the compare expects" not in (d.location_note or ""), d


def test_torch_ops_of_the_expected_phase_keep_the_compared_kernel() -> None:
    """Between kernels the replay cannot name an op; in the compare's phase the compare's
    name for it (the op it knows computes the value) stands."""

    def target(buf: torch.Tensor) -> None:
        _right(buf)
        buf[0] = 3.0

    d = _locate(_Step(_nothing, target=target))
    assert (d.phase, d.kernel, d.location) == ("target", "write_kv", "phase"), d


def test_a_value_left_right_is_not_located() -> None:
    step = _Step(_nothing)
    d = _locate(step)  # row 0 ends at 1.0: what the reference wants
    assert d.location == "unreproduced" and (d.phase, d.kernel) == ("target", "write_kv"), d


def test_a_value_no_kernel_wrote_keeps_the_compared_writer() -> None:
    d = _locate(_Step(_nothing, target=_nothing))
    assert (d.phase, d.kernel, d.location) == ("target", "write_kv", "unwritten"), d


def test_a_replay_that_ends_elsewhere_is_not_located() -> None:
    """A bug keeping host state between calls (here: a counter) may not replay the same."""
    calls = {"n": 0}

    def draft(buf: torch.Tensor) -> None:
        calls["n"] += 1
        buf[0] = float(calls["n"] + 1)

    d = _locate(_Step(draft))
    assert (d.phase, d.kernel, d.location) == ("target", "write_kv", "unreproduced"), d


def test_a_replay_that_fails_keeps_the_finding_as_compared() -> None:
    calls = {"n": 0}

    def draft(buf: torch.Tensor) -> None:
        calls["n"] += 1
        if calls["n"] > 1:
            raise RuntimeError("host state the first run used up")
        buf[0] = 2.0

    d = _locate(_Step(draft))
    assert (d.phase, d.kernel, d.location) == ("target", "write_kv", "unreproduced"), d
    assert "RuntimeError" in (d.location_note or ""), d


# ---------------------------------------------------------------- the probe, planted bugs


@pytest.mark.parametrize(
    ("name", "buffer", "kernel"),
    [
        # a draft layer's K/V written into the first target layer: the target's K/V rows
        # are overwritten by the draft prefill's write_kv
        ("draft-kv-into-target-layer", "kv_cache", "write_kv"),
        # the hidden rows shifted in place by the draft prefill's input preparation
        ("draft-shifts-hidden-in-place", "target.hidden", "torch ops after prepare_eagle_inputs"),
    ],
)
def test_a_later_phase_corrupting_a_buffer_is_located(name: str, buffer: str, kernel: str) -> None:
    mutant = by_name(name)
    spec = resolve_run(
        mutant.preset,
        plan={"attention_backend": mutant.backend, "max_num_seqs": 4,
              "num_speculative_tokens": 3, "capture_sizes": (4, 16)},
        device="cpu", max_model_len=256,
    )  # fmt: skip
    from eaglegraph.probes.probing import probe

    with planted(mutant):  # the padded case alone: the bug shows in its first step
        run = probe(spec, modes=["NONE"], batches=[3], isolate=False, timeout=600)
    assert [c.status for c in run.cases] == ["ok"], run.cases[0].stderr
    ref = [f for f in run.findings if f.kind == "reference-divergence"]
    assert ref, [f.id for f in run.findings]
    f = ref[0]
    assert (f.phase, f.buffer, f.kernel) == (mutant.phase, buffer, kernel), f
    assert "replayed: last written by" in (f.evidence or ""), f.evidence
    d = run.cases[0].divergence
    assert d is not None and d.location in ("kernel", "phase"), d


def test_the_unmutated_rig_has_no_finding_under_the_live_schedules() -> None:
    """Nothing corrupted: no divergence to locate, and no finding at all (the default live
    schedules and the padded case, eager). The run is the one `test_identity_live` reads too
    (`shared_runs.clean_eager_run`), probed once per test process."""
    run = clean_eager_run()
    assert {c.schedule for c in run.cases} >= {None, "live"}, [c.name for c in run.cases]
    assert all(c.status == "ok" for c in run.cases), [c.error for c in run.cases]
    assert not [c.divergence for c in run.cases if c.divergence is not None]
    assert not run.findings, [f"{f.id}: {f.message}" for f in run.findings]
