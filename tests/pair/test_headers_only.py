"""Inspect reads headers, never tensor data (the data here is a sparse hole of several GiB)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.synthetic_checkpoint import write_sparse_checkpoint
from eaglegraph.pair import load_pair


def _rchar() -> int:
    with open("/proc/self/io") as fh:
        return int(next(line for line in fh if line.startswith("rchar:")).split()[1])


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs /proc/self/io (Linux)")
def test_inspect_reads_no_tensor_data(tmp_path: Path) -> None:
    count, data_bytes = write_sparse_checkpoint(tmp_path / "big", shards=30, layers=120)
    header_bytes = sum(
        int.from_bytes(p.open("rb").read(8), "little") + 8
        for p in (tmp_path / "big").glob("*.safetensors")
    )
    before = _rchar()
    pair = load_pair(tmp_path / "big")
    read = _rchar() - before
    assert pair.target is not None and pair.target.weights.tensor_count == count
    assert pair.target.weights.weight_bytes == data_bytes
    # headers, configs and the index, with slack for Python's own reads — never the data
    assert read < 4 * header_bytes + 256 * 1024, (read, header_bytes, data_bytes)
    assert data_bytes > 1000 * read
