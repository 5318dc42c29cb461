"""Terminal view of one capture run: what ran, the timeline, the pools, vLLM's totals line.

The totals are printed as the line vLLM itself logs ("Graph capturing finished in … secs, took
… GiB") so a user can hold our number against their server log. A failed capture keeps its
partial timeline and says which size failed and why, because that size is the whole answer to
"OOM while capturing graphs".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.padding import Padding
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from eaglegraph.reports.findings_view import render_findings
from eaglegraph.reports.format import fmt_bytes, fmt_sizes
from eaglegraph.reports.layout import Folded, label_grid
from eaglegraph.reports.pools_view import render_pools
from eaglegraph.reports.timeline_view import (
    EMULATED_NA,
    fmt_seconds,
    memory_na,
    render_timeline,
)
from eaglegraph.results.capture import CaptureRun, CaptureTotals


def render_capture(run: CaptureRun, console: Console) -> None:
    """The full capture report, as `capture` prints it and `report` re-renders it."""
    console.print(Rule(capture_title(run), align="left", style="dim"))
    console.print(context_grid(run.config, run.environment, run.replay))
    render_timeline(run, console)
    if run.failed is not None:
        render_failure(run, console)
    render_pools(run, console)
    render_totals(run, console)
    render_findings(run.findings, console)


def capture_title(run: CaptureRun) -> Text:
    title = Text("Capture", style="bold")
    model = run.config.get("model") or run.config.get("model_dir")
    if isinstance(model, str):
        title.append(f"  {model}")
    title.append(f"  backend {run.backend}  pool {run.pool_policy}", style="cyan")
    if run.failed is not None:
        title.append(f"  {run.failed.status.upper()}", style="bold red")
    return title


def target_forward(config: Mapping[str, Any]) -> str | None:
    """Which target forward ran: its graph pools differ (Inductor's buffers live in them)."""
    compiled = config.get("compiled")
    if compiled is None:  # a run saved before the field existed
        return None
    return "compiled by torch.compile (Inductor)" if compiled else "eager (not compiled)"


def context_grid(
    config: Mapping[str, Any],
    environment: Mapping[str, Any] | None = None,
    replay: Mapping[str, Any] | None = None,
) -> Table:
    """Config, environment and replay as `key=value` runs, whatever keys the producer wrote."""
    skip = {"model", "model_dir"}
    grid = label_grid()
    forward = target_forward(config)
    if forward is not None:
        grid.add_row("target", Folded(forward))
    grid.add_row("config", _pairs({k: v for k, v in config.items() if k not in skip}))
    if environment:
        grid.add_row("environment", _pairs(environment))
    if replay:
        # the token lists are for machines (memdiff compares them); people get the summary
        summary = {k: v for k, v in replay.items() if not isinstance(v, (list, tuple, Mapping))}
        grid.add_row("replay", _pairs(summary))
    return grid


def _pairs(values: Mapping[str, Any]) -> Folded:
    text = "  ".join(f"{k}={_scalar(v)}" for k, v in values.items() if v is not None)
    return Folded(text or "—")


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, (list, tuple)):
        if len(value) > 3 and all(type(v) is int for v in value):
            return fmt_sizes(value, limit=len(value))  # 50 capture sizes as a few runs
        return ",".join(_scalar(v) for v in value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_scalar(v)}" for k, v in value.items()) + "}"
    return str(value)


def render_failure(run: CaptureRun, console: Console) -> None:
    """The clear line under a partial timeline: which graph failed, how, and what it said."""
    e = run.failed
    if e is None:
        return
    text = Text("✖ capture ", style="bold red")
    text.append("out of memory" if e.status == "oom" else "failed", style="bold red")
    text.append(f" at {e.phase} {e.descriptor}", style="bold")
    if e.pool is not None:
        text.append(f" in pool {run.pool_label(e.pool)}")
    console.print(text)
    done = sum(1 for ev in run.events if ev.status == "ok")
    note = f"after {done} graph{'s' if done != 1 else ''}; the timeline above is partial"
    console.print(Padding(Text(note), (0, 0, 0, 2)))
    if e.error:
        console.print(Padding(Text(e.error, style="red"), (0, 0, 0, 2)))


def took_breakdown(t: CaptureTotals) -> Text:
    """ "took X" (the driver's free-memory drop) = the allocator's growth + what it cannot see."""
    text = Text(f"took {fmt_bytes(t.took_bytes)} = allocator +{fmt_bytes(t.allocator_bytes)}")
    text.append(f" + outside the allocator {fmt_bytes(t.outside_allocator_bytes)}")
    inside = t.outside_in_captures_bytes
    if inside is not None and t.outside_allocator_bytes is not None:
        # the graphs' windows are contiguous: only what came before the first one is left
        before = t.outside_allocator_bytes - inside
        text.append(
            f" ({fmt_bytes(inside)} in the graphs' windows: graph instantiation, kernel "
            "modules, workspaces"
            + (f"; {fmt_bytes(before)} before the first capture)" if before else ")"),
            style="dim",
        )
    return text


def render_totals(run: CaptureRun, console: Console) -> None:
    t = run.totals
    na = memory_na(run)
    head = Text("Totals", style="bold")
    if run.failed is None:
        head.append("  as vLLM would log them:", style="dim")
        console.print(head)
        console.print(Padding(Text(t.vllm_line, style="bold"), (0, 0, 0, 2)))
    else:
        head.append(
            "  up to the failure (vLLM logs no totals line when capture fails)", style="dim"
        )
        console.print(head)
    line = Text(f"  {t.graphs} graph{'s' if t.graphs != 1 else ''} in ")
    line.append(fmt_seconds(t.capture_seconds))
    if na:
        line.append(f" · memory {EMULATED_NA}", style="yellow")
    else:
        line.append(f" · took {fmt_bytes(t.took_bytes)}")
        line.append(f" · allocator reserved {fmt_bytes(t.reserved_bytes)}")
    console.print(line)
    if not na and t.allocator_bytes is not None and t.outside_allocator_bytes is not None:
        console.print(Padding(Folded(took_breakdown(t)), (0, 0, 0, 2)))
