"""`inspect`: the pair's facts, the capture plan and a memory estimate, as one report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eaglegraph.pair import Pair, load_pair
from eaglegraph.pair.model import ModelSide
from eaglegraph.pair.presets import resolve_model_arg
from eaglegraph.results.findings import Finding
from eaglegraph.rig.estimate import MemoryEstimate, estimate_memory
from eaglegraph.rig.plan import CapturePlan, build_plan
from eaglegraph.serial import to_jsonable

INSPECT_SCHEMA = "eaglegraph.inspect/1"


@dataclass
class InspectReport:
    pair: Pair
    plan: CapturePlan
    memory: MemoryEstimate
    findings: list[Finding] = field(default_factory=list)

    def _side(self, side: ModelSide | None) -> dict[str, Any] | None:
        if side is None:
            return None
        geometry = to_jsonable(side.geometry)
        geometry.pop("extra", None)
        out: dict[str, Any] = {
            "role": side.role,
            "path": str(side.path),
            "architecture": side.architecture,
            "geometry": geometry,
            "weights": to_jsonable(side.weights),
            "parameter_count": side.weights.parameter_count,
            "estimated_parameter_count": side.estimated_parameter_count,
        }
        return out

    def to_json(self) -> dict[str, Any]:
        draft = self._side(self.pair.draft)
        facts = self.pair.draft_facts
        if facts is not None:
            fact_json = to_jsonable(facts)
            if draft is None:
                draft = {"role": "draft", "path": None, "architecture": None, "geometry": None}
            draft.update(fact_json)
            draft["aux_layer_ids"] = facts.aux.layer_ids if facts.aux else None
            draft["aux_layer_ids_effective"] = facts.aux.vllm_entering_layers if facts.aux else None
        return {
            "root": str(self.pair.root),
            "layout": self.pair.layout,
            "missing": self.pair.missing,
            "target": self._side(self.pair.target),
            "draft": draft,
            "plan": self.plan.to_json(),
            "memory": to_jsonable(self.memory),
            "findings": to_jsonable(self.findings),
        }


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
    plan = build_plan(plan_options)
    memory = estimate_memory(pair, plan, dtype)
    return InspectReport(
        pair=pair, plan=plan, memory=memory, findings=pair.findings + plan.findings
    )
