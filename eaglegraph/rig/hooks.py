"""Hooks into a step, registered as torch registers module hooks: each `add_*` returns a handle
whose `remove()` takes the hook out again (also as a context manager), so a caller never
assigns attributes of the rig and two callers never overwrite each other.

Two points of a step are observable:
- phase hooks, called as `fn(phase)` once a phase is done (the probe reads the guard log and
  checks the phase's invariants there);
- launch hooks, called as `fn(phase, draft_step, what)` with `what` "prepare" where a phase's
  input preparation starts and "launch" right before its graph or kernels run (the probe's
  breadcrumbs, and the checks it must finish before a bad slot or index reaches a kernel).

Cost with no hook registered: one empty-dict test per call site, a handful per step.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Literal

PhaseHook = Callable[[str], None]
Launch = Literal["prepare", "launch"]
LaunchHook = Callable[[str, int, str], None]

_ids = itertools.count()


class HookHandle:
    """Removes the hook it was returned for; removing twice is harmless."""

    def __init__(self, hooks: dict[int, Callable[..., None]]) -> None:
        self._hooks = hooks
        self.id = next(_ids)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self) -> HookHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


class StepHooks:
    """The hooks registered on one rig, called in registration order."""

    def __init__(self) -> None:
        self._phase: dict[int, Callable[..., None]] = {}
        self._launch: dict[int, Callable[..., None]] = {}

    def add_phase_hook(self, fn: PhaseHook) -> HookHandle:
        return self._add(self._phase, fn)

    def add_launch_hook(self, fn: LaunchHook) -> HookHandle:
        return self._add(self._launch, fn)

    @staticmethod
    def _add(hooks: dict[int, Callable[..., None]], fn: Callable[..., None]) -> HookHandle:
        handle = HookHandle(hooks)
        hooks[handle.id] = fn
        return handle

    def phase_done(self, phase: str) -> None:
        if self._phase:
            for fn in list(self._phase.values()):
                fn(phase)

    def mark(self, phase: str, draft_step: int, what: Launch) -> None:
        if self._launch:
            for fn in list(self._launch.values()):
                fn(phase, draft_step, what)
