"""Output files of a command: checked before any work starts, written after, never lost.

Every path is validated up front (its folder exists and is writable, it is not a folder, not an
input, not named twice, and exists only with --force), so a long run never ends in a refused
write. Writes that still fail (disk full, a folder removed meanwhile) do not discard the result:
the view is printed anyway and each failure is one line; the command then exits 2.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import click

from eaglegraph.errors import BadInput, EagleGraphError
from eaglegraph.serial import file_kind


def check_outputs(
    outputs: Mapping[str, str | None], *, force: bool, inputs: Iterable[str | None] = ()
) -> dict[str, Path]:
    """The given outputs (option name -> path), validated; raises BadInput naming the option."""
    for name, p in outputs.items():
        if p is not None and p.strip() in ("", "-"):
            raise BadInput(
                f"{name} {p!r} is not a file path (stdout holds the report; --json prints the "
                "result there)",
                "give a file name",
            )
    chosen = {name: Path(p) for name, p in outputs.items() if p}
    seen: dict[Path, str] = {}
    for name, path in chosen.items():
        try:
            key = path.resolve()
        except (RuntimeError, OSError):  # a symlink loop: pathlib raises RuntimeError
            raise BadInput(f"{name} {path} is a symlink loop; choose a file path") from None
        if key in seen:
            raise BadInput(f"{seen[key]} and {name} both name {path}", "give each its own file")
        seen[key] = name
        if path.is_dir():
            raise BadInput(f"{name} {path} is a directory, expected a file path")
        if path.exists() and not path.is_file():
            kind = file_kind(path.stat().st_mode)
            raise BadInput(f"{name} {path} is a {kind}, not a file; choose a file path")
        parent = path.parent
        if not parent.is_dir():
            if parent.exists():
                raise BadInput(f"{name} {path}: {parent} is not a folder")
            raise BadInput(f"{name} {path}: folder {parent} does not exist", "create it first")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise BadInput(f"{name} {path}: folder {parent} is not writable (permission denied)")
        for source in inputs:
            if source and Path(source).exists() and Path(source).resolve() == key:
                raise BadInput(f"{name} {path} is an input of this command; choose another path")
        if path.exists() and not force:
            raise BadInput(f"{name} {path} already exists", "pass --force to replace it")
    return chosen


@dataclass
class Writes:
    """Writes files one by one, says `wrote PATH` for each, and keeps failures for the end."""

    failures: list[str] = field(default_factory=list)

    def write(self, name: str, path: Path | str, writer: Callable[[], object]) -> None:
        try:
            writer()
        except EagleGraphError as exc:
            self.failures.append(f"{name}: {exc}")
        except OSError as exc:
            reason = exc.strerror or str(exc)
            self.failures.append(f"{name}: cannot write {exc.filename or path}: {reason}")
        else:
            click.echo(f"wrote {path}", err=True)

    def finish(self, ctx: click.Context, code: int) -> None:
        """Exit with `code`, or 2 after one line per failed write (the result is shown)."""
        for failure in self.failures:
            click.echo(f"eaglegraph: error: {failure}", err=True)
        ctx.exit(2 if self.failures else code)
