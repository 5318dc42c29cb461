"""Option resolution shared by every run: plan options with the draft's own K, and the device.

`probes.spec` calls these once per run (this module imports nothing of it: it stays free of
torch, for headers-only commands like inspect). Library callers that hold a pair and want a
rig without a spec use `probes.spec.rig_config`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from eaglegraph.errors import BadInput, MissingEnvironment
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
) -> PlanOptions:
    """The plan options as the pair would run them: K defaults to what the draft declares.
    inspect passes the engine's batch defaults for the GPU and the target's own facts."""
    hint = pair.draft_facts.speculative_tokens if pair.draft_facts else None
    return resolve_plan_options(
        as_choices(plan),
        default_num_speculative_tokens=hint,
        engine_batch_defaults=engine_batch_defaults,
        architecture=architecture,
        head_dim=head_dim,
    )
