"""JSON documents: dataclass results to versioned JSON, and atomic, non-clobbering writes.

Every command's result is a dataclass; `to_jsonable` turns it into plain JSON types so the
terminal view and `--json` come from one object. Files are written through a temporary file
and `os.replace`, so a crash never leaves half a report behind.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eaglegraph.errors import BadInput


def to_jsonable(obj: Any) -> Any:
    if hasattr(obj, "to_json") and not isinstance(obj, type):
        return to_jsonable(obj.to_json())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            f.name: to_jsonable(getattr(obj, f.name))
            for f in dataclasses.fields(obj)
            if f.metadata.get("json", True)
        }
    if isinstance(obj, enum.Enum):
        return to_jsonable(obj.value) if not isinstance(obj.value, tuple) else obj.name
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = sorted(obj, key=str) if isinstance(obj, (set, frozenset)) else obj
        return [to_jsonable(v) for v in items]
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return str(obj)


def document(schema: str, body: Any) -> dict[str, Any]:
    """A versioned JSON document: schema id and producing version first, then the body."""
    from eaglegraph import __version__

    doc: dict[str, Any] = {"schema": schema, "eaglegraph_version": __version__}
    payload = to_jsonable(body)
    if isinstance(payload, dict):
        doc.update(payload)
    else:
        doc["result"] = payload
    return doc


def dumps(doc: Any) -> str:
    return json.dumps(to_jsonable(doc), indent=2, allow_nan=False)


def default_file_mode() -> int:
    """The mode `open` gives a new file: 0666 less the umask (mkstemp would give 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write(path: Path | str, data: str | bytes, *, overwrite: bool = False) -> Path:
    """Write a file atomically. Refuses to replace an existing file unless `overwrite`.

    The file gets the mode a plain `open` would give it (0666 less the umask), not the 0600 of
    the temporary file it is written through; OS errors are one-line `BadInput`s with the path.
    """
    path = Path(path)
    if path.is_dir():
        raise BadInput(f"{path} is a directory, expected a file path")
    if path.exists() and not path.is_file():
        # replacing it would swap a device node or a pipe for a file (as root, /dev/full too)
        raise BadInput(f"{path} is a {file_kind(path.stat().st_mode)}, not a file")
    if path.exists() and not overwrite:
        raise BadInput(f"{path} already exists", "pass --force to replace it")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise BadInput(f"cannot write {path}: folder {parent} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    except OSError as exc:
        raise BadInput(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        os.fchmod(fd, default_file_mode())
        if isinstance(data, bytes):
            with os.fdopen(fd, "wb") as binary:
                binary.write(data)
        else:
            with os.fdopen(fd, "w", encoding="utf-8") as text:
                text.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise BadInput(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


MAX_JSON_BYTES = 256 * 2**20  # far above any config or saved run; a bound on what is read


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words (for "is not a regular file (a FIFO)")."""
    for test, name in (
        (stat.S_ISDIR, "directory"),
        (stat.S_ISFIFO, "named pipe"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISSOCK, "socket"),
    ):
        if test(mode):
            return name
    return "special file"


def regular_file_size(path: Path, what: str = "file") -> int:
    """The size of `path`, refusing what is not a regular file: reading a FIFO blocks and a
    device like /dev/zero never ends. OS errors are one line with the path and the reason."""
    try:
        st = path.stat()
    except OSError as exc:
        raise BadInput(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(f"{what} {path} is not a regular file (a {file_kind(st.st_mode)})")
    return st.st_size


def read_json_file(path: Path | str, what: str = "file") -> Any:
    """Read JSON with one-line errors that name the file, line and column."""
    path = Path(path)
    if not path.exists():
        raise BadInput(f"{what} {path} does not exist")
    if path.is_dir():
        raise BadInput(f"{what} {path} is a directory, expected a JSON file")
    size = regular_file_size(path, what)
    if size > MAX_JSON_BYTES:
        raise BadInput(
            f"{what} {path} is {size / 2**20:.0f} MiB: too large for a JSON {what} "
            f"(at most {MAX_JSON_BYTES // 2**20} MiB)"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise BadInput(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(
            f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise BadInput(f"{path}: JSON nested too deeply") from None
