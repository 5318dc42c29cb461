"""Markdown summary of a run (`--markdown FILE`): what a support engineer pastes into a ticket.

GitHub and most trackers render it: a heading naming the run, its configuration as a table,
the headline result of its kind, and every finding with its PR. It shows only what the result
holds (numbers are formatted, never derived), so a saved run summarises like the live one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from eaglegraph import __version__
from eaglegraph.reports.exporters import Exporter
from eaglegraph.reports.format import fmt_bytes
from eaglegraph.results.capture import CaptureRun
from eaglegraph.results.env import EnvReport
from eaglegraph.results.findings import Finding
from eaglegraph.results.inspect import InspectReport
from eaglegraph.results.memdiff import MemdiffRun
from eaglegraph.results.probe import ProbeRun
from eaglegraph.results.registry import schema_of
from eaglegraph.results.triage import TriageResult


def cell(value: Any) -> str:
    """One table cell: `|` escaped and newlines folded, so a log line cannot break the row."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        value = ", ".join(str(v) for v in value)
    text = str(value).replace("\\", "\\\\").replace("|", "\\|")
    return " ".join(text.split()) or "—"


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(" --- " for _ in header) + "|",
    ]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def _key_values(title: str, values: Mapping[str, Any]) -> list[str]:
    if not values:
        return []
    return ["", f"## {title}", "", *table(("setting", "value"), values.items())]


def _findings(findings: Sequence[Finding]) -> list[str]:
    lines = ["", "## Findings", ""]
    if not findings:
        return [*lines, "No findings."]
    rows = [
        (
            f.severity.value,
            f"`{f.id}`",
            f.phase,
            f.buffer,
            f.message,
            f.fix,
            f.ref,
        )
        for f in findings
    ]
    return lines + table(("severity", "rule", "phase", "buffer", "what", "fix", "ref"), rows)


def _capture(run: CaptureRun) -> list[str]:
    measured = run.memory_measured
    lines = [
        "",
        "## Capture",
        "",
        f"- backend: {run.backend}, pool policy: {run.pool_policy}",
        f"- graphs captured: {run.totals.graphs}",
        f"- {run.totals.vllm_line}",
    ]
    if run.failed is not None:
        lines.append(f"- **failed** at {run.failed.phase} {run.failed.descriptor}: "
                     f"{cell(run.failed.error)}")  # fmt: skip
    rows = [
        (
            p.label,
            p.policy,
            p.graphs,
            fmt_bytes(p.reserved_bytes) if measured else "N/A",
            fmt_bytes(p.ideal_bytes) if measured else "N/A",
        )
        for p in run.pools
    ]
    if rows:
        lines += ["", *table(("pool", "policy", "graphs", "reserved", "ideal"), rows)]
    return lines


def _memdiff(run: MemdiffRun) -> list[str]:
    a, b = run.a.pool_policy, run.b.pool_policy
    tokens = {True: "identical", False: "**differ**", None: "not compared"}[run.tokens_identical]
    lines = [
        "",
        f"## Pool memory: {a} vs {b}",
        "",
        f"- total: {fmt_bytes(run.total_a)} ({a}) vs {fmt_bytes(run.total_b)} ({b})",
        f"- draft tokens over {run.token_steps} steps: {tokens}",
    ]
    rows = [(d.label, fmt_bytes(d.a_bytes), fmt_bytes(d.b_bytes), fmt_bytes(d.delta))
            for d in run.per_pool]  # fmt: skip
    if rows:
        lines += ["", *table(("pool", a, b, "delta"), rows)]
    return lines


def _probe(run: ProbeRun) -> list[str]:
    lines = [
        "",
        "## Cases",
        "",
        f"- backend: {run.backend}, isolated: {cell(run.isolated)}, "
        f"{len(run.cases)} cases in {run.duration_s:.0f} s",
    ]
    rows = [(c.name, c.status, c.hits, c.error) for c in run.cases]
    if rows:
        lines += ["", *table(("case", "status", "hits", "error"), rows)]
    return lines


def _inspect(run: InspectReport) -> list[str]:
    plan = run.plan
    draft = run.draft
    pair = {
        "folder": run.root,
        "layout": run.layout,
        "target": run.target.architecture if run.target else None,
        "draft kind": draft.kind if draft else None,
        "draft style": draft.style if draft else None,
        "missing": run.missing,
    }
    plan_rows = {
        "framework": plan.framework,
        "behavior": plan.behavior,
        "attention backend": plan.attention_backend,
        "K": plan.num_speculative_tokens,
        "max_num_seqs": plan.max_num_seqs,
        "max_num_batched_tokens": plan.max_num_batched_tokens,
        "mode": f"{plan.requested_mode} → {plan.resolved_mode}",
        "capture sizes": plan.capture_sizes,
        "downgrades": plan.downgrades or None,
    }
    phases = [(p.phase, p.mode, p.descriptor_count, p.padding_rule) for p in plan.phases]
    lines = _key_values("Pair", pair) + _key_values("Plan", plan_rows)
    if phases:
        lines += ["", *table(("phase", "mode", "graphs", "padding"), phases)]
    return lines


def _triage(run: TriageResult) -> list[str]:
    diagnosis = {
        "log": run.source,
        "framework": run.framework,
        "version": run.version,
        "failure class": run.category,
        "confidence": f"{run.confidence:.0%}",
        "reproduce": f"`{run.reproduce}`" if run.reproduce else None,
    }
    lines = _key_values("Diagnosis", diagnosis)
    if run.primary_error is not None:
        e = run.primary_error
        lines += ["", f"Primary error (line {e.line}):", "", "```", e.text, "```"]
    if run.fixes:
        lines += ["", "## Upstream fixes", ""]
        lines += [f"- {f.ref}: {f.summary}" for f in run.fixes]
    if run.checks:
        lines += ["", "## What to check", ""] + [f"- {c}" for c in run.checks]
    return lines


def _env(run: EnvReport) -> list[str]:
    versions = {
        "eaglegraph": run.eaglegraph,
        "python": run.python.version,
        "torch": run.torch.version,
        "CUDA runtime": run.torch.cuda_runtime,
        "CUDA available": run.torch.cuda_available,
        "triton": run.triton,
        "driver": run.nvml.driver_version,
        **run.packages,
    }
    gpus = [(g.index, g.name, g.memory_total_mib, g.memory_used_mib) for g in run.nvml.gpus]
    lines = _key_values("Versions", versions)
    if gpus:
        lines += ["", *table(("gpu", "name", "total MiB", "used MiB"), gpus)]
    return lines + [f"- {note}" for note in run.notes]


_SECTIONS: dict[type, Callable[[Any], list[str]]] = {
    CaptureRun: _capture,
    MemdiffRun: _memdiff,
    ProbeRun: _probe,
    InspectReport: _inspect,
    TriageResult: _triage,
    EnvReport: _env,
}


def render_markdown(run: Any) -> str:
    """The Markdown summary of any run kind `_SECTIONS` knows."""
    schema = schema_of(run)
    command = schema.removeprefix("eaglegraph.").split("/")[0]
    config = getattr(run, "config", None)
    title = config.get("model") if isinstance(config, dict) else None
    lines = [
        f"# eaglegraph {command}" + (f": {title}" if title else ""),
        "",
        f"Schema `{schema}`, eaglegraph {__version__}.",
    ]
    if isinstance(config, dict):
        lines += _key_values("Configuration", config)
    lines += _SECTIONS[type(run)](run)
    findings = getattr(run, "findings", None)
    if findings is not None:
        lines += _findings(findings)
    return "\n".join(lines) + "\n"


EXPORTER = Exporter(
    name="markdown",
    help="Write a Markdown summary (configuration, result, findings) to paste into a ticket.",
    kinds=tuple(_SECTIONS),
    render=render_markdown,
)
