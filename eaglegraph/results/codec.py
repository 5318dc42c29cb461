"""JSON → typed results: one decoder for every run dataclass, driven by its annotations.

`report` must never show a traceback, so a file that parses as JSON but carries a string where
a duration belongs is rejected while it is decoded, with the field's path ("events[3].duration_s
must be a finite number, not string"), rather than crashing a renderer three calls later.
Unknown keys are ignored so newer producers stay readable; missing keys take the field's
default, so older files keep loading after a field is added. A class with its own JSON form
(e.g. `PoolId`, a string) provides a `from_json(value, where, path)` classmethod. Encoding is
the other direction of the same dataclasses, through `serial.to_jsonable`.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from enum import Enum
from typing import Any, TypeVar, Union

from eaglegraph.errors import BadInput

T = TypeVar("T")

_HINTS: dict[type, dict[str, Any]] = {}


def decode(cls: type[T], data: Any, where: str, path: str = "", *, hook: bool = True) -> T:
    """Build `cls` (a dataclass) from parsed JSON; any problem is a one-line `BadInput`.

    `hook=False` decodes field by field even when `cls` has its own `from_json`: what that
    hook calls before adjusting the result.
    """
    custom = getattr(cls, "from_json", None) if hook else None
    if custom is not None:
        return custom(data, where, path)
    if not isinstance(data, dict):
        raise BadInput(f"{_at(where, path)}: expected an object, not {json_type(data)}")
    hints = _hints(cls)
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    missing = [
        f.name
        for f in fields
        if f.init
        and f.name not in data
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise BadInput(f"{_at(where, path)}: missing {', '.join(missing)}")
    values = {
        f.name: value(data[f.name], hints[f.name], where, _join(path, f.name))
        for f in fields
        if f.init and f.name in data
    }
    return cls(**values)


def value(data: Any, hint: Any, where: str, path: str) -> Any:
    """Decode one JSON value against a type hint."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return data
    if origin in (Union, types.UnionType):
        return _union(data, args, where, path)
    if origin in (list, tuple):
        if not isinstance(data, list):
            _fail(where, path, "a list", data)
        item = args[0] if args else Any
        items = [value(x, item, where, f"{path}[{i}]") for i, x in enumerate(data)]
        return items if origin is list else tuple(items)
    if origin is dict:
        if not isinstance(data, dict):
            _fail(where, path, "an object", data)
        return {k: value(v, args[1], where, _join(path, str(k))) for k, v in data.items()}
    if isinstance(hint, type) and issubclass(hint, Enum):
        try:
            return hint(data)
        except ValueError:
            leaf = path.rsplit(".", 1)[-1]
            choices = ", ".join(str(m.value) for m in hint)
            raise BadInput(
                f"{_at(where, path)}: unknown {leaf} {data!r}; expected one of {choices}"
            ) from None
    if isinstance(hint, type) and (dataclasses.is_dataclass(hint) or hasattr(hint, "from_json")):
        return decode(hint, data, where, path)
    if not _fits(data, hint):
        _fail(where, path, _describe(hint), data)
    return data


def _union(data: Any, args: tuple[Any, ...], where: str, path: str) -> Any:
    if data is None and type(None) in args:
        return None
    options = [a for a in args if a is not type(None)]
    na = next((a for a in options if getattr(a, "NA_TEXT", None) == data), None)
    if na is not None:
        return na()  # the "N/A" marker of the environment report
    if len(options) == 1:
        return value(data, options[0], where, path)
    for option in options:
        if _fits(data, option) or (typing.get_origin(option) is list and isinstance(data, list)):
            return value(data, option, where, path)
    _fail(where, path, " or ".join(_describe(a) for a in options), data)


def _fits(data: Any, hint: Any) -> bool:
    if hint is float:
        return isinstance(data, (int, float)) and not isinstance(data, bool) and math.isfinite(data)
    if hint is int:
        return isinstance(data, int) and not isinstance(data, bool)
    if getattr(hint, "NA_TEXT", None) is not None:
        return data == hint.NA_TEXT
    if isinstance(hint, type):
        return isinstance(data, hint)
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
    if getattr(hint, "NA_TEXT", None) is not None:
        return repr(hint.NA_TEXT)
    if typing.get_origin(hint) in (list, tuple):
        return "a list"
    if typing.get_origin(hint) is dict or dataclasses.is_dataclass(hint):
        return "an object"
    return str(hint)


def json_type(data: Any) -> str:
    """How a JSON value reads in a message: null, number, NaN, string, list, object."""
    if data is None:
        return "null"
    if isinstance(data, bool):
        return "boolean"
    if isinstance(data, float) and not math.isfinite(data):
        return str(data).replace("inf", "Infinity").replace("nan", "NaN")
    if isinstance(data, (int, float)):
        return "number"
    if isinstance(data, str):
        return "string"
    if isinstance(data, list):
        return "list"
    if isinstance(data, dict):
        return "object"
    return type(data).__name__


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _at(where: str, path: str) -> str:
    return f"{where}: {path}" if path else where


def _fail(where: str, path: str, expected: str, data: Any) -> typing.NoReturn:
    raise BadInput(f"{where}: {path} must be {expected}, not {json_type(data)}")
