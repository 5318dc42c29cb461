"""Output files of a command: checked before any work starts, written after, never lost.

The formats come from one registry (`reports/exporters.py`); `output_files(kinds)` offers each
format that renders one of a command's result kinds, with `--force`, and hands the command one
`Outputs`: the checked paths. `App.finish` writes them. Every path is validated up front (its folder exists and is writable, it is not a folder, not an
input, not named twice, and exists only with --force), so a long run never ends in a refused
write. Writes that still fail (disk full, a folder removed meanwhile) do not discard the result:
the view is printed anyway and each failure is one line; the command then exits 2.
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from eaglegraph.errors import BadInput, EagleGraphError
from eaglegraph.reports.exporters import Exporter, exporters_for
from eaglegraph.serial import atomic_write, file_kind


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
        unwritable = folder_unwritable(parent)
        if unwritable is not None:
            raise BadInput(f"{name} {path}: folder {parent} is not writable ({unwritable})")
        for source in inputs:
            if source and Path(source).exists() and Path(source).resolve() == key:
                raise BadInput(f"{name} {path} is an input of this command; choose another path")
        if path.exists() and not force:
            raise BadInput(f"{name} {path} already exists", "pass --force to replace it")
    return chosen


def folder_unwritable(folder: Path) -> str | None:
    """Why no file can be created in `folder`, or None when one can. Permission bits are not
    enough (root passes them; a read-only mount or a full quota does not show in them), so a
    file is created there and removed."""
    if not os.access(folder, os.W_OK | os.X_OK):
        return "permission denied"
    try:
        fd, probe = tempfile.mkstemp(prefix=".eaglegraph-probe-", dir=folder)
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    os.unlink(probe)
    return None


def check_folder(name: str, folder: str) -> Path:
    """An output folder (explore's --export-dir): it exists, is a folder and is writable."""
    path = Path(folder)
    if not path.exists():
        raise BadInput(f"{name} {folder} does not exist", "create it first")
    if not path.is_dir():
        raise BadInput(f"{name} {folder} is not a folder")
    unwritable = folder_unwritable(path)
    if unwritable is not None:
        raise BadInput(f"{name} {folder} is not writable ({unwritable})")
    return path


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

    def finish_unless_ok(self, ctx: click.Context) -> None:
        """Exit 2 after one line per failed write; return when every file was written."""
        if self.failures:
            self.finish(ctx, 2)

    def finish(self, ctx: click.Context, code: int) -> None:
        """Exit with `code`, or 2 after one line per failed write (the result is shown)."""
        for failure in self.failures:
            click.echo(f"eaglegraph: error: {failure}", err=True)
        ctx.exit(2 if self.failures else code)


@dataclass
class Outputs:
    """The output files a command was asked for, checked; `write` writes them for a result."""

    chosen: dict[str, tuple[Exporter, Path]] = field(default_factory=dict)
    force: bool = False

    def __bool__(self) -> bool:
        return bool(self.chosen)

    def path(self, name: str) -> Path | None:
        """The path given for format `name` (e.g. the snapshot the run itself writes)."""
        exporter_path = self.chosen.get(f"--{name}")
        return exporter_path[1] if exporter_path else None

    def refuse_unsupported(self, run: Any, source: str) -> None:
        """A saved run (report, explore) of a kind a chosen format cannot render: one line."""
        from eaglegraph.results.registry import schema_of

        for exporter, _ in self.chosen.values():
            if not exporter.renders(run):
                raise BadInput(
                    f"{source} is a {schema_of(run)} run: {exporter.unsupported}",
                    exporter.instead,
                )

    def refuse_beyond(self, kind: type, what: str) -> None:
        """Before any work: every chosen format must render the `kind` of run this command
        will produce (a multi-rank run, say), or the run would end with a file it cannot
        write. One line naming the option and what to use instead."""
        for option, (exporter, _) in self.chosen.items():
            if not issubclass(kind, exporter.kinds):
                raise BadInput(
                    f"{option} has no view of {what}; refused before any work",
                    f"use --save or --json (the run file holds every rank), or leave {option} out",
                )

    def write(self, run: Any) -> Writes:
        """Write every chosen file for `run`, in registry order; failures are kept."""
        writes = Writes()
        for option, (exporter, path) in self.chosen.items():
            render = exporter.render
            if render is None:  # written by the run itself while it worked
                if path.exists():
                    click.echo(f"wrote {path}", err=True)
                continue
            writes.write(option, path, _writer(render, run, path, self.force))
        return writes


def _writer(
    render: Callable[[Any], str | bytes], run: Any, path: Path, force: bool
) -> Callable[[], Path]:
    return lambda: atomic_write(path, render(run), overwrite=force)


def output_files(
    *kinds: type,
    inputs: tuple[str, ...] = ("model_dir",),
    rerender: bool = False,
    refusals: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """One `--NAME FILE` option per registered format that renders one of `kinds`, and
    `--force`. The paths are checked before the command body runs (`inputs`: the parameters
    naming the command's input files, which no output may replace); the body receives them as
    `outputs: Outputs`. `refusals`: the command builds a rig, and `--force` also runs a plan
    the engine would refuse at startup (`Outputs.force`)."""
    formats = exporters_for(kinds, rerender=rerender)

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            force = bool(kwargs.pop("force"))
            given = {e.option: kwargs.pop(f"output_{e.name}") for e in formats}
            sources = [kwargs.get(name) for name in inputs]
            paths = check_outputs(given, force=force, inputs=sources)
            by_option = {e.option: e for e in formats}
            chosen = {option: (by_option[option], path) for option, path in paths.items()}
            return func(*args, outputs=Outputs(chosen, force), **kwargs)

        what = "output files" if len(formats) > 1 else f"an existing {formats[0].option} file"
        also = "; run a plan the engine would refuse at startup" if refusals else ""
        command = click.option("--force", is_flag=True, help=f"Replace {what}{also}.")(wrapper)
        for exporter in reversed(formats):
            command = click.option(
                exporter.option,
                f"output_{exporter.name}",
                metavar="FILE",
                default=None,
                help=exporter.help,
            )(command)
        return command

    return decorate
