"""config.json reading with typed, crash-free access.

Real configs are hand-edited, re-saved by several transformers versions and sometimes wrong.
Every accessor here either returns a value of the promised type or raises `BadInput` naming the
file and key, so nothing above this layer ever sees a KeyError or a TypeError from a config.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from eaglegraph.errors import BadInput
from eaglegraph.serial import read_json_file

_REQUIRED = object()


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# the scalar readers: what each names in its error, and which JSON values it accepts
_SCALARS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "int": ("an integer", _is_number),
    "float": ("a number", _is_number),
    "bool": ("true or false", lambda v: isinstance(v, bool)),
    "str": ("a string", lambda v: isinstance(v, str)),
}


class Config:
    """A parsed config.json plus where it came from, with typed getters."""

    def __init__(self, data: Mapping[str, Any], source: str) -> None:
        self.data = data
        self.source = source

    @classmethod
    def read(cls, path: Path) -> Config:
        data = read_json_file(path, what="config")
        if not isinstance(data, dict):
            raise BadInput(f"{path}: expected a JSON object, found {type(data).__name__}")
        return cls(data, str(path))

    def sub(self, key: str) -> Config | None:
        """A nested config object (e.g. speculators' `transformer_layer_config`)."""
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise BadInput(f"{self.source}: '{key}' must be an object")
        return Config(value, f"{self.source}:{key}")

    def has(self, key: str) -> bool:
        return key in self.data and self.data[key] is not None

    def raw(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def _missing(self, key: str) -> BadInput:
        return BadInput(f"{self.source}: missing key '{key}'")

    def _scalar(self, key: str, default: Any, kind: builtins.str) -> tuple[Any, builtins.bool]:
        """(value, True) when `key` holds a value `kind` accepts (`_SCALARS`), (default, False)
        when it holds none; BadInput when it is required and absent, or of another type."""
        value = self.data.get(key)
        if value is None:
            if default is _REQUIRED:
                raise self._missing(key)
            return default, False
        what, accepts = _SCALARS[kind]
        if not accepts(value):
            raise BadInput(f"{self.source}: '{key}' must be {what}, found {value!r:.60}")
        return value, True

    def int(self, key: str, default: Any = _REQUIRED, minimum: int | None = 0) -> Any:
        value, found = self._scalar(key, default, "int")
        if not found:
            return value
        if isinstance(value, float):
            if not value.is_integer():
                raise BadInput(f"{self.source}: '{key}' must be an integer, found {value!r}")
            value = int(value)
        if minimum is not None and value < minimum:
            raise BadInput(f"{self.source}: '{key}' must be >= {minimum}, found {value}")
        return value

    def float(self, key: str, default: Any = _REQUIRED) -> Any:
        value, found = self._scalar(key, default, "float")
        if not found:
            return value
        if not math.isfinite(value):
            raise BadInput(f"{self.source}: '{key}' must be a finite number, found {value}")
        return float(value)

    def bool(self, key: str, default: Any = _REQUIRED) -> Any:
        return self._scalar(key, default, "bool")[0]

    def str(self, key: str, default: Any = _REQUIRED) -> Any:
        return self._scalar(key, default, "str")[0]

    def str_list(self, key: builtins.str) -> list[builtins.str]:
        value = self.data.get(key)
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise BadInput(f"{self.source}: '{key}' must be a list of strings")
        return list(value)

    def int_list(self, key: builtins.str) -> list[builtins.int] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            raise BadInput(f"{self.source}: '{key}' must be a list of integers")
        return list(value)

    def dict(self, key: builtins.str) -> builtins.dict[builtins.str, Any] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise BadInput(f"{self.source}: '{key}' must be an object")
        return value
