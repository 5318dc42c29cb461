"""Errors that end a command with a one-line message and a documented exit code.

Anything the user can fix (a path, a file, an option) is a `BadInput` (exit 2); anything the
machine lacks (CUDA, py-spy, NVML) is a `MissingEnvironment` (exit 3). The CLI prints these
without a traceback; every other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

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
