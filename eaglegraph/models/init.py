"""Seeded random weights from configs alone (`--random-weights`).

Weights are generated in place on the target device with a device `torch.Generator`, so an
8B model initialises in seconds on an H100 and never passes through host memory. Matrices
get normal(0, 0.02) (HF's initializer_range), norms 1 and biases 0: with pre-norm residual
layers that keeps activations O(1–10) through 32+ layers in bf16. The same seed on the same
device gives the same weights; parameters are visited in their registration order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from eaglegraph.errors import BadInput
from eaglegraph.models.draft import Draft, DraftArch, Eagle1Draft, Eagle3Draft
from eaglegraph.models.layers import RMSNorm
from eaglegraph.models.loading import resolve_dtype
from eaglegraph.models.target import TargetModel
from eaglegraph.pair.geometry import Geometry

INIT_STD = 0.02


def _generator(device: torch.device, seed: int) -> torch.Generator:
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return gen


@torch.no_grad()
def fill_random(module: nn.Module, gen: torch.Generator, std: float = INIT_STD) -> None:
    """Matrices ~ N(0, std), norm weights 1, biases 0, in registration order."""
    for sub in module.modules():
        for param in sub.parameters(recurse=False):
            if isinstance(sub, RMSNorm):
                param.fill_(1.0)
            elif param.dim() >= 2:
                param.normal_(0.0, std, generator=gen)
            else:
                param.zero_()


def random_target(
    geometry: Geometry,
    dtype: torch.dtype | str,
    device: torch.device | str,
    seed: int,
    *,
    max_positions: int | None = None,
    rope_extras: Mapping[str, Any] | None = None,
) -> TargetModel:
    dev = torch.device(device)
    model = TargetModel(
        geometry, resolve_dtype(dtype), dev, max_positions=max_positions, rope_extras=rope_extras
    )
    fill_random(model, _generator(dev, seed))
    return model


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
    """A draft sharing the target's embedding (and, for EAGLE-1, its lm_head).

    EAGLE-3's d2t maps the draft vocabulary onto a sorted random subset of the target's,
    as a real frequency-ranked table would (non-decreasing offsets, all ids valid).
    """
    if arch.kind not in ("eagle1", "eagle3"):
        raise BadInput(f"unsupported draft kind {arch.kind!r} (supported: eagle1, eagle3)")
    dev = torch.device(device)
    torch_dtype = resolve_dtype(dtype)
    offset = target.num_layers if layer_offset is None else layer_offset
    gen = _generator(dev, seed)
    draft: Draft
    if arch.kind == "eagle1":
        draft = Eagle1Draft(
            geometry,
            arch,
            target,
            layer_offset=offset,
            dtype=torch_dtype,
            device=dev,
            max_positions=max_positions,
            rope_extras=rope_extras,
        )
        fill_random(draft, gen)
        return draft
    draft = Eagle3Draft(
        geometry,
        arch,
        target,
        layer_offset=offset,
        dtype=torch_dtype,
        device=dev,
        own_lm_head=True,
        max_positions=max_positions,
        rope_extras=rope_extras,
    )
    fill_random(draft, gen)
    vocab, vocab_draft = target.vocab_size, draft.draft_vocab_size
    if vocab_draft < vocab:
        chosen = torch.randperm(vocab, generator=gen, device=dev)[:vocab_draft].sort().values
        draft.d2t.copy_(chosen - torch.arange(vocab_draft, device=dev))
    return draft
