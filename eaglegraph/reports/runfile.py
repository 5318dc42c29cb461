"""Saved runs on screen and on disk: the terminal view of each run kind, and the run file.

Loading is `results`' job (one registry, one loader); this module maps each run type to its
renderer, so `report`, `--html` and the commands themselves draw a run the same way, and it
registers the run file (`--save`) as an output format.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from rich.console import Console

from eaglegraph.reports.exporters import Exporter
from eaglegraph.results.capture import CaptureRun
from eaglegraph.results.env import EnvReport
from eaglegraph.results.inspect import InspectReport
from eaglegraph.results.memdiff import MemdiffRun
from eaglegraph.results.memdiff_ranks import MemdiffRanksRun
from eaglegraph.results.probe import ProbeRun
from eaglegraph.results.rank_runs import RankedRun
from eaglegraph.results.registry import document
from eaglegraph.results.scaffold import PresetList, ScaffoldResult
from eaglegraph.results.stacks import StacksReport
from eaglegraph.results.triage import TriageResult
from eaglegraph.serial import dumps

# each run type's view, as "module:function" (imported lazily: each pulls in only its own view)
_VIEWS: dict[type, str] = {
    CaptureRun: "capture_view:render_capture",
    MemdiffRun: "memdiff_view:render_memdiff",
    ProbeRun: "probe_view:render_probe",
    InspectReport: "inspect_view:render_inspect",
    TriageResult: "triage_view:render_triage",
    EnvReport: "env_view:render_env",
    StacksReport: "stacks_view:render_stacks",
    ScaffoldResult: "scaffold_view:render_scaffold",
    PresetList: "scaffold_view:render_presets",
    RankedRun: "ranks_view:render_ranks",
    MemdiffRanksRun: "memdiff_ranks_view:render_memdiff_ranks",
}

# every result kind `report` reads back: what each command prints with --json or --save
SAVED_RUNS = tuple(_VIEWS)


def renderer_for(run: Any) -> Callable[[Any, Console], None]:
    """The terminal view of a run's kind."""
    view = _VIEWS.get(type(run))
    if view is None:
        raise TypeError(f"no view for {type(run).__name__}")
    module, function = view.split(":")
    render: Callable[[Any, Console], None] = getattr(
        importlib.import_module(f"eaglegraph.reports.{module}"), function
    )
    return render


def render_run(run: Any, console: Console) -> None:
    """The terminal view that matches the run's kind."""
    renderer_for(run)(run, console)


def has_timeline(run: Any) -> bool:
    """Runs a Chrome trace can show: those with a capture timeline."""
    return isinstance(run, (CaptureRun, MemdiffRun))


def run_file_text(run: Any) -> str:
    """The run as `--json` prints it: the file `report` and `explore` read back."""
    return dumps(document(run)) + "\n"


EXPORTER = Exporter(
    name="save",
    help="Write the run as its versioned JSON document (what `report` reads).",
    kinds=SAVED_RUNS,
    render=run_file_text,
    rerender=False,
)
