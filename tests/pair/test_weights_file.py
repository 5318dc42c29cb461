"""The torch-free safetensors writer (`pair.weights_file`) writes what torch's `save_file` of
the torch-cast tensors writes, so presets materialise without torch and with the same weights.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from eaglegraph.pair.presets import PRESETS, _tiny_weights
from eaglegraph.pair.tensors import read_checkpoint
from eaglegraph.pair.weights_file import bfloat16_bits, save_safetensors


@pytest.mark.fast
def test_bfloat16_rounds_as_torch_does() -> None:
    rng = np.random.default_rng(0)
    edges = np.array(
        [1.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, 1.0 + 2**-9, -0.0, 1e-40, 3.4e38, -3.4e38, np.inf,
         -np.inf, np.nan],
        np.float32,
    )  # fmt: skip
    values = np.concatenate([edges, rng.standard_normal(50_000).astype(np.float32) * 7])
    expected = torch.from_numpy(values).to(torch.bfloat16).view(torch.int16).numpy()
    assert (bfloat16_bits(values) == expected.view(np.uint16)).all()


def _torch_written(tensors: dict[str, np.ndarray], path: Path, dtype: str) -> None:
    cast = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(dtype, torch.float32)
    out = {}
    for name, array in tensors.items():
        tensor = torch.from_numpy(np.ascontiguousarray(array))
        out[name] = tensor.to(cast) if tensor.is_floating_point() else tensor
    save_file(out, str(path), metadata={"format": "pt"})


@pytest.mark.fast
@pytest.mark.parametrize("preset", [n for n, p in PRESETS.items() if p.with_weights])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_a_preset_is_written_byte_for_byte_as_torch_wrote_it(
    preset: str, dtype: str, tmp_path: Path
) -> None:
    target, draft = _tiny_weights(PRESETS[preset])
    sides = [("target", target)] + ([("draft", draft)] if PRESETS[preset].draft else [])
    for side, tensors in sides:
        ours, theirs = tmp_path / f"{side}-ours", tmp_path / f"{side}-torch"
        ours.mkdir()
        theirs.mkdir()
        save_safetensors(tensors, ours / "model.safetensors", dtype)
        _torch_written(tensors, theirs / "model.safetensors", dtype)
        assert (ours / "model.safetensors").read_bytes() == (
            theirs / "model.safetensors"
        ).read_bytes(), (preset, side)
        index = read_checkpoint(ours)  # and the package reads it back as any checkpoint
        assert set(index.tensors) == set(tensors)
