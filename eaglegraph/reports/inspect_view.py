"""Terminal view of `eaglegraph inspect`: sides, draft facts, capture plan, memory, findings."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from eaglegraph.known.versions import ENGINE_LABELS
from eaglegraph.reports.findings_view import render_findings
from eaglegraph.reports.format import fmt_bytes, fmt_count, fmt_sizes
from eaglegraph.reports.prediction_view import render_prediction
from eaglegraph.results.inspect import InspectReport, PlanFacts, SideFacts
from eaglegraph.results.ranks import RankSide, RankSizing


def _head_dim(s: SideFacts) -> str:
    g = s.geometry
    assert g is not None
    m = g.mla
    if m is None:
        return f"{g.head_dim} ({'explicit' if g.head_dim_explicit else 'derived'})"
    qk = m.qk_nope_head_dim + m.qk_rope_head_dim
    return (
        f"MLA qk {qk} ({m.qk_nope_head_dim}+{m.qk_rope_head_dim} rope) / v {m.v_head_dim}, "
        f"latent {m.kv_lora_rank}+{m.qk_rope_head_dim} [dim](config head_dim {g.head_dim} "
        "unused)[/dim]"
    )


_GEOMETRY_ROWS = (
    ("architecture", lambda s: s.architecture or "—"),
    ("hidden_size", lambda s: str(s.geometry.hidden_size)),
    ("intermediate_size", lambda s: str(s.geometry.intermediate_size)),
    ("num_hidden_layers", lambda s: str(s.geometry.num_hidden_layers)),
    (
        "heads / kv heads",
        lambda s: f"{s.geometry.num_attention_heads} / {s.geometry.num_key_value_heads}",
    ),
    ("head_dim", lambda s: _head_dim(s)),
    ("vocab_size", lambda s: str(s.geometry.vocab_size)),
    (
        "rope",
        lambda s: (
            f"{s.geometry.rope.rope_type} θ={s.geometry.rope.rope_theta:g}"
            + (f" ×{s.geometry.rope.factor:g}" if s.geometry.rope.factor else "")
            + f" [dim]({s.geometry.rope.source})[/dim]"
        ),
    ),
    ("max_position_embeddings", lambda s: str(s.geometry.max_position_embeddings)),
    ("dtype", lambda s: s.geometry.dtype or "unset"),
    ("tie_word_embeddings", lambda s: str(s.geometry.tie_word_embeddings).lower()),
    (
        "parameters",
        lambda s: (
            fmt_count(s.weights.parameter_count)
            if s.weights.parameter_count is not None
            else f"~{fmt_count(s.estimated_parameter_count)} [dim](from config)[/dim]"
        ),
    ),
    (
        "weights",
        lambda s: (
            f"{s.weights.format}: {len(s.weights.files)} file(s), "
            f"{s.weights.tensor_count} tensors, {fmt_bytes(s.weights.weight_bytes)}"
            if s.weights.format == "safetensors"
            else s.weights.format
        ),
    ),
)


def _sides_table(report: InspectReport) -> Table:
    table = Table(title=f"{report.root}  [dim]({report.layout})[/dim]", title_justify="left")
    table.add_column("")
    draft = report.draft if report.draft is not None and report.draft.present else None
    sides: list[SideFacts | None] = [report.target, draft]
    for name, side in zip(("target", "draft"), sides, strict=True):
        table.add_column(name if side else f"{name} [dim](absent)[/dim]")
    for label, fn in _GEOMETRY_ROWS:
        table.add_row(label, *[fn(s) if s else "—" for s in sides])
    return table


def _facts_table(report: InspectReport) -> Table | None:
    f = report.draft
    if f is None or f.kind is None:
        return None
    table = Table(title="Draft", title_justify="left", show_header=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    supported = "" if f.supported else " [yellow](recognised, not supported by the rig)[/yellow]"
    table.add_row("kind", f"{f.kind}{' / ' + f.style if f.style else ''}{supported}")
    table.add_row("evidence", "; ".join(f.evidence))
    if f.mtp_layers and not f.kind_facts:
        table.add_row("MTP layers", str(f.mtp_layers))
    for label, value in f.kind_facts:
        table.add_row(label, value)
    if f.supported and not f.kind_facts:  # kinds that describe themselves say it all
        fc = f"{f.fc_in_features} ({f.fc_in_source})" if f.fc_in_features else "—"
        if f.expected_fc_in and f.fc_in_features != f.expected_fc_in:
            fc += f" [red]expected {f.expected_fc_in}[/red]"
        table.add_row("fc input width", fc)
        table.add_row("draft vocab", str(f.draft_vocab_size))
        maps = []
        if f.d2t_shape:
            maps.append(f"d2t {f.d2t_shape}")
        if f.t2d_shape:
            maps.append(f"t2d {f.t2d_shape}")
        table.add_row("vocab maps", ", ".join(maps) or "none")
    if f.supported:
        table.add_row("embed_tokens / lm_head", f"{f.embed_tokens} / {f.lm_head}")
    if f.aux is not None:
        ids = (
            f.aux.layer_ids
            if f.aux.layer_ids is not None
            else f"default {f.aux.vllm_entering_layers}"
        )
        table.add_row("aux layer ids", f"{ids} [dim]({f.aux.source})[/dim]")
        table.add_row(
            "aux taps",
            f"vLLM: outputs of layers {f.aux.vllm_taps}   SGLang: outputs of layers {f.aux.sglang_taps}",
        )
    if f.verifier:
        table.add_row("verifier", f.verifier)
    for note in f.notes:
        table.add_row("note", note)
    return table


def _plan_table(report: InspectReport) -> Table:
    p = report.plan
    title = (
        f"Capture plan — {p.framework}, {p.behavior}, {p.attention_backend}, "
        f"K={p.num_speculative_tokens}, max_num_seqs={p.max_num_seqs}"
    )
    r = report.ranks
    if r is not None and r.world_size > 1:
        title += f", {r.layout_description} ({r.world_size} ranks)"
    table = Table(
        title=title, title_justify="left", caption=_plan_caption(p), caption_justify="left"
    )
    table.add_column("phase", style="bold", no_wrap=True)
    table.add_column("mode", no_wrap=True)
    table.add_column("graphs", justify="right")
    table.add_column("padding", overflow="fold")
    for ph in p.phases:
        table.add_row(ph.phase, ph.mode, str(ph.descriptor_count), ph.padding_rule)
    return table


def _plan_caption(p: PlanFacts) -> str:
    """GPU, the backend's support level and the engine defaults the plan used."""
    parts = []
    if p.profile:
        label = ENGINE_LABELS.get(p.profile["engine"], p.profile["engine"])
        parts.append(f"{p.profile['name']} = {label} {p.profile['releases']}")
    if p.runner_why:
        runner = f"runner {p.runner.upper()}: " if p.runner else ""
        parts.append(f"{runner}{p.runner_why}")
    parts += [f"{p.gpu.get('name')} (SM {p.gpu.get('capability')})"] if p.gpu else []
    if p.attention_support:
        parts.append(f"{p.attention_support.get('level')}: {p.attention_support.get('reason')}")
    if p.breakable:
        parts.append("breakable graphs")
    parts += p.defaults
    return "; ".join(str(x) for x in parts)


def _memory_table(report: InspectReport) -> Table:
    m = report.memory
    table = Table(title=f"Memory ({m.label}, {m.dtype})", title_justify="left", show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_column(style="dim", overflow="fold")
    table.add_row("target weights", fmt_bytes(m.target_weight_bytes), m.weights_source)
    table.add_row("draft weights", fmt_bytes(m.draft_weight_bytes), m.weights_source)
    table.add_row(
        "KV per token (target)", fmt_bytes(m.kv_bytes_per_token_target), m.kv_target_layers
    )
    table.add_row("KV per token (draft)", fmt_bytes(m.kv_bytes_per_token_draft), "")
    table.add_row(
        "target logits",
        fmt_bytes(m.target_logits_bytes),
        f"fp32 at {m.largest_capture_tokens} tokens",
    )
    table.add_row("draft logits", fmt_bytes(m.draft_logits_bytes), "fp32, largest draft rows")
    table.add_row(
        "dedicated EAGLE pool extra",
        fmt_bytes(m.dedicated_pool_extra_bytes),
        "draft transient peak reserved a second time (vLLM 0.22)",
    )
    if m.graph_memory_bytes is not None:
        where = (
            "profiled, taken out of the KV budget"
            if m.graph_memory_in_kv_budget
            else "captured after the KV cache, outside gpu_memory_utilization"
        )
        if m.graph_memory_source != "estimate":
            where = f"{m.graph_memory_source}; {where}"
        table.add_row("graph memory", fmt_bytes(m.graph_memory_bytes), where)
        _kv_budget_row(table, report)
    return table


def _kv_budget_row(table: Table, report: InspectReport) -> None:
    """The single-GPU KV budget; never a negative figure (it does not fit), and left to the
    per-rank section when the layout has several ranks."""
    m, r = report.memory, report.ranks
    if r is not None and r.world_size > 1:
        return
    if (r is not None and r.fits is False) or m.kv_shortfall_bytes or (m.kv_budget_bytes or 0) < 0:
        short = r.shortfall_bytes if r is not None else m.kv_shortfall_bytes
        why = f"short by {fmt_bytes(short)}" if short else "weights exceed the GPU"
        table.add_row("KV budget", "none", f"does not fit: {why}")
        return
    tokens = f"{m.kv_budget_tokens:,} tokens" if m.kv_budget_tokens else ""
    table.add_row("KV budget", fmt_bytes(m.kv_budget_bytes), tokens)


def _side_rows(table: Table, s: RankSide) -> None:
    heads = f"{s.attention_heads} of {s.total_attention_heads} heads"
    if s.kv_heads is None:
        kv = "MLA latent row, not sharded"
    elif s.kv_head_replicas > 1:
        kv = f"{s.kv_heads} KV head (of {s.total_kv_heads}) ×{s.kv_head_replicas} replicas"
    else:
        kv = f"{s.kv_heads} of {s.total_kv_heads} KV heads"
    split = f"TP {s.tensor_parallel}"
    if s.attention_tensor_parallel not in (None, s.tensor_parallel):
        split += f", attention TP {s.attention_tensor_parallel}"
    table.add_row(f"{s.role} weights", fmt_bytes(s.weight_bytes), split)
    table.add_row(f"{s.role} attention", heads, kv)
    table.add_row(f"{s.role} KV / token", fmt_bytes(s.kv_bytes_per_token), "")
    if s.experts is not None:
        table.add_row(f"{s.role} experts", f"{s.experts} of {s.total_experts}", s.experts_split)
    if s.vocab_rows is not None:
        table.add_row(
            f"{s.role} vocab rows", f"{s.vocab_rows:,}", f"of {s.total_vocab:,}, padded to 64"
        )


def _ranks_table(r: RankSizing) -> Table:
    """One rank of a TP/DP/EP layout: shares, buffers, and the KV budget that is left."""
    title = f"Per rank — {r.layout_description} on {r.gpu or '?'} ({r.world_size} ranks)"
    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(justify="right", no_wrap=True)
    table.add_column(style="dim", overflow="fold")
    for side in (r.target, r.draft):
        if side is not None:
            _side_rows(table, side)
    where = "same plan on every rank" + (
        ", taken out of the KV budget" if r.graph_memory_in_kv_budget else ""
    )
    table.add_row("graph memory", fmt_bytes(r.graph_memory_bytes), where)
    for c in r.comm:
        table.add_row(c.name, fmt_bytes(c.bytes), c.note or c.source)
    if r.fits is False:
        table.add_row("KV budget", "none", f"does not fit: short by {fmt_bytes(r.shortfall_bytes)}")
    elif r.fits:
        tokens = f"{r.kv_budget_tokens:,} tokens" if r.kv_budget_tokens else ""
        table.add_row("KV budget", fmt_bytes(r.kv_budget_bytes), tokens)
    for change in r.plan_changes:
        table.add_row("plan", "", change)
    for note in r.notes:
        table.add_row("note", "", note)
    return table


def _sizing_table(report: InspectReport) -> Table | None:
    """The target sized from its config: each figure with where it came from."""
    s = report.target.sizing if report.target is not None else None
    if s is None:
        return None
    table = Table(title="Target sizing (config)", title_justify="left", show_header=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(justify="right", no_wrap=True)
    table.add_column(style="dim", overflow="fold")
    table.add_row("parameters", fmt_count(s.parameters), s.parameters_source)
    if s.mtp_parameters:
        table.add_row("MTP modules", fmt_count(s.mtp_parameters), "stored past the stack")
    table.add_row("weights", fmt_bytes(s.weight_bytes), s.weight_bytes_source)
    if s.checkpoint_weight_bytes != s.weight_bytes:
        table.add_row("checkpoint", fmt_bytes(s.checkpoint_weight_bytes), "with MTP modules")
    table.add_row("load dtype", s.load_dtype, s.load_dtype_source)
    kinds = ", ".join(f"{n} {k.split('_')[0]}" for k, n in s.layer_kinds.items())
    table.add_row("layers", kinds, s.layer_kinds_source)
    if s.sliding_window:
        table.add_row("sliding window", str(s.sliding_window), "tokens a sliding layer keeps")
    if s.state_bytes_per_request_layer:
        table.add_row(
            "state / request",
            fmt_bytes(s.state_bytes_per_request_layer),
            "per linear-attention / Mamba layer (no KV)",
        )
    if s.vision_parameters:
        table.add_row("vision tower", fmt_count(s.vision_parameters), "weights only, no KV")
    for note in s.notes:
        table.add_row("note", "", note)
    return table


def render_inspect(report: InspectReport, console: Console) -> None:
    console.print(_sides_table(report))
    sizing = _sizing_table(report)
    if sizing is not None:
        console.print(sizing)
    if report.missing:
        console.print(f"[yellow]{report.missing}[/yellow]")
    facts = _facts_table(report)
    if facts is not None:
        console.print(facts)
    p = report.plan
    console.print(
        f"[bold]capture sizes[/bold] ({len(p.capture_sizes)}): {fmt_sizes(p.capture_sizes)}"
        + (
            f"  [dim](rounded to multiples of K+1={p.num_speculative_tokens + 1} from "
            f"{len(p.capture_sizes_before_rounding)} sizes)[/dim]"
            if p.sizes_were_rounded
            else ""
        )
    )
    mode_line = f"[bold]mode[/bold]: requested {p.requested_mode} → resolved {p.resolved_mode}"
    console.print(mode_line)
    for reason in p.downgrades:
        console.print(f"  [yellow]{reason}[/yellow]")
    console.print(_plan_table(report))
    for ph in p.phases:
        for note in ph.notes:
            console.print(f"  [dim]{ph.phase}: {note}[/dim]")
    console.print(_memory_table(report))
    if report.ranks is not None and report.ranks.world_size > 1:
        console.print(_ranks_table(report.ranks))
    render_prediction(report.memory_prediction, console)
    render_findings(report.findings, console)
