"""Seeded random weights from configs alone (`--random-weights`).

Weights are generated in place on the target device with a device `torch.Generator`, so an
8B model initialises in seconds on an H100 and never passes through host memory. Matrices
get normal(0, 0.02) (HF's initializer_range), norms 1 and biases 0: with pre-norm residual
layers that keeps activations O(1–10) through 32+ layers in bf16. The same seed on the same
device gives the same weights; parameters are visited in their registration order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import torch
from torch import nn

from eaglegraph.models.layers import RMSNorm
from eaglegraph.models.loading import resolve_dtype
from eaglegraph.models.target import TargetModel
from eaglegraph.pair.geometry import Geometry

INIT_STD = 0.02


def generator(device: torch.device, seed: int) -> torch.Generator:
    # meta tensors (shape-only memory prediction) take a host generator and draw nothing
    gen = torch.Generator(device="cpu" if device.type == "meta" else device)
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


ModuleT = TypeVar("ModuleT", bound=nn.Module)


def seeded(model: ModuleT, device: torch.device, seed: int) -> ModuleT:
    """`model` with every weight drawn from `seed` on `device` (`fill_random`): one rule for
    every module built with `--random-weights`, whatever its kind."""
    fill_random(model, generator(device, seed))
    return model


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
    return seeded(model, dev, seed)
