"""The base of the package's named values: an enum whose members are their plain strings.

Runs, options and reports have always spelt these values as strings ("shared", "eagle",
"stale-buffer-read"); a member compares equal to, serialises as and prints as its string, so
typing a value changes no output. (`enum.StrEnum` does the same from Python 3.11; the package
supports 3.10.)
"""

from __future__ import annotations

from enum import Enum


class StrEnum(str, Enum):
    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    @classmethod
    def values(cls) -> list[str]:
        """Every member's string, in declaration order (option choices, help texts)."""
        return [str(m.value) for m in cls]
