"""The application object every command receives: output mode, consoles, progress, exit codes.

Commands parse options, call the library, and hand the result to `App.finish`, which prints
either the JSON document or the rich view and returns the exit code. Nothing here computes.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

from eaglegraph.reports.console import TrimmedConsole
from eaglegraph.serial import document, dumps

if TYPE_CHECKING:
    from eaglegraph.cli.outputs import Outputs
    from eaglegraph.reports.progress import PlainLines


@dataclass
class App:
    """One command's output mode and consoles, and its click context (the command's exit goes
    through it, so a command body never handles the context itself)."""

    ctx: click.Context
    json_output: bool = False
    color: bool = True
    out: Console = field(default_factory=Console)
    err: Console = field(default_factory=lambda: Console(stderr=True))

    @classmethod
    def create(cls, ctx: click.Context, json_output: bool, no_color: bool) -> App:
        color = not no_color and "NO_COLOR" not in os.environ
        out = TrimmedConsole(no_color=not color, highlight=False, soft_wrap=False)
        if not color:
            out = TrimmedConsole(no_color=True, highlight=False, color_system=None)
        err = Console(stderr=True, no_color=not color, highlight=False)
        return cls(ctx=ctx, json_output=json_output, color=color, out=out, err=err)

    def emit(self, schema: str, result: Any, render: Callable[[Any, Console], None]) -> None:
        """Print the result: the versioned JSON document, or the rich terminal view."""
        if self.json_output:
            click.echo(dumps(document(schema, result)))
        else:
            render(result, self.out)

    def finish(
        self,
        result: Any,
        outputs: Outputs | None = None,
        code: int = 0,
        *,
        view: bool = True,
    ) -> None:
        """The end of every command: write the output files, print the result (`view`: also
        when files were written; with --json, or after a failed write, always) and exit with
        `code`, or 2 when a file could not be written."""
        from eaglegraph.cli.outputs import Writes
        from eaglegraph.reports.runfile import render_run
        from eaglegraph.results.registry import schema_of

        writes = outputs.write(result) if outputs is not None else Writes()
        if view or self.json_output or writes.failures:
            self.emit(schema_of(result), result, render_run)
        writes.finish(self.ctx, code)

    def note(self, message: str) -> None:
        """A status line on stderr (never pollutes `--json` stdout)."""
        self.err.print(message, highlight=False)

    @contextlib.contextmanager
    def progress(self, description: str, total: int | None = None) -> Iterator[ProgressHandle]:
        """Progress on stderr: on a terminal a live bar with the count, its rate and ETA; when
        piped one line per milestone (a stage, a phase, a probe case) with its count, rate and
        ETA, and the latest status again every few seconds, so a long step never goes silent.
        EAGLEGRAPH_NO_PROGRESS silences both; stdout (and so --json) never gets any of it."""
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        from eaglegraph.reports.progress import PlainLines, RateColumn

        quiet = bool(os.environ.get("EAGLEGRAPH_NO_PROGRESS"))
        live = self.err.is_terminal and not quiet
        progress = Progress(
            SpinnerColumn(),
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            RateColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.err,
            transient=True,
            disable=not live,
        )
        lines = None
        if not live and not quiet:
            lines = PlainLines(description, lambda line: click.echo(line, err=True), total=total)
            lines.start()
        try:
            with progress:
                task = progress.add_task(description, total=total)
                yield ProgressHandle(progress, task, lines)
        finally:
            if lines is not None:
                lines.stop()


@dataclass
class ProgressHandle:
    """What library code sees: `update(description, advance, total, milestone)`; no rich types
    leak. `milestone` names a step worth a line of its own when stderr is not a terminal."""

    _progress: Any
    _task: Any
    _lines: PlainLines | None = None  # the piped form; None: live bar or quiet

    def __call__(
        self,
        description: str | None = None,
        advance: float = 0,
        total: float | None = None,
        milestone: str | None = None,
    ) -> None:
        kwargs: dict[str, Any] = {"advance": advance}
        if description is not None:
            kwargs["description"] = description
        if total is not None:
            kwargs["total"] = total
        self._progress.update(self._task, **kwargs)
        if self._lines is not None:
            self._lines.update(description, advance, total, milestone)


def output_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """`--json` and `--no-color`, on every command: the body receives the `app: App` they
    set up (with the group's `--json`/`--no-color` given before the command name)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        app = make_app(
            click.get_current_context(), kwargs.pop("json_output"), kwargs.pop("no_color")
        )
        return func(*args, app=app, **kwargs)

    command = click.option("--no-color", is_flag=True, help="Plain text output without colours.")(
        wrapper
    )
    return click.option(
        "--json",
        "json_output",
        is_flag=True,
        help="Print the result as a versioned JSON document on stdout.",
    )(command)


def make_app(ctx: click.Context, json_output: bool, no_color: bool) -> App:
    root = ctx.find_root().obj or {}
    return App.create(
        ctx,
        json_output=json_output or bool(root.get("json")),
        no_color=no_color or bool(root.get("no_color")),
    )
