"""Output files, declared once: every format a run can be written as, in one registry.

An exporter names its option (`--html`), the run types it can render and the function that
turns a run into the file's text; the CLI offers each exporter on every command whose result
it renders (`cli/outputs.py`), checks every path before the work and writes them atomically
after it. A new format is one module that defines an `Exporter` plus its name in `_MODULES`.
Exporters render what the result holds; none computes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# The modules that define an `EXPORTER`, in the order their options are listed.
_MODULES = (
    "eaglegraph.reports.runfile",
    "eaglegraph.reports.html",
    "eaglegraph.reports.trace",
    "eaglegraph.reports.snapshot",
    "eaglegraph.reports.markdown",
)


@dataclass(frozen=True)
class Exporter:
    """One output format. `render` is None for a file the run itself writes while it works
    (the allocator snapshot): its path is checked like every other, then handed to the run."""

    name: str  # the option's name without dashes: `--html` is "html"
    help: str
    kinds: tuple[type, ...]  # the run types it renders
    render: Callable[[Any], str | bytes] | None
    # `report` re-renders saved runs: a format that only a live run can produce (the snapshot)
    # or that would copy the input (the run file) is not offered there
    rerender: bool = True
    # why a saved run of another kind cannot be written this way, and what to use instead
    unsupported: str = "this format cannot show it"
    instead: str | None = None

    @property
    def option(self) -> str:
        return f"--{self.name}"

    def renders(self, run: Any) -> bool:
        return isinstance(run, self.kinds)


def exporters() -> list[Exporter]:
    """Every registered format (each module imported on first use)."""
    return [importlib.import_module(m).EXPORTER for m in _MODULES]


def exporters_for(kinds: tuple[type, ...], *, rerender: bool = False) -> list[Exporter]:
    """The formats that render at least one of `kinds` (a command's possible results);
    `rerender`: only those `report` offers for a saved run."""
    return [
        e
        for e in exporters()
        if any(issubclass(k, e.kinds) for k in kinds) and (e.rerender or not rerender)
    ]
