"""Torch modules for targets (Llama, Qwen2, Qwen3, Mistral) and drafts (one module per kind
under models/drafts/), with loading and random init. Attention is a callback so the rig's
paged kernels (and the probe) own the KV cache.
"""

from __future__ import annotations

from eaglegraph.models.drafts import (
    Draft,
    DraftArch,
    DraftStep,
    draft_build,
    load_draft,
    random_draft,
)
from eaglegraph.models.drafts.eagle1 import Eagle1Draft
from eaglegraph.models.drafts.eagle3 import Eagle3Draft
from eaglegraph.models.init import random_target
from eaglegraph.models.layers import AttentionFn, LayerSpec
from eaglegraph.models.loading import load_target, resolve_dtype
from eaglegraph.models.rope import build_cos_sin_cache, cache_length, rope_extras_from_config
from eaglegraph.models.target import TargetModel, target_family

__all__ = [
    "AttentionFn",
    "Draft",
    "DraftArch",
    "DraftStep",
    "Eagle1Draft",
    "Eagle3Draft",
    "LayerSpec",
    "TargetModel",
    "build_cos_sin_cache",
    "cache_length",
    "draft_build",
    "load_draft",
    "load_target",
    "random_draft",
    "random_target",
    "resolve_dtype",
    "rope_extras_from_config",
    "target_family",
]
