"""What `explore` opens: a saved run as it is, or a model folder inspected with a capture and a
probe ready to start from inside the app, each built as the matching command builds it.

The actions report progress as `(description, fraction or None)`, the explorer's own
progress shape; they run in the app's worker thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from eaglegraph.probes.inspection import InspectRequest
from eaglegraph.probes.setup import as_choices
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.options import PlanChoices

Progress = Callable[[str, float | None], None]
Action = Callable[[Progress], Any]


def open_source(
    source: str, plan: PlanChoices | Mapping[str, Any], rig: Mapping[str, Any]
) -> tuple[Any, dict[str, Action]]:
    """A saved run and no actions; or a model folder's inspect report (with the options capture
    and probe rebuild the step with) and its `capture` and `probe` actions."""
    if Path(source).is_file():
        from eaglegraph.results import load_run

        return load_run(source), {}
    choices = as_choices(plan)
    dtype = rig.get("dtype") or "auto"
    report = (
        InspectRequest(source, plan=choices, dtype=dtype, engine_defaults=False).resolve().run()
    )
    return report, {
        "capture": lambda progress: capture(source, choices, rig, progress),
        "probe": lambda progress: probe(source, choices, rig, progress),
    }


def capture(source: str, plan: PlanChoices, rig: Mapping[str, Any], progress: Progress) -> Any:
    """The capture `c` starts: the spec `eaglegraph capture` builds from these options (on
    CPU its quick plan, unless the options name the batch sizes)."""
    from eaglegraph.probes.capture import CaptureRequest, run_capture
    from eaglegraph.probes.spec import resolve_run
    from eaglegraph.rig.options import CPU_CAPTURE_MAX_NUM_SEQS
    from eaglegraph.rig.plan import build_plan

    spec = resolve_run(source, plan=plan, cpu_max_num_seqs=CPU_CAPTURE_MAX_NUM_SEQS, **rig)
    total = sum(p.descriptor_count for p in build_plan(spec.options).phases) or 1
    done = [0]

    def on_event(e: Any) -> None:
        done[0] += 1
        progress(f"graph {done[0]}/{total}: {e.phase} {e.descriptor}", done[0] / total)

    request = CaptureRequest.from_spec(spec)
    return run_capture(
        spec.open_pair(), request, on_event=on_event, on_stage=lambda s: progress(s, None)
    )


def probe(source: str, plan: PlanChoices, rig: Mapping[str, Any], progress: Progress) -> Any:
    """The probe `r` starts: every padded batch of the --mode given (default all), each case
    in its own worker process, as `eaglegraph probe` runs it."""
    from eaglegraph.probes.probing import ProbeRequest

    mode = plan.mode.name if isinstance(plan.mode, Mode) else plan.mode
    modes = (mode,) if mode else ("all",)
    request = ProbeRequest.for_model(source, replace(plan, mode=None), rig, modes=modes)
    total, done = [0], [0]

    def on_plan(cases: list[Any]) -> None:
        total[0] = len(cases)
        progress(f"{total[0]} cases planned", 0.0)

    def on_case(name: str, result: Any) -> None:
        if result is None:
            progress(f"case {done[0] + 1}/{total[0]}: {name}", done[0] / max(total[0], 1))
        else:
            done[0] += 1
            progress(f"case {name}: {result.status}", done[0] / max(total[0], 1))

    return request.run(on_plan=on_plan, on_case=on_case)
