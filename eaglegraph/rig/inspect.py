"""`inspect`: the pair's facts, the capture plan and a memory estimate, as one report.

The live objects (pair, plan, estimate) are turned into the plain records of
`results.inspect` here, once; the view and `--json` both read those records.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

from eaglegraph.known.profiles import get_profile
from eaglegraph.pair import Pair, load_pair
from eaglegraph.pair.facts import DraftFacts as PairDraftFacts
from eaglegraph.pair.geometry import Geometry
from eaglegraph.pair.mla import mla_dims
from eaglegraph.pair.model import ModelSide
from eaglegraph.pair.presets import resolve_model_arg
from eaglegraph.results.inspect import (
    DraftFacts,
    GeometryFacts,
    InspectReport,
    MLAFacts,
    PhasePlanFacts,
    PlanFacts,
    SideFacts,
)
from eaglegraph.rig.estimate import estimate_memory
from eaglegraph.rig.plan import CapturePlan, build_plan
from eaglegraph.rig.speculators import speculator_plan


def open_pair(
    model: str | Path | None, target: str | Path | None = None, draft: str | Path | None = None
) -> Pair:
    """load_pair for CLI arguments: MODEL_DIR may be a preset name."""
    path = resolve_model_arg(model) if model is not None else None
    return load_pair(
        path,
        Path(target).expanduser() if target is not None else None,
        Path(draft).expanduser() if draft is not None else None,
    )


def inspect_pair(pair: Pair, plan_options: Any, dtype: str | None = None) -> InspectReport:
    _, plan = speculator_plan(pair, build_plan(plan_options))  # the draft phases its kind runs
    memory = estimate_memory(pair, plan, dtype)
    return InspectReport(
        root=str(pair.root),
        layout=pair.layout,
        missing=pair.missing,
        target=_side(pair.target, SideFacts) if pair.target is not None else None,
        draft=_draft(pair.draft, pair.draft_facts),
        plan=plan_facts(plan),
        memory=memory,
        findings=pair.findings + plan.findings,
    )


def _geometry(g: Geometry, mla: MLAFacts | None) -> GeometryFacts:
    """The pair's geometry as the report's record: the same fields (the rope record is the
    pair's own), plus the MLA ranks where the config has them."""
    own = {f.name: getattr(g, f.name) for f in fields(GeometryFacts) if f.name != "mla"}
    return GeometryFacts(**own, mla=mla)


def _side(side: ModelSide, cls: type[SideFacts]) -> Any:
    mla = mla_dims(side.config)
    ranks = None if mla is None else MLAFacts(
        mla.q_lora_rank, mla.kv_lora_rank, mla.qk_nope_head_dim, mla.qk_rope_head_dim,
        mla.v_head_dim,
    )  # fmt: skip
    geometry = _geometry(side.geometry, ranks)
    return cls(
        role=side.role,
        path=str(side.path),
        architecture=side.architecture,
        geometry=geometry,
        weights=side.weights,
        parameter_count=side.weights.parameter_count,
        estimated_parameter_count=side.estimated_parameter_count,
    )


_SHARED_DRAFT_FIELDS = tuple(
    sorted(
        ({f.name for f in fields(DraftFacts)} & {f.name for f in fields(PairDraftFacts)})
        - {"kind", "kind_facts"}
    )
)


def _draft(side: ModelSide | None, facts: PairDraftFacts | None) -> DraftFacts | None:
    if side is None and facts is None:
        return None
    draft = (
        _side(side, DraftFacts)
        if side is not None
        else DraftFacts(role="draft", path=None, architecture=None, geometry=None)
    )
    if facts is None:
        return draft
    # every fact the pair derived is the record's field of the same name; copies, so the
    # report never aliases the pair's lists
    for name in _SHARED_DRAFT_FIELDS:
        value = getattr(facts, name)
        setattr(draft, name, list(value) if isinstance(value, list) else value)
    aux = facts.aux
    draft.kind = facts.kind.value
    draft.supported = facts.kind.supported
    draft.kind_facts = [[label, value] for label, value in facts.kind_facts]
    draft.aux_layer_ids = aux.layer_ids if aux else None
    draft.aux_layer_ids_effective = aux.vllm_entering_layers if aux else None
    return draft


def plan_facts(plan: CapturePlan) -> PlanFacts:
    """The plan as plain data: mode names instead of enums, descriptors as records."""
    return PlanFacts(
        framework=plan.framework,
        behavior=plan.behavior,
        attention_backend=plan.attention_backend,
        num_speculative_tokens=plan.num_speculative_tokens,
        max_num_seqs=plan.max_num_seqs,
        max_num_batched_tokens=plan.max_num_batched_tokens,
        requested_mode=plan.requested_mode.name,
        resolved_mode=plan.resolved_mode.name,
        downgrades=list(plan.downgrades),
        capture_sizes=list(plan.capture_sizes),
        capture_sizes_before_rounding=list(plan.capture_sizes_before_rounding),
        phases=[
            PhasePlanFacts(
                phase=p.phase,
                mode=p.mode.name,
                decode_query_len=p.decode_query_len,
                descriptor_count=p.descriptor_count,
                descriptors=[[d.num_tokens, d.num_reqs] for d in p.descriptors],
                padding_rule=p.padding_rule,
                notes=list(p.notes),
                descriptor_modes=[d.mode.name for d in p.descriptors],
                uniform_token_counts=[d.uniform_token_count for d in p.descriptors],
                graph_count=p.graph_count,
                fused_steps=p.fused_steps,
            )
            for p in plan.phases
        ],
        findings=list(plan.findings),
        gpu=dict(plan.gpu),
        attention_support=dict(plan.attention_support),
        breakable=plan.breakable,
        trtllm_artifacts=plan.trtllm_artifacts,
        defaults=list(plan.defaults),
        graph_memory_profiling=plan.graph_memory_profiling,
        profile=profile_facts(plan.behavior),
    )


def profile_facts(name: str) -> dict[str, str]:
    """Which profile a plan was built under and the releases it stands for."""
    prof = get_profile(name)
    return {
        "name": prof.name,
        "engine": prof.engine,
        "releases": prof.versions.describe(),
        "summary": prof.summary,
    }
