"""The draft-kind registry's torch side: `models/drafts/<kind>.py` exports `BUILD`.

A build maps a kind to its module, weight loader, random init, the arch it derives from the
pair's facts, the target states it consumes (`aux_layer_ids`), its KV layers and its dense
reference drafting (`dense_drafts`). The rig and the probe's reference read these hooks, never
the kind. The on-disk side, and the speculator style the kind drafts with, live in
`pair/drafts/<kind>.py`, torch-free.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import torch

from eaglegraph.errors import BadInput
from eaglegraph.models.drafts.base import (
    BuildArgs,
    Draft,
    DraftArch,
    DraftBuild,
    DraftStep,
    Verified,
)
from eaglegraph.models.init import generator
from eaglegraph.models.loading import folder_rope_extras, open_index, resolve_dtype
from eaglegraph.models.target import TargetModel
from eaglegraph.pair.geometry import Geometry
from eaglegraph.pair.kinds import DraftKind, all_specs

__all__ = [
    "BuildArgs",
    "Draft",
    "DraftArch",
    "DraftBuild",
    "DraftStep",
    "Verified",
    "draft_build",
    "load_draft",
]


def _supported() -> str:
    return ", ".join(s.kind.value for s in all_specs() if s.supported)


@cache
def draft_build(kind: DraftKind | str) -> DraftBuild:
    """The torch side of a kind; BadInput for kinds the rig does not build."""
    kind = DraftKind(kind)
    if not kind.supported:
        raise BadInput(f"unsupported draft kind {kind.value!r} (supported: {_supported()})")
    build: DraftBuild = importlib.import_module(f"eaglegraph.models.drafts.{kind.value}").BUILD
    return build


def _args(
    geometry: Geometry,
    target: TargetModel,
    dtype: torch.dtype | str,
    device: torch.device | str,
    layer_offset: int | None,
    max_positions: int | None,
    rope_extras: Mapping[str, Any] | None,
) -> BuildArgs:
    offset = target.num_layers if layer_offset is None else layer_offset
    return BuildArgs(
        geometry, resolve_dtype(dtype), torch.device(device), offset, max_positions, rope_extras
    )


def random_draft(
    geometry: Geometry,
    arch: DraftArch,
    target: TargetModel,
    dtype: torch.dtype | str,
    device: torch.device | str,
    seed: int,
    *,
    layer_offset: int | None = None,
    max_positions: int | None = None,
    rope_extras: Mapping[str, Any] | None = None,
) -> Draft:
    """A draft of `arch.kind` with seeded random weights, sharing what the kind shares."""
    build = draft_build(arch.kind)
    args = _args(geometry, target, dtype, device, layer_offset, max_positions, rope_extras)
    return build.random(arch, target, args, generator(args.device, seed))


def load_draft(
    folder: Path | str,
    geometry: Geometry,
    arch: DraftArch,
    target: TargetModel,
    dtype: torch.dtype | str,
    device: torch.device | str,
    layer_offset: int | None = None,
    *,
    max_positions: int | None = None,
    rope_extras: Mapping[str, Any] | None = None,
) -> Draft:
    """A draft of `arch.kind` from its folder; `layer_offset` defaults to the target's layers."""
    build = draft_build(arch.kind)
    folder = Path(folder)
    index = open_index(folder)
    rope = folder_rope_extras(folder) if rope_extras is None else rope_extras
    args = _args(geometry, target, dtype, device, layer_offset, max_positions, rope)
    return build.load(index, arch, target, args)
