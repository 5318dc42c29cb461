"""From parsed command-line values to a RigConfig (shared by capture, memdiff and probe)."""

from __future__ import annotations

from typing import Any

import torch

from eaglegraph.errors import BadInput, MissingEnvironment
from eaglegraph.pair.model import Pair
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.options import resolve_plan_options


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise MissingEnvironment("--device cuda: no CUDA device is available on this machine")
    if name not in ("cuda", "cpu"):
        raise BadInput(f"unknown device {name!r}; choose auto, cuda or cpu")
    return torch.device(name)


def rig_config(
    pair: Pair,
    plan_kwargs: dict[str, Any],
    *,
    device: str = "auto",
    dtype: str = "auto",
    max_model_len: int = 1024,
    random_weights: bool = False,
    seed: int = 0,
    guard: bool = False,
    num_blocks: int | None = None,
) -> RigConfig:
    hint = pair.draft_facts.speculative_tokens if pair.draft_facts else None
    options = resolve_plan_options(**plan_kwargs, default_num_speculative_tokens=hint)
    dev = resolve_device(device)
    if dev.type == "cpu":
        # the rig on CPU runs tiny tensors through Triton's interpreter: one thread avoids
        # OpenMP spin-waits that dominate such small ops
        torch.set_num_threads(1)
    if max_model_len < 16:
        raise BadInput(f"--max-model-len must be at least 16, got {max_model_len}")
    return RigConfig(
        options=options,
        device=dev,
        dtype=dtype,
        max_model_len=max_model_len,
        random_weights=random_weights,
        seed=seed,
        guard=guard,
        num_blocks=num_blocks,
    )
