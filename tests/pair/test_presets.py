"""Presets: real HF folders, deterministic, never written over user files."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from eaglegraph.errors import BadInput
from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import PRESETS, materialize, resolve_model_arg, scaffold


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(folder).as_posix().encode())
            h.update(p.read_bytes())
    return h.hexdigest()


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_load_with_their_kind(name: str) -> None:
    preset = PRESETS[name]
    pair = load_pair(materialize(name))
    in_target = preset.draft is None  # MTP layers inside the target checkpoint
    assert pair.layout == (
        "target/ only, target with MTP layers" if in_target else "target/ + draft/"
    )
    assert pair.kind == preset.kind
    assert pair.target is not None and pair.draft is not None
    assert (pair.target.weights.format == "safetensors") is preset.with_weights


def test_real_geometry_of_8b_presets() -> None:
    pair = load_pair(materialize("llama3.1-8b-eagle1"))
    g = pair.target.geometry  # type: ignore[union-attr]
    assert (g.hidden_size, g.num_hidden_layers, g.vocab_size, g.rope.rope_type) == (
        4096,
        32,
        128256,
        "llama3",
    )
    assert 7.9e9 < pair.target.estimated_parameter_count < 8.1e9  # type: ignore[union-attr]
    assert pair.draft_facts is not None and pair.draft_facts.fc_in_features == 8192
    q = load_pair(materialize("qwen3-8b-eagle3"))
    assert q.target.geometry.num_hidden_layers == 36 and q.draft_facts.draft_vocab_size == 32000  # type: ignore[union-attr]


def test_scaffold_is_deterministic(tmp_path: Path) -> None:
    a = scaffold("tiny-llama-eagle3", tmp_path / "a")
    b = scaffold("tiny-llama-eagle3", tmp_path / "b")
    assert _digest(a) == _digest(b)
    assert (a / "target" / "model.safetensors").stat().st_size > 100_000


def test_scaffold_refuses_to_overwrite(tmp_path: Path) -> None:
    dest = tmp_path / "pair"
    dest.mkdir()
    (dest / "notes.txt").write_text("mine")
    with pytest.raises(BadInput, match="not empty"):
        scaffold("tiny-llama-eagle1", dest)
    scaffold("tiny-llama-eagle1", dest, force=True)
    assert (dest / "notes.txt").read_text() == "mine"
    with pytest.raises(BadInput, match="refusing to overwrite"):
        scaffold("tiny-llama-eagle1", dest, force=True)


def test_resolve_model_arg(tmp_path: Path) -> None:
    assert resolve_model_arg(str(tmp_path)) == tmp_path
    assert (resolve_model_arg("tiny-llama-eagle1") / "PRESET").exists()
    with pytest.raises(BadInput, match="neither an existing path nor a preset"):
        resolve_model_arg("tiny-llama-eagle9")


def test_unknown_preset() -> None:
    with pytest.raises(BadInput, match="unknown preset"):
        materialize("nope")
