"""Saved runs on screen: pick the terminal view that matches a run's kind.

Loading is `results`' job (one registry, one loader); this module only maps each run type
to its renderer, so `report`, `--html` and the commands themselves draw a run the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console

from eaglegraph.results.capture import CaptureRun
from eaglegraph.results.env import EnvReport
from eaglegraph.results.inspect import InspectReport
from eaglegraph.results.memdiff import MemdiffRun
from eaglegraph.results.probe import ProbeRun
from eaglegraph.results.scaffold import PresetList, ScaffoldResult
from eaglegraph.results.stacks import StacksReport
from eaglegraph.results.triage import TriageResult


def renderer_for(run: Any) -> Callable[[Any, Console], None]:
    """The terminal view of a run's kind (imported lazily: each pulls in only its own view)."""
    if isinstance(run, InspectReport):
        from eaglegraph.reports.inspect_view import render_inspect

        return render_inspect
    if isinstance(run, MemdiffRun):
        from eaglegraph.reports.memdiff_view import render_memdiff

        return render_memdiff
    if isinstance(run, CaptureRun):
        from eaglegraph.reports.capture_view import render_capture

        return render_capture
    if isinstance(run, ProbeRun):
        from eaglegraph.reports.probe_view import render_probe

        return render_probe
    if isinstance(run, TriageResult):
        from eaglegraph.reports.triage_view import render_triage

        return render_triage
    if isinstance(run, EnvReport):
        from eaglegraph.reports.env_view import render_env

        return render_env
    if isinstance(run, StacksReport):
        from eaglegraph.reports.stacks_view import render_stacks

        return render_stacks
    if isinstance(run, ScaffoldResult):
        from eaglegraph.reports.scaffold_view import render_scaffold

        return render_scaffold
    if isinstance(run, PresetList):
        from eaglegraph.reports.scaffold_view import render_presets

        return render_presets
    raise TypeError(f"no view for {type(run).__name__}")


def render_run(run: Any, console: Console) -> None:
    """The terminal view that matches the run's kind."""
    renderer_for(run)(run, console)


def has_timeline(run: Any) -> bool:
    """Runs a Chrome trace can show: those with a capture timeline."""
    return isinstance(run, (CaptureRun, MemdiffRun))
