"""Option resolution shared by every run: plan options with the draft's own K, and the device.

`probes.spec` calls these once per run (this module imports nothing of it: it stays free of
torch, for headers-only commands like inspect). Library callers that hold a pair and want a
rig without a spec use `probes.spec.rig_config`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from eaglegraph.errors import BadInput, MissingEnvironment
from eaglegraph.known.runner_rules import TargetFacts
from eaglegraph.pair.model import Pair
from eaglegraph.rig.options import PlanChoices, PlanOptions, resolve_plan_options

if TYPE_CHECKING:  # torch stays unimported for headers-only commands (inspect)
    import torch


def resolve_device(name: str) -> torch.device:
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise MissingEnvironment("--device cuda: no CUDA device is available on this machine")
    if name not in ("cuda", "cpu"):
        raise BadInput(f"unknown device {name!r}; choose auto, cuda or cpu")
    return torch.device(name)


def as_choices(plan: PlanChoices | Mapping[str, Any] | None) -> PlanChoices:
    """Plan choices from a library caller: the typed object, or its fields as a mapping."""
    if isinstance(plan, PlanChoices):
        return plan
    return PlanChoices(**(plan or {}))


def plan_options(
    pair: Pair,
    plan: PlanChoices | Mapping[str, Any] | None = None,
    *,
    engine_batch_defaults: bool = False,
    architecture: str | None = None,
    head_dim: int | None = None,
    runner_facts: bool = False,
) -> PlanOptions:
    """The plan options as the pair would run them: K defaults to what the draft declares.
    inspect passes the engine's batch defaults for the GPU and the target's own facts;
    `runner_facts`: the vLLM model runner is the one the release picks for this pair."""
    hint = pair.draft_facts.speculative_tokens if pair.draft_facts else None
    target, method = runner_inputs(pair) if runner_facts else (None, None)
    return resolve_plan_options(
        as_choices(plan),
        default_num_speculative_tokens=hint,
        engine_batch_defaults=engine_batch_defaults,
        architecture=architecture,
        head_dim=head_dim,
        target=target,
        draft_method=method,
    )


def runner_inputs(pair: Pair) -> tuple[TargetFacts | None, str | None]:
    """What picks the vLLM model runner for this pair: the target's architecture, MoE and
    quantization as its config states them, and the draft's `--speculative-config` method."""
    side, facts = pair.target, pair.draft_facts
    target = TargetFacts.from_config(side.architecture, side.config.data) if side else None
    methods = facts.kind.spec.engine_methods if facts and facts.kind.supported else ()
    return target, (methods[0] if methods else None)
