"""Header reading: single files, shards, `.bin`, and every way a checkpoint can be broken."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from eaglegraph.errors import BadInput
from eaglegraph.pair import load_pair
from eaglegraph.pair.tensors import read_checkpoint
from tests.helpers import target_shapes, tiny_target_config, write_config, write_tensors


def _sharded(folder: Path, shards: int) -> dict[str, tuple[int, ...]]:
    cfg = tiny_target_config()
    write_config(folder, cfg)
    shapes = target_shapes(cfg)
    names = sorted(shapes)
    weight_map = {}
    for s in range(shards):
        part = {n: shapes[n] for n in names[s::shards]}
        file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        write_tensors(folder / file, part)
        weight_map.update({n: file for n in part})
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map})
    )
    return shapes


def test_sharded_index_is_followed(tmp_path: Path) -> None:
    shapes = _sharded(tmp_path, 3)
    index = read_checkpoint(tmp_path)
    assert index.format == "safetensors" and len(index.files) == 3
    assert {n: t.shape for n, t in index.tensors.items()} == shapes
    assert index.parameter_count == sum(int(__import__("math").prod(s)) for s in shapes.values())
    assert index.weight_bytes == 2 * index.parameter_count  # F16


def test_missing_shard(tmp_path: Path) -> None:
    _sharded(tmp_path, 3)
    (tmp_path / "model-00002-of-00003.safetensors").unlink()
    with pytest.raises(
        BadInput, match="names shard model-00002-of-00003.safetensors, which is missing"
    ):
        load_pair(tmp_path)


def test_shard_that_is_a_directory(tmp_path: Path) -> None:
    _sharded(tmp_path, 2)
    shard = tmp_path / "model-00001-of-00002.safetensors"
    shard.unlink()
    shard.mkdir()
    with pytest.raises(BadInput, match="is a directory"):
        load_pair(tmp_path)


def test_tensor_listed_but_absent(tmp_path: Path) -> None:
    _sharded(tmp_path, 2)
    index_path = tmp_path / "model.safetensors.index.json"
    data = json.loads(index_path.read_text())
    data["weight_map"]["ghost.weight"] = "model-00001-of-00002.safetensors"
    index_path.write_text(json.dumps(data))
    with pytest.raises(BadInput, match="ghost.weight"):
        load_pair(tmp_path)


def test_duplicate_tensor_across_shards(tmp_path: Path) -> None:
    write_config(tmp_path, tiny_target_config())
    write_tensors(tmp_path / "a.safetensors", {"x": (2,)})
    write_tensors(tmp_path / "b.safetensors", {"x": (2,)})
    with pytest.raises(BadInput, match="appears in both"):
        read_checkpoint(tmp_path)


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"\x01\x02",
        struct.pack("<Q", 10**12) + b"{}",
        struct.pack("<Q", 20) + b'{"a": {"dtype"',
        struct.pack("<Q", 2) + b"[]",
        struct.pack("<Q", 60) + b'{"a": {"dtype": "F16", "shape": [4], "data_offsets": [0, 8]}}',
    ],
)
def test_corrupt_or_truncated_header(tmp_path: Path, payload: bytes) -> None:
    write_config(tmp_path, tiny_target_config())
    (tmp_path / "model.safetensors").write_bytes(payload)
    with pytest.raises(BadInput, match="model.safetensors"):
        load_pair(tmp_path)


def test_bin_checkpoint_is_a_finding(tmp_path: Path) -> None:
    write_config(tmp_path, tiny_target_config())
    (tmp_path / "pytorch_model.bin").write_bytes(b"PK\x03\x04 not really")
    pair = load_pair(tmp_path)
    assert pair.target is not None and pair.target.weights.format == "bin"
    finding = next(f for f in pair.findings if f.id == "eaglegraph-needs-safetensors")
    assert finding.severity.value == "info" and "safetensors" in (finding.fix or "")


def test_index_with_bad_weight_map(tmp_path: Path) -> None:
    write_config(tmp_path, tiny_target_config())
    (tmp_path / "model.safetensors.index.json").write_text('{"weight_map": [1, 2]}')
    with pytest.raises(BadInput, match="weight_map"):
        load_pair(tmp_path)


def test_index_shard_escaping_the_folder(tmp_path: Path) -> None:
    write_config(tmp_path / "m", tiny_target_config())
    write_tensors(tmp_path / "evil.safetensors", {"x": (2,)})
    (tmp_path / "m" / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"x": "../evil.safetensors"}})
    )
    with pytest.raises(BadInput, match="outside the folder"):
        load_pair(tmp_path / "m")
