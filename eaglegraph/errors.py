"""Errors that end a command with a one-line message and a documented exit code.

Anything the user can fix (a path, a file, an option) is a `BadInput` (exit 2); anything the
machine lacks (CUDA, py-spy, NVML) is a `MissingEnvironment` (exit 3). The CLI prints these
without a traceback; every other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

# what `--json` prints on stdout when a command fails: schema, error, hint, exit_code
ERROR_SCHEMA = "eaglegraph.error/1"


class EagleGraphError(Exception):
    """Base of the errors the CLI reports as one line."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"


class BadInput(EagleGraphError):
    """The input is wrong: missing path, invalid JSON, corrupt header, bad option value."""

    exit_code = 2


class MissingEnvironment(EagleGraphError):
    """The machine lacks what the command needs (CUDA, py-spy, permissions)."""

    exit_code = 3


class Terminated(KeyboardInterrupt):
    """SIGTERM (a job timeout, an eviction), raised where Ctrl-C would be, so the same cleanup
    runs (worker processes ended) and the command exits 143 with one line."""

    exit_code = 143


def closest(value: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """The choices nearest to a mistyped value (case-insensitive), best first."""
    by_key = {c.lower(): c for c in choices}
    hits = difflib.get_close_matches(value.strip().lower(), list(by_key), n=n, cutoff=0.5)
    return [by_key[h] for h in hits]


def unknown_choice(what: str, value: str, choices: Iterable[str]) -> BadInput:
    """The one-line error for a name that is not among `choices`: "did you mean" the closest
    ones, then every valid name, so a typo is fixed without reading the help."""
    names = list(choices)
    near = closest(value, names)
    hint = f"did you mean {' or '.join(near)}?" if near else None
    return BadInput(f"unknown {what} {value!r}; choose one of {', '.join(names)}", hint)
