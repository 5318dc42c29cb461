"""Findings that locate (issue 27): replay a diverging step and name what left the wrong value.

The end-of-step compare (`reference_diff`) names the first value, in dataflow order, that
differs from the dense reference, and the phase and kernel that compute that value. A later
phase that overwrites it — a draft kernel writing into a target K/V row, a draft input
preparation shifting the hidden rows in place — would then be blamed on the writer the
compare expects. So once a step's divergence is confirmed, the step is replayed from the
state it started in, reading the diverging value at every boundary the rig exposes: each
phase's hooks (`rig.add_launch_hook`, `rig.add_phase_hook`) and, where kernels launch from
Python (eager steps, and every emulated replay on CPU), the start and the end of each Triton
launch (`kernels.launch.on_launch`, `after_launch`). The segment in which the value last
changed is the one that left it wrong: its phase, and the kernel when it changed inside one
(`location` "kernel"), go into the divergence. A change in the torch or host ops between
kernels keeps the compare's name for the op where the phase is the compare's (it knows which
op computes the value: "greedy_verify", "target forward"), and names the ops otherwise
(`location` "phase"). Inside a CUDA graph replay kernels launch without Python, so there a
segment is a whole phase's graph.

A value no segment changed was never written in the step (a skipped write): the compare's
writer stands (`location` "unwritten"). A replay that does not end with the value the step
left (a bug keeping host state between calls) leaves the compare's naming too, and says so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import torch

from eaglegraph.kernels import launch as kernel_launch
from eaglegraph.kernels.guard import GuardArgs
from eaglegraph.probes.checkpoint import kernel_name
from eaglegraph.results.probe import ReferenceDivergence as Divergence
from eaglegraph.rig.workload import ScheduledRequest

if TYPE_CHECKING:
    from eaglegraph.rig.step import Rig


@dataclass(frozen=True)
class Site:
    """One compared value in the rig's state: where it lives and what the reference computed
    for it (`tol` 0: exact)."""

    tensor: torch.Tensor
    index: tuple[int, ...]
    want: torch.Tensor
    tol: float = 0.0

    def read(self) -> torch.Tensor:
        return self.tensor[self.index].detach().clone()

    def wrong(self, value: torch.Tensor) -> bool:
        want = self.want.to(value.device).float().reshape(value.shape)
        close = torch.isclose(value.float(), want, atol=self.tol, rtol=self.tol)
        return not bool(close.all())


@dataclass(frozen=True)
class Hit:
    """A divergence the end-of-step compare found, and the value it found it in."""

    divergence: Divergence
    site: Site


@dataclass(frozen=True)
class Segment:
    """A stretch of the step between two boundaries: the phase it is in and what runs in it
    (a kernel's name, or the part of a phase a hook opens); `kernel_level` when it starts at a
    Triton launch."""

    phase: str
    kernel: str
    draft_step: int
    kernel_level: bool


def _recording() -> bool:
    """Whether a CUDA graph is recording (nothing may be read back then)."""
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equality (a NaN equals the same NaN)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8)))


class Timeline:
    """The value of one site at each boundary of a replayed step, and the segment before it."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.values = [site.read()]
        self.segments: list[Segment] = []
        self.open = Segment("target", "target input preparation", 0, False)

    def boundary(self, starts: Segment) -> None:
        """The open segment ends here; `starts` begins."""
        self.segments.append(self.open)
        self.values.append(self.site.read())
        self.open = starts

    def end(self) -> None:
        self.segments.append(self.open)
        self.values.append(self.site.read())

    def launch_hook(self, phase: str, draft_step: int, what: str) -> None:
        part = "input preparation" if what == "prepare" else "forward"
        self.boundary(Segment(phase, f"{phase} {part}", draft_step, False))

    def phase_hook(self, phase: str) -> None:
        self.boundary(Segment(phase, f"host/torch ops after {phase}", self.open.draft_step, False))

    def kernel_hook(self, kernel: Any, guard: GuardArgs | None) -> None:
        if _recording():
            return
        o = self.open
        self.boundary(Segment(o.phase, kernel_name(kernel, guard), o.draft_step, True))

    def kernel_done(self, kernel: Any) -> None:
        o = self.open
        if _recording() or not o.kernel_level:
            return
        self.boundary(Segment(o.phase, f"torch ops after {o.kernel}", o.draft_step, False))

    def last_write(self) -> Segment | None:
        """The segment in which the value last changed (None: no segment changed it)."""
        for i in range(len(self.segments) - 1, -1, -1):
            if not _same(self.values[i], self.values[i + 1]):
                return self.segments[i]
        return None


@contextmanager
def _kernels_into(timeline: Timeline) -> Iterator[None]:
    """Every Triton launch a boundary of `timeline`, after whatever hook was set before."""
    previous, after = kernel_launch.on_launch, kernel_launch.after_launch

    def hook(kernel: Any, guard: GuardArgs | None) -> None:
        if previous is not None:
            previous(kernel, guard)
        timeline.kernel_hook(kernel, guard)

    def done(kernel: Any) -> None:
        if after is not None:
            after(kernel)
        timeline.kernel_done(kernel)

    kernel_launch.on_launch, kernel_launch.after_launch = hook, done
    try:
        yield
    finally:
        kernel_launch.on_launch, kernel_launch.after_launch = previous, after


def replay(
    rig: Rig, batch: list[ScheduledRequest], site: Site, start: Callable[[], object]
) -> Timeline:
    """The step over `batch` again from `start()` (which restores the state it began in),
    `site` read at every boundary."""
    start()
    timeline = Timeline(site)
    with (
        rig.add_launch_hook(timeline.launch_hook),
        rig.add_phase_hook(timeline.phase_hook),
        _kernels_into(timeline),
    ):
        rig.step(batch)
    timeline.end()
    return timeline


def locate(
    rig: Rig,
    batch: list[ScheduledRequest],
    hit: Hit,
    start: Callable[[], object],
    end: Callable[[], object],
) -> Divergence:
    """`hit`'s divergence with the phase and kernel that last wrote its value, found by
    replaying the step from `start()`; `end()` then puts back the state the step left (so
    later steps run as if nothing was replayed) and the guard log is emptied of the replay's
    reads."""
    d, site = hit.divergence, hit.site
    left = site.read()
    where = f"{d.kernel} in {d.phase}"
    try:
        timeline = replay(rig, batch, site, start)
    except Exception as exc:  # the finding stands as compared; the replay's failure is told
        note = f"the replay of the step failed ({type(exc).__name__}: {exc}); named as compared"
        return replace(d, location="unreproduced", location_note=f"{note} ({where})")
    finally:
        end()
        if rig.guard_log is not None:
            rig.guard_log.reset()
    if not _same(timeline.values[-1], left):
        note = f"the replay of the step did not leave the same value; named as compared ({where})"
        return replace(d, location="unreproduced", location_note=note)
    if not site.wrong(left):
        note = f"the value the step left matches the reference; named as compared ({where})"
        return replace(d, location="unreproduced", location_note=note)
    seg = timeline.last_write()
    if seg is None:
        note = f"no kernel of the step wrote this value: the write {where} should make was skipped"
        return replace(d, location="unwritten", location_note=note)
    kernel = seg.kernel if seg.kernel_level or seg.phase != d.phase else d.kernel
    step = f" (draft step {seg.draft_step})" if seg.phase == "draft_decode" else ""
    same = (seg.phase, kernel) == (d.phase, d.kernel)
    note = f"replayed: last written by {kernel} in {seg.phase}{step}" + (
        "" if same else f", where the compare expects {where}"
    )
    where_found = "kernel" if seg.kernel_level else "phase"
    return replace(d, phase=seg.phase, kernel=kernel, location=where_found, location_note=note)
