"""Tensor facts from checkpoint headers: names, dtypes, shapes, file, without tensor data.

safetensors headers are read through the library's lazy `safe_open` (it maps the file and
parses only the JSON header), following `model.safetensors.index.json` shards. `.bin`
checkpoints are recognised but not opened: their shapes live inside a pickle, and the right
advice is to convert them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from eaglegraph.errors import BadInput
from eaglegraph.serial import read_json_file, regular_file_size

SAFETENSORS_ITEMSIZE = {
    "BOOL": 1,
    "U8": 1,
    "I8": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "F8_E8M0": 1,
    "I16": 2,
    "U16": 2,
    "F16": 2,
    "BF16": 2,
    "I32": 4,
    "U32": 4,
    "F32": 4,
    "I64": 8,
    "U64": 8,
    "F64": 8,
}

INDEX_NAME = "model.safetensors.index.json"
BIN_INDEX_NAME = "pytorch_model.bin.index.json"


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str
    shape: tuple[int, ...]
    file: str

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * SAFETENSORS_ITEMSIZE.get(self.dtype, 0)


@dataclass
class CheckpointIndex:
    """Every tensor of one model folder. `format` is safetensors, bin or none (config only)."""

    folder: Path
    format: str
    files: list[str] = field(default_factory=list)
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    unknown_dtypes: list[str] = field(default_factory=list)

    @property
    def has_weights(self) -> bool:
        return self.format == "safetensors" and bool(self.tensors)

    @property
    def parameter_count(self) -> int:
        return sum(t.numel for t in self.tensors.values())

    @property
    def weight_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors.values())

    def find(self, *names: str) -> TensorInfo | None:
        """The first of several spellings present (e.g. with and without `model.`)."""
        for name in names:
            info = self.tensors.get(name)
            if info is not None:
                return info
        return None

    def paths(self) -> list[Path]:
        return [self.folder / f for f in self.files]


def _check_header_length(path: Path) -> None:
    """Open the file ourselves first, so an unreadable file says why (the safetensors library
    reports any open failure as "No such file or directory") and a truncated one says so."""
    size = regular_file_size(path, "safetensors file")
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(head) < 8:
        raise BadInput(f"{path}: truncated safetensors file ({size} bytes, no header length)")
    declared = int.from_bytes(head, "little")
    if 8 + declared > size:
        raise BadInput(
            f"{path}: truncated safetensors header (declares {declared} bytes, "
            f"the file has {size - 8} after the length)"
        )


def _read_header(path: Path, index: CheckpointIndex) -> None:
    from safetensors import SafetensorError, safe_open

    if path.is_dir():
        raise BadInput(f"{path} is a directory, expected a .safetensors file")
    _check_header_length(path)
    try:
        handle = safe_open(str(path), framework="numpy")
    except SafetensorError as exc:
        raise BadInput(f"{path}: corrupt or truncated safetensors header ({exc})") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot open ({exc.strerror or exc})") from None
    with handle as fh:
        for name in fh.keys():  # noqa: SIM118 (a safe_open handle, not a dict)
            if name in index.tensors:
                other = index.tensors[name].file
                raise BadInput(f"tensor {name!r} appears in both {other} and {path.name}")
            view = fh.get_slice(name)
            dtype = str(view.get_dtype())
            if dtype not in SAFETENSORS_ITEMSIZE:
                index.unknown_dtypes.append(f"{name}:{dtype}")
            index.tensors[name] = TensorInfo(
                name=name,
                dtype=dtype,
                shape=tuple(int(d) for d in view.get_shape()),
                file=path.name,
            )


def read_checkpoint(folder: Path) -> CheckpointIndex:
    """Read every tensor header of a model folder; config-only folders give format 'none'."""
    index_path = folder / INDEX_NAME
    if index_path.exists():
        data = read_json_file(index_path, what="index")
        weight_map = data.get("weight_map") if isinstance(data, dict) else None
        if not isinstance(weight_map, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
        ):
            raise BadInput(f"{index_path}: 'weight_map' must map tensor names to file names")
        shards = sorted(set(weight_map.values()))
        index = CheckpointIndex(folder=folder, format="safetensors", files=shards)
        for shard in shards:
            shard_path = folder / shard
            if Path(shard).is_absolute() or ".." in Path(shard).parts:
                raise BadInput(f"{index_path}: shard {shard!r} points outside the folder")
            if not shard_path.exists():
                raise BadInput(f"{index_path} names shard {shard}, which is missing")
            _read_header(shard_path, index)
        missing = [n for n in weight_map if n not in index.tensors]
        if missing:
            raise BadInput(
                f"{index_path}: {len(missing)} tensor(s) listed but absent from their shard, "
                f"e.g. {missing[0]!r}"
            )
        return index
    files = sorted(p.name for p in folder.glob("*.safetensors"))
    if files:
        index = CheckpointIndex(folder=folder, format="safetensors", files=files)
        for name in files:
            _read_header(folder / name, index)
        return index
    bins = sorted(p.name for p in folder.glob("*.bin"))
    if bins or (folder / BIN_INDEX_NAME).exists():
        return CheckpointIndex(folder=folder, format="bin", files=bins)
    return CheckpointIndex(folder=folder, format="none")
