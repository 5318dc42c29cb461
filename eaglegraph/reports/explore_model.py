"""The explorer's navigable model of a run: nodes with a detail pane and links between them.

One model feeds both front ends (the Textual app and the HTML page), so the terminal and the
browser always show the same findings, the same details and the same drill-down links. It only
arranges and labels what the results and the knowledge package already hold: a finding links to
the buffer, case and phase the probe recorded for it and to the hazard `known/` names; nothing
is measured or inferred here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from eaglegraph.known.hazards import HAZARDS, Hazard
from eaglegraph.known.upstream import UPSTREAM, Upstream
from eaglegraph.reports.format import fmt_bytes
from eaglegraph.results.capture import CaptureEvent, CaptureRun
from eaglegraph.results.findings import Finding
from eaglegraph.results.inspect import DraftFacts, InspectReport
from eaglegraph.results.memdiff import MemdiffRun
from eaglegraph.results.probe import CaseResult, ProbeRun
from eaglegraph.results.registry import schema_of
from eaglegraph.results.triage import TriageResult

SECTIONS = (
    "Findings",
    "Phases",
    "Graphs",
    "Pools",
    "Buffers",
    "Cases",
    "Evidence",
    "Rules",
    "Hazards",
    "Similar",
    "Run",
)


@dataclass
class Node:
    """One selectable row: a finding, phase, graph, pool, buffer, case, log line or hazard."""

    id: str
    section: str
    label: str
    kind: str
    phase: str | None = None
    severity: str | None = None
    detail: list[tuple[str, str]] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    # Timeline bar (start and duration in seconds) or a byte bar, where the node has one.
    start_s: float | None = None
    duration_s: float | None = None
    bytes: int | None = None
    # A sub-heading inside the section (the probe case a graph or pool belongs to), so many
    # cases' graphs fold into one branch each instead of one long list.
    group: str | None = None

    def text(self) -> str:
        """Everything searchable about the node, lower-cased."""
        parts = [self.label, self.kind, self.phase or "", self.severity or ""]
        parts += [f"{k} {v}" for k, v in self.detail]
        return " ".join(parts).lower()

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["detail"] = [list(kv) for kv in self.detail]
        return data


@dataclass
class Explorer:
    """A run as nodes in sections, in display order, with a title and the run's schema."""

    title: str
    schema: str
    nodes: dict[str, Node]

    def sections(self) -> list[tuple[str, list[Node]]]:
        by: dict[str, list[Node]] = {}
        for node in self.nodes.values():
            by.setdefault(node.section, []).append(node)
        return [(s, by[s]) for s in SECTIONS if s in by]

    def values(self, attr: str) -> list[str]:
        """The distinct phases, severities or kinds present, for the filter choices."""
        seen = {getattr(n, attr) for n in self.nodes.values()} - {None}
        return sorted(seen)

    def timeline(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.start_s is not None]

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "schema": self.schema,
            "sections": [[s, [n.id for n in nodes]] for s, nodes in self.sections()],
            "nodes": {k: n.to_json() for k, n in self.nodes.items()},
        }


class _Builder:
    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}

    def add(self, node: Node) -> Node:
        self.nodes.setdefault(node.id, node)
        return self.nodes[node.id]

    def link(self, a: str, b: str) -> None:
        """Both ways, so every drill-down can be walked back."""
        if a in self.nodes and b in self.nodes and a != b:
            for x, y in ((a, b), (b, a)):
                if y not in self.nodes[x].links:
                    self.nodes[x].links.append(y)

    def finalize(self) -> dict[str, Node]:
        for node in self.nodes.values():
            node.links = [x for x in node.links if x in self.nodes]
        return self.nodes


def build(run: Any) -> Explorer:
    """The explorer model of any saved run (capture, memdiff, probe, inspect, triage, …)."""
    b = _Builder()
    schema = schema_of(run)
    title = schema
    for kind, name, add, subject in _RUN_KINDS:
        if isinstance(run, kind):
            add(b, run)
            title = f"{name} {subject(run)}"
            break
    _run_node(b, run, schema)
    return Explorer(title=title.strip(), schema=schema, nodes=b.finalize())


# --- shared pieces ---------------------------------------------------------------------------


def _run_node(b: _Builder, run: Any, schema: str) -> None:
    detail = [("schema", schema)]
    for attr in ("config", "environment"):
        values = getattr(run, attr, None)
        if isinstance(values, dict):
            detail += [(f"{attr}.{k}", _text(v)) for k, v in values.items()]
    if isinstance(run, TriageResult):
        detail += [(f"config.{k}", _text(v)) for k, v in vars(run.config).items() if v]
    for attr in ("backend", "pool_policy", "duration_s", "category", "confidence", "reproduce"):
        if getattr(run, attr, None) is not None:
            detail.append((attr, _text(getattr(run, attr))))
    b.add(Node("run", "Run", "run settings", "run", detail=detail))


def _text(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (list, tuple)):
        return ", ".join(_text(x) for x in v)
    if isinstance(v, dict):
        return ", ".join(f"{k}={_text(x)}" for k, x in v.items())
    return str(v)


# the optional Finding fields a finding node lists when set, in this order: what to do first
# (the fix, its reference), so an 80×24 screen shows them before the evidence
_FIRST = ("fix", "ref")
_OPTIONAL = ("phase", "buffer", "kernel", "mode", "descriptor", "batch", "evidence")


def _finding(b: _Builder, f: Finding, i: int) -> Node:
    detail = [("rule", f.id), ("severity", f.severity.value)]
    for key in _FIRST:
        if getattr(f, key):
            detail.append((key, str(getattr(f, key))))
    change = UPSTREAM.get(f.ref) if f.ref else None
    if change is not None and change.kind == "pr":
        detail.append(("PR", _pr_url(change)))
    detail.append(("message", f.message))
    for key in _OPTIONAL:
        if getattr(f, key):
            detail.append((key, str(getattr(f, key))))
    node = b.add(
        Node(
            f"finding:{i}",
            "Findings",
            f.id,
            f.kind or "finding",
            phase=f.phase,
            severity=f.severity.value,
            detail=detail,
        )
    )
    hazards = [HAZARDS[f.hazard]] if f.hazard in HAZARDS else _hazards_by_ref(f.ref)
    for hazard in hazards:
        b.link(node.id, _hazard(b, hazard).id)
    return node


def _hazards_by_ref(ref: str | None) -> list[Hazard]:
    """The known hazards an upstream reference documents, in its short or its full form
    (owner/repo): those it fixed, else those it is an issue of."""
    if not ref:
        return []

    def named(r: str | None) -> bool:
        change = UPSTREAM.get(r) if r else None
        return r == ref or (change is not None and change.full_ref == ref)

    fixed = [h for h in HAZARDS.values() if named(h.fixed_by)]
    return fixed or [h for h in HAZARDS.values() if any(named(r) for r in h.refs)]


def _pr_url(change: Upstream) -> str:
    return f"https://github.com/{change.full_ref.replace('#', '/pull/')}"


def _hazard(b: _Builder, h: Hazard) -> Node:
    detail = [("hazard", h.id), ("engine", h.engine or "any"), ("mechanism", h.mechanism)]
    change = h.fix_change
    if change is not None:
        detail += [
            ("fixed by", f"{change.pr} ({change.full_ref})"),
            ("PR", _pr_url(change)),
            ("what it did", change.summary),
        ]
    if h.fixed_in:
        detail.append(("fixed in", h.fixed_in))
    if h.affected is not None:
        detail.append(("affected", f"{h.engine or ''} {h.affected.describe()}".strip()))
    if h.fix_text:
        detail.append(("fix", h.fix_text))
    for ref in h.refs:
        change_ref = next((u for u in UPSTREAM.values() if u.ref == ref), None)
        detail.append(("see also", f"{ref}: {change_ref.summary}" if change_ref else ref))
    if h.flag:
        detail.append(("profile flag", h.flag))
    return b.add(Node(f"hazard:{h.id}", "Hazards", h.id, "hazard", detail=detail))


# --- capture and memdiff ---------------------------------------------------------------------


def _event_detail(run: CaptureRun, e: CaptureEvent) -> list[tuple[str, str]]:
    detail = [
        ("phase", e.phase),
        ("descriptor", e.descriptor),
        ("uniform tokens", str(e.uniform_token_count) if e.uniform_token_count else "—"),
        ("backend", e.backend),
        ("pool", f"{run.pool_label(e.pool)} {e.pool}" if e.pool else "—"),
        ("status", e.status),
        ("start", f"{e.start_s:.4f} s"),
        ("duration", f"{e.duration_s * 1e3:.2f} ms (warmup {e.warmup_s * 1e3:.2f} ms)"),
        ("segments", str(e.segments)),
        ("graph bytes", fmt_bytes(e.bytes, "N/A (emulated)")),
        ("allocated", f"{fmt_bytes(e.allocated_before)} → {fmt_bytes(e.allocated_after)}"),
        ("reserved", f"{fmt_bytes(e.reserved_before)} → {fmt_bytes(e.reserved_after)}"),
    ]
    if e.error:
        detail.append(("error", e.error))
    if e.need_bytes is not None:
        detail.append(("needed", fmt_bytes(e.need_bytes)))
    return detail


def _capture(b: _Builder, run: CaptureRun, prefix: str) -> None:
    tag = f"{prefix}:" if prefix else ""
    where = f" [{prefix}]" if prefix else ""
    pools: dict[str, str] = {}
    for p in run.pools:
        node = b.add(
            Node(
                f"{tag}pool:{p.id}",
                "Pools",
                f"{p.label} {p.id}{where}",
                "pool",
                bytes=p.reserved_bytes,
                detail=[
                    ("pool", str(p.id)),
                    ("kind", p.kind.value),
                    ("policy", p.policy),
                    ("reserved", fmt_bytes(p.reserved_bytes)),
                    ("allocated", fmt_bytes(p.allocated_bytes)),
                    ("ideal (largest graph)", fmt_bytes(p.ideal_bytes)),
                    ("graphs", str(p.graphs)),
                    ("segments", str(p.segments)),
                    *[(f"bytes {ph}", fmt_bytes(v)) for ph, v in p.bytes_per_phase.items()],
                ],
            )
        )
        pools[str(p.id)] = node.id
    events = list(run.events) + ([run.failed] if run.failed else [])
    for e in events:
        node = b.add(
            Node(
                f"{tag}graph:{e.index}",
                "Graphs",
                f"#{e.index} {e.phase} {e.descriptor}{where}",
                "graph" if e.status == "ok" else "failed-graph",
                phase=e.phase,
                severity=None if e.status == "ok" else "error",
                detail=_event_detail(run, e),
                start_s=e.start_s,
                duration_s=e.duration_s,
                bytes=e.bytes,
            )
        )
        phase = b.add(Node(f"{tag}phase:{e.phase}", "Phases", f"{e.phase}{where}", "phase"))
        phase.phase = e.phase
        b.link(phase.id, node.id)
        if e.pool is not None and str(e.pool) in pools:
            b.link(node.id, pools[str(e.pool)])
    for pid, pool_node in pools.items():
        mine = [e for e in events if e.pool is not None and str(e.pool) == pid]
        b.nodes[pool_node].detail += [
            ("lives here", f"#{e.index} {e.phase} {e.descriptor} {fmt_bytes(e.bytes, 'N/A')}")
            for e in mine
        ]
    for ph in (n for n in b.nodes.values() if n.kind == "phase" and n.id.startswith(tag)):
        if not ph.detail:
            mine = [e for e in events if f"{tag}phase:{e.phase}" == ph.id]
            ph.detail = [
                ("graphs", str(len(mine))),
                ("modes", ", ".join(sorted({e.mode for e in mine}))),
                ("sizes", ", ".join(str(e.num_tokens) for e in mine)),
            ]
    if run.totals is not None:
        b.nodes.setdefault(
            f"{tag}totals",
            Node(
                f"{tag}totals",
                "Run",
                f"totals{where}",
                "totals",
                detail=[
                    ("vLLM line", run.totals.vllm_line),
                    ("graphs", str(run.totals.graphs)),
                    ("pool reserved", fmt_bytes(run.totals.pool_reserved_bytes)),
                    ("reserved", fmt_bytes(run.totals.reserved_bytes)),
                    ("accounted", str(run.totals.accounted)),
                ],
            ),
        )
    base = len([n for n in b.nodes if n.startswith("finding:")])
    for i, f in enumerate(run.findings):
        node = _finding(b, f, base + i)
        if f.phase and f"{tag}phase:{f.phase}" in b.nodes:
            b.link(node.id, f"{tag}phase:{f.phase}")


def _memdiff(b: _Builder, run: MemdiffRun) -> None:
    pa, pb = run.a.pool_policy, run.b.pool_policy
    _capture(b, run.a, prefix=pa)
    _capture(b, run.b, prefix=pb)
    for kind, rows in (("per-pool", run.per_pool), ("per-phase", run.per_phase)):
        for d in rows:
            b.add(
                Node(
                    f"diff:{kind}:{d.label}",
                    "Pools",
                    f"Δ {d.label} {fmt_bytes(d.delta)}",
                    f"diff-{kind}",
                    phase=d.label if kind == "per-phase" else None,
                    bytes=d.b_bytes,
                    detail=[
                        (pa, fmt_bytes(d.a_bytes)),
                        (pb, fmt_bytes(d.b_bytes)),
                        ("delta", fmt_bytes(d.delta)),
                    ],
                )
            )
    for i, f in enumerate(run.findings, start=len(run.a.findings) + len(run.b.findings)):
        _finding(b, f, i)


# --- probe -----------------------------------------------------------------------------------


def _probe(b: _Builder, run: ProbeRun) -> None:
    for row in run.matrix:
        b.add(
            Node(
                f"buffer:{row.buffer}",
                "Buffers",
                row.buffer,
                "buffer",
                phase=row.owner,
                detail=[
                    ("buffer", row.buffer),
                    ("owner", row.owner),
                    ("padding region", row.padding),
                    *[(f"stale reads in {ph}", str(n)) for ph, n in row.reads.items()],
                    ("after step", row.after_step),
                ],
            )
        )
    for ph in run.phases:
        b.add(Node(f"phase:{ph}", "Phases", ph, "phase", phase=ph, detail=[("phase", ph)]))
    for case in run.cases:
        detail = [
            ("case", case.name),
            ("mode", case.mode),
            ("batch", f"{case.batch} reqs (dirtied at {case.large})"),
            ("status", case.status),
            ("duration", f"{case.duration_s:.2f} s"),
            ("hits", str(case.hits)),
        ]
        for ph, desc in case.descriptors.items():
            counts = case.counts.get(ph)
            reqs, tokens = (counts[0], counts[1]) if counts else (None, None)
            detail.append((f"{ph} descriptor", f"{desc} for {reqs} reqs / {tokens} tokens"))
        for v in case.violations:
            detail.append(
                (f"guard {v.run}", f"{v.kernel} read {v.buffer}[{v.row}] = {v.value} ({v.phase})")
            )
        for r in case.regions:
            detail.append(
                (
                    f"padding {r.buffer}",
                    f"{r.extent}: rows {r.first_row}..{r.first_row + r.rows - 1}, "
                    f"{r.elements} elements, poisoned after A/B {r.poisoned_after_a}/"
                    f"{r.poisoned_after_b}",
                )
            )
        detail += [("differential", d) for d in case.differential]
        detail += [("NaN output", d) for d in case.nan_outputs]
        detail += [
            ("canary", f"blocks from {c.first_block}: {c.written}/{c.elements} written")
            for c in case.canaries
        ]
        if case.error:
            detail.append(("error", case.error))
        node = b.add(
            Node(
                f"case:{case.name}",
                "Cases",
                f"{case.name} ({case.hits} hits)",
                "case",
                severity="error" if case.hits or case.status != "ok" else None,
                detail=detail,
            )
        )
        for ph in case.descriptors:
            b.link(node.id, f"phase:{ph}")
        for buf in {v.buffer for v in case.violations} | {r.buffer for r in case.regions}:
            if any(v.buffer == buf for v in case.violations):
                b.link(node.id, f"buffer:{buf}")
        _case_graphs(b, case, str(run.config.get("pool") or "—"))
    for i, f in enumerate(run.findings):
        node = _finding(b, f, i)
        if f.buffer:
            b.link(node.id, f"buffer:{f.buffer}")
        if f.phase:
            b.link(node.id, f"phase:{f.phase}")
        for case in run.cases:
            if _observed_in(f, case):
                b.link(node.id, f"case:{case.name}")
                if f.phase in case.replayed:
                    b.link(node.id, f"case:{case.name}:graph:{case.replayed[f.phase]}")


def _observed_in(f: Finding, case: CaseResult) -> bool:
    """Whether the case recorded what the finding reports: its own case, or the guard hit,
    broken invariant or divergence on the finding's buffer in the finding's phase."""
    if f.id.endswith(f":{case.name}"):
        return True
    if not f.buffer:
        return False
    same = [(v.buffer, v.phase) for v in case.violations]
    same += [(v.buffer, v.phase) for v in case.invariants]
    if case.divergence is not None:
        same.append((case.divergence.buffer, case.divergence.phase))
    return (f.buffer, f.phase) in same


def _case_graphs(b: _Builder, case: CaseResult, policy: str) -> None:
    """The graphs a case captured, the pools they live in, and which one each phase replayed."""
    tag = f"case:{case.name}"
    replayed = {i: ph for ph, i in case.replayed.items()}
    for g in case.graphs:
        pool_id = f"{tag}:pool:{g.pool}"
        mine = [x for x in case.graphs if x.pool == g.pool]
        pool = b.add(
            Node(
                pool_id,
                "Pools",
                f"{g.pool_label} {g.pool or ''} [{case.name}]".replace("  ", " "),
                "pool",
                group=case.name,
                detail=[
                    ("pool", g.pool or "—"),
                    ("label", g.pool_label),
                    ("policy", policy),
                    ("case", case.name),
                    ("graphs", str(len(mine))),
                    *[
                        (
                            "lives here",
                            f"#{x.index} {x.phase} {x.descriptor} {fmt_bytes(x.bytes, 'N/A')}",
                        )
                        for x in mine
                    ],
                ],
            )
        )
        node = b.add(
            Node(
                f"{tag}:graph:{g.index}",
                "Graphs",
                f"#{g.index} {g.phase} {g.descriptor} [{case.name}]",
                "graph",
                phase=g.phase,
                bytes=g.bytes,
                group=case.name,
                detail=[
                    ("phase", g.phase),
                    ("descriptor", g.descriptor),
                    ("case", case.name),
                    ("pool", f"{g.pool_label} {g.pool or '—'}"),
                    ("graph bytes", fmt_bytes(g.bytes, "N/A (emulated)")),
                    (
                        "replayed",
                        f"by the probed {replayed[g.index]} step"
                        if g.index in replayed
                        else "no (captured, not used at this batch)",
                    ),
                ],
            )
        )
        b.link(node.id, pool.id)
        if g.index in replayed:
            b.link(tag, node.id)


# --- inspect ---------------------------------------------------------------------------------


def _inspect(b: _Builder, run: InspectReport) -> None:
    plan = run.plan
    for side in (run.target, run.draft):
        if side is None:
            continue
        g = side.geometry
        detail = [("role", side.role), ("path", side.path or "—")]
        if side.architecture:
            detail.append(("architecture", side.architecture))
        if g is not None:
            detail += [
                ("hidden", str(g.hidden_size)),
                ("layers", str(g.num_hidden_layers)),
                ("heads / kv heads", f"{g.num_attention_heads} / {g.num_key_value_heads}"),
                ("head_dim", str(g.head_dim)),
                ("vocab", str(g.vocab_size)),
                ("dtype", str(g.dtype)),
            ]
        if isinstance(side, DraftFacts) and side.kind:
            detail.append(("draft kind", f"{side.kind} ({side.style or '—'})"))
            detail += [("evidence", e) for e in side.evidence]
        b.add(Node(f"side:{side.role}", "Run", f"{side.role} model", "model", detail=detail))
    for ph in plan.phases:
        node = b.add(
            Node(
                f"phase:{ph.phase}",
                "Phases",
                f"{ph.phase} {ph.mode}",
                "phase",
                phase=ph.phase,
                detail=[
                    ("mode", ph.mode),
                    ("decode query len", str(ph.decode_query_len)),
                    ("descriptors", str(ph.descriptor_count)),
                    ("padding rule", ph.padding_rule),
                    *[("note", n) for n in ph.notes],
                ],
            )
        )
        for (num_tokens, num_reqs), dmode, uniform in zip(
            ph.descriptors, ph.descriptor_modes, ph.uniform_token_counts, strict=True
        ):
            reqs = "—" if num_reqs is None else str(num_reqs)
            graph = b.add(
                Node(
                    f"graph:{ph.phase}:{dmode}:{num_tokens}:{reqs}",
                    "Graphs",
                    f"{ph.phase} {dmode}(tokens={num_tokens}, reqs={reqs})",
                    "planned-graph",
                    phase=ph.phase,
                    detail=[
                        ("phase", ph.phase),
                        ("mode", dmode),
                        ("num_tokens", str(num_tokens)),
                        ("num_reqs", reqs),
                        ("uniform tokens", str(uniform or "—")),
                        ("padding rule", ph.padding_rule),
                    ],
                )
            )
            b.link(node.id, graph.id)
    plan_detail = [
        ("framework", plan.framework),
        ("behavior", plan.behavior),
        ("attention backend", plan.attention_backend),
        ("K", str(plan.num_speculative_tokens)),
        ("mode", f"{plan.requested_mode} → {plan.resolved_mode}"),
        ("capture sizes", ", ".join(map(str, plan.capture_sizes))),
        *[("downgrade", d) for d in plan.downgrades],
    ]
    b.add(Node("plan", "Run", "capture plan", "plan", detail=plan_detail))
    m = run.memory
    b.add(
        Node(
            "memory",
            "Pools",
            f"memory {m.label}",
            "estimate",
            bytes=m.dedicated_pool_extra_bytes,
            detail=[
                ("target weights", fmt_bytes(m.target_weight_bytes)),
                ("draft weights", fmt_bytes(m.draft_weight_bytes)),
                ("KV/token target", fmt_bytes(m.kv_bytes_per_token_target)),
                ("KV/token draft", fmt_bytes(m.kv_bytes_per_token_draft)),
                ("draft transient peak", fmt_bytes(m.draft_transient_peak_bytes)),
                ("dedicated pool extra", fmt_bytes(m.dedicated_pool_extra_bytes)),
                *[("note", n) for n in m.notes],
            ],
        )
    )
    seen: set[int] = set()
    for i, f in enumerate([*run.findings, *plan.findings]):
        if id(f) in seen:
            continue
        seen.add(id(f))
        node = _finding(b, f, i)
        if f.phase and f"phase:{f.phase}" in b.nodes:
            b.link(node.id, f"phase:{f.phase}")


# --- triage ----------------------------------------------------------------------------------


def _triage(b: _Builder, run: TriageResult) -> None:
    for i, f in enumerate(run.findings):
        _finding(b, f, i)
    rules = {f.kind: f"finding:{i}" for i, f in enumerate(run.findings) if f.kind}
    for a in run.alternatives:
        rules.setdefault(
            a.category,
            b.add(
                Node(
                    f"alternative:{a.category}",
                    "Rules",
                    f"alternative {a.category}",
                    "alternative",
                    detail=[
                        ("category", a.category),
                        ("score", f"{a.score:.2f}"),
                        ("confidence", f"{a.confidence:.2f}"),
                    ],
                )
            ).id,
        )
    lines = ([run.primary_error] if run.primary_error else []) + run.secondary_errors
    lines += run.evidence
    for ev in lines:
        if f"line:{ev.line}" in b.nodes:
            continue  # the primary error is also in the evidence list
        node = b.add(
            Node(
                f"line:{ev.line}",
                "Evidence",
                f"L{ev.line} {ev.signal}",
                "evidence",
                severity="error" if ev.role in ("primary", "error") else None,
                detail=[
                    ("line", str(ev.line)),
                    ("text", ev.text),
                    ("signal (rule)", ev.signal),
                    ("role", ev.role),
                    ("category", ev.category or "—"),
                    ("weight", f"{ev.weight:.2f}"),
                ],
            )
        )
        signal = b.add(Node(f"signal:{ev.signal}", "Rules", ev.signal, "signal", detail=[]))
        signal.detail.append(("matched", f"L{ev.line} ({ev.role}, weight {ev.weight:.2f})"))
        b.link(node.id, signal.id)
        if ev.category in rules:
            b.link(node.id, rules[ev.category])
            b.link(signal.id, rules[ev.category])
    for j, fx in enumerate(run.fixes):
        fix = b.add(
            Node(
                f"fix:{j}",
                "Hazards",
                fx.ref,
                "upstream-fix",
                detail=[("ref", fx.ref), ("summary", fx.summary), ("why", fx.why)],
            )
        )
        for fid in rules.values():
            if fid.startswith("finding:"):
                b.link(fid, fix.id)
        for hazard in _hazards_by_ref(fx.ref):
            b.link(fix.id, _hazard(b, hazard).id)
    for cap in run.phase.captures:
        b.add(
            Node(
                f"capture:{cap.name}:{cap.begin_line}",
                "Phases",
                f"{cap.name} {cap.mode or ''}".strip(),
                "log-capture",
                detail=[
                    ("lines", f"{cap.begin_line}..{cap.end_line or cap.last_line}"),
                    ("progress", f"{cap.done}/{cap.total}"),
                    ("finished", str(cap.finished)),
                ],
            )
        )
    b.add(
        Node(
            "verdict",
            "Run",
            f"verdict {run.category}",
            "verdict",
            detail=[
                ("category", run.category),
                ("confidence", f"{run.confidence:.2f}"),
                ("phase at failure", run.phase.at_failure),
                *[("alternative", f"{a.category} {a.confidence:.2f}") for a in run.alternatives],
                *[("check", c) for c in run.checks],
                ("reproduce", run.reproduce or "—"),
            ],
        )
    )
    for j, known in enumerate(run.similar):
        node = b.add(
            Node(
                f"similar:{j}",
                "Similar",
                f"{known.id} {known.category}",
                "known-report",
                detail=[
                    ("title", known.title),
                    ("url", known.url),
                    ("engine", f"{known.engine} {known.version or ''}".strip()),
                    ("category", known.category),
                    ("score", f"{known.score:.2f}"),
                    ("shared terms", ", ".join(known.shared_terms) or "—"),
                    ("shared facts", ", ".join(known.shared_facts) or "—"),
                    ("root cause", known.root_cause or "—"),
                    ("fix", known.fix or "—"),
                ],
            )
        )
        b.link("verdict", node.id)


# --- the run kinds ---------------------------------------------------------------------------


def _model(run: Any) -> Any:
    return run.config.get("model", "")


# each run kind the explorer arranges: its title's name, its nodes, and what the title names
_RUN_KINDS: tuple[tuple[type, str, Callable[[_Builder, Any], None], Callable[[Any], Any]], ...] = (
    (ProbeRun, "probe", _probe, _model),
    (MemdiffRun, "memdiff", _memdiff, _model),
    (CaptureRun, "capture", lambda b, run: _capture(b, run, prefix=""), _model),
    (InspectReport, "inspect", _inspect, lambda run: run.root),
    (TriageResult, "triage", _triage, lambda run: run.source),
)
