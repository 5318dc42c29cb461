"""Saved runs: load a RUN.json by its schema, check every field's type, and pick its renderer.

`report` must never show a traceback, so a file that parses as JSON but carries a string where
a duration belongs is rejected here, with the field's path, rather than crashing a renderer
three calls later. Unknown keys are ignored so newer producers stay readable.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any, Union

from rich.console import Console

from eaglegraph.errors import BadInput
from eaglegraph.rig.timeline import (
    CAPTURE_SCHEMA,
    MEMDIFF_SCHEMA,
    CaptureRun,
    MemdiffRun,
    capture_run_from_json,
    memdiff_run_from_json,
)
from eaglegraph.serial import read_json_file

Run = Union[CaptureRun, MemdiffRun]  # noqa: UP007 - a runtime alias, usable in isinstance

_LOADERS: dict[str, Callable[[Any, str], Run]] = {
    CAPTURE_SCHEMA: capture_run_from_json,
    MEMDIFF_SCHEMA: memdiff_run_from_json,
}


def load_run(path: Path | str) -> Run:
    """Read a saved capture or memdiff run; any problem is a one-line `BadInput`."""
    path = Path(path)
    doc = read_json_file(path, "run file")
    return run_from_document(doc, path.name)


def run_from_document(doc: Any, where: str = "run") -> Run:
    if not isinstance(doc, dict):
        raise BadInput(f"{where}: expected a JSON object, not a {_json_type(doc)}")
    schema = doc.get("schema")
    if schema is None:
        raise BadInput(f"{where}: no 'schema' key; not an eaglegraph run file")
    loader = _LOADERS.get(schema) if isinstance(schema, str) else None
    if loader is None:
        raise BadInput(f"{where}: {_schema_problem(schema)}")
    run = loader(doc, where)
    check_types(run, where)
    return run


def _schema_problem(schema: Any) -> str:
    known = " or ".join(_LOADERS)
    if not isinstance(schema, str):
        return f"'schema' must be a string such as {CAPTURE_SCHEMA!r}"
    family = schema.split("/", 1)[0]
    if any(s.split("/", 1)[0] == family for s in _LOADERS):
        return f"schema {schema!r} is not supported by this eaglegraph (reads {known})"
    return f"schema {schema!r} is not a saved run; report reads {known}"


def schema_of(run: Run) -> str:
    return MEMDIFF_SCHEMA if isinstance(run, MemdiffRun) else CAPTURE_SCHEMA


def render_run(run: Run, console: Console) -> None:
    """The terminal view that matches the run's kind."""
    if isinstance(run, MemdiffRun):
        from eaglegraph.reports.memdiff_view import render_memdiff

        render_memdiff(run, console)
    else:
        from eaglegraph.reports.capture_view import render_capture

        render_capture(run, console)


# ------------------------------------------------------------------ field types


def check_types(obj: Any, where: str, path: str = "") -> None:
    """Check a loaded dataclass tree against its annotations; name the first bad field."""
    for f in dataclasses.fields(obj):
        _check(getattr(obj, f.name), _hints(type(obj))[f.name], where, _join(path, f.name))


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _check(value: Any, hint: Any, where: str, path: str) -> None:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            _check(value, options[0], where, path)
            return
        if not any(_fits(value, a) for a in options):
            _fail(where, path, " or ".join(_describe(a) for a in options), value)
        return
    if origin is list:
        if not isinstance(value, list):
            _fail(where, path, "a list", value)
        for i, item in enumerate(value):
            _check(item, args[0], where, f"{path}[{i}]")
        return
    if origin is dict:
        if not isinstance(value, dict):
            _fail(where, path, "an object", value)
        for key, item in value.items():
            _check(item, args[1], where, f"{path}.{key}")
        return
    if not _fits(value, hint):
        _fail(where, path, _describe(hint), value)
    if dataclasses.is_dataclass(hint):
        check_types(value, where, path)


def _fits(value: Any, hint: Any) -> bool:
    if hint is float:
        return (
            isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        )
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True


def _describe(hint: Any) -> str:
    if hint is float:
        return "a finite number"
    if hint is int:
        return "an integer"
    if hint is str:
        return "a string"
    if hint is bool:
        return "true or false"
    if isinstance(hint, type) and issubclass(hint, Enum):
        return "one of " + ", ".join(str(m.value) for m in hint)
    if dataclasses.is_dataclass(hint):
        return "an object"
    return str(hint)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value).replace("inf", "Infinity").replace("nan", "NaN")
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _fail(where: str, path: str, expected: str, value: Any) -> None:
    raise BadInput(f"{where}: {path} must be {expected}, not {_json_type(value)}")
