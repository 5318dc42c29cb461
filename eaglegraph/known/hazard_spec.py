"""What a hazard declares when it sits on the engine flag whose off state reproduces it.

A flag row in `known.profiles` can carry its hazard (`Flag.hazard`); `known.hazards` turns it
into a `Hazard` with the flag's engine, its change as the fix and its name as `flag`, so the
three facts of one behaviour change are written in one row. This type sits below the profiles
because `Hazard` itself looks its fix up in the registry of `known.upstream`, above them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HazardSpec:
    id: str
    mechanism: str
    fix: str | None = None  # what the flag's upstream change does
    workaround: str | None = None  # what to do without (or before) that change
    refs: tuple[str, ...] = ()  # issues and related changes, beside the flag's own
    ref_note: str | None = None
    # Probe observations of this hazard: (buffer name suffix, phase or None for any phase).
    buffers: tuple[tuple[str, str | None], ...] = ()
