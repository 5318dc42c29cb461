"""`inspect`: the pair's facts, the capture plan and a memory estimate, as one report.

The live objects (pair, plan, estimate) are turned into the plain records of
`results.inspect` here, once; the view and `--json` both read those records.
"""

from __future__ import annotations

from copy import copy
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar

from eaglegraph.known.profiles import get_profile
from eaglegraph.pair import Pair, load_pair
from eaglegraph.pair.checks import for_engine
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
from eaglegraph.rig.drafting import draft_plan
from eaglegraph.rig.estimate import estimate_memory
from eaglegraph.rig.plan import CapturePlan, build_plan

R = TypeVar("R")


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
    plan = draft_plan(pair, build_plan(plan_options))  # the draft phases its kind runs
    memory = estimate_memory(pair, plan, dtype)
    return InspectReport(
        root=str(pair.root),
        layout=pair.layout,
        missing=pair.missing,
        target=(_side(pair.target, SideFacts, plan.framework) if pair.target is not None else None),
        draft=_draft(pair.draft, pair.draft_facts),
        plan=plan_facts(plan),
        memory=memory,
        findings=for_engine(pair.findings, plan.framework) + plan.findings,
    )


def _geometry(g: Geometry, mla: MLAFacts | None) -> GeometryFacts:
    """The pair's geometry as the report's record: the same fields (the rope record is the
    pair's own), plus the MLA ranks where the config has them."""
    return _record(GeometryFacts, g, mla=mla)


def _side(side: ModelSide, cls: type[SideFacts], engine: str | None = None) -> Any:
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
        sizing=side.sizing(engine) if engine is not None else None,  # the target's
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
    phases = [
        _record(
            PhasePlanFacts,
            p,
            mode=p.mode.name,
            descriptors=[[d.num_tokens, d.num_reqs] for d in p.descriptors],
            descriptor_modes=[d.mode.name for d in p.descriptors],
            uniform_token_counts=[d.uniform_token_count for d in p.descriptors],
        )
        for p in plan.reported_phases()
    ]
    return _record(
        PlanFacts,
        plan,
        requested_mode=plan.requested_mode.name,
        resolved_mode=plan.resolved_mode.name,
        phases=phases,
        profile=profile_facts(plan.behavior),
    )


def _record(cls: type[R], source: object, **converted: Any) -> R:
    """`cls` filled from `source`'s attributes of the same names (lists and dicts copied, so
    the record never aliases the plan), and `converted` where a field's form differs."""
    values = dict(converted)
    for f in fields(cls):  # type: ignore[arg-type]
        if f.name not in values and hasattr(source, f.name):
            value = getattr(source, f.name)
            values[f.name] = copy(value) if isinstance(value, (list, dict)) else value
    return cls(**values)


def profile_facts(name: str) -> dict[str, str]:
    """Which profile a plan was built under and the releases it stands for."""
    prof = get_profile(name)
    return {
        "name": prof.name,
        "engine": prof.engine,
        "releases": prof.versions.describe(),
        "summary": prof.summary,
    }
