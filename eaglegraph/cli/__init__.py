"""The `eaglegraph` command line: a thin click layer over the library.

Each command lives in its own module and only parses options, calls one library function and
hands the result to a renderer. Errors the user can fix end as one line with exit code 2 (3 when
the machine lacks something); anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

import click

from eaglegraph import __version__
from eaglegraph.errors import ERROR_SCHEMA, EagleGraphError, Terminated, unknown_choice

_COMMANDS = {
    "inspect": "eaglegraph.cli.inspect_cmd",
    "scaffold": "eaglegraph.cli.scaffold_cmd",
    "capture": "eaglegraph.cli.capture_cmd",
    "memdiff": "eaglegraph.cli.memdiff_cmd",
    "probe": "eaglegraph.cli.probe_cmd",
    "report": "eaglegraph.cli.report_cmd",
    "explore": "eaglegraph.cli.explore_cmd",
    "triage": "eaglegraph.cli.triage_cmd",
    "stacks": "eaglegraph.cli.stacks_cmd",
    "env": "eaglegraph.cli.env_cmd",
}


class EagleGraphGroup(click.Group):
    """Loads command modules lazily and turns EagleGraphError into a one-line exit."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in _COMMANDS if self._module(name) is not None]

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """An unknown command is one line with the closest names ("did you mean inspect?")."""
        name = click.utils.make_str(args[0])
        if name not in _COMMANDS and not name.startswith("-"):
            raise unknown_choice("command", name, _COMMANDS)
        return super().resolve_command(ctx, args)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = self._module(cmd_name)
        return getattr(module, "command", None) if module is not None else None

    @staticmethod
    def _module(name: str) -> Any:
        import importlib

        path = _COMMANDS.get(name)
        if path is None:
            return None
        try:
            return importlib.import_module(path)
        except ModuleNotFoundError as exc:
            if exc.name == path:
                return None
            raise

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["eaglegraph.argv"] = list(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        previous = signal.signal(signal.SIGTERM, _terminate)
        try:
            return super().invoke(ctx)
        except EagleGraphError as exc:
            _fail(ctx, str(exc), exc.exit_code, exc.hint)
        except click.exceptions.Exit:
            raise
        except click.ClickException as exc:
            # usage errors too end as one line; the command's --help is named for the rest
            failed_in: click.Context | None = getattr(exc, "ctx", None)  # UsageError has one
            where = failed_in.command_path if failed_in is not None else "eaglegraph"
            message = exc.format_message()
            if isinstance(exc, click.UsageError):
                message += f" (see `{where} --help`)"
            _fail(ctx, message, exc.exit_code)
        except OSError as exc:
            # a path the checks above missed: still one line with the path and the OS's reason
            _fail(ctx, _os_message(exc), 2)
        except KeyboardInterrupt as exc:
            terminated = isinstance(exc, Terminated)
            click.echo(f"eaglegraph: {'terminated' if terminated else 'interrupted'}", err=True)
            ctx.exit(Terminated.exit_code if terminated else 130)
        finally:
            signal.signal(signal.SIGTERM, previous)


def _terminate(signum: int, frame: Any) -> None:
    """SIGTERM ends a command the way Ctrl-C does (exit 143 instead of 130)."""
    raise Terminated()


def _os_message(exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    return f"{exc.filename}: {reason}" if exc.filename is not None else reason


def _fail(ctx: click.Context, message: str, code: int, hint: str | None = None) -> None:
    """One line on stderr; with --json also an error document on stdout, so scripts see why."""
    line = message if not hint or hint in message else f"{message} ({hint})"
    click.echo(f"eaglegraph: error: {line}", err=True)
    argv = ctx.meta.get("eaglegraph.argv", [])
    if (ctx.obj or {}).get("json") or "--json" in argv:
        import json

        doc = {
            "schema": ERROR_SCHEMA,
            "eaglegraph_version": __version__,
            "error": message,
            "hint": hint,
            "exit_code": code,
        }
        click.echo(json.dumps(doc, indent=2))
    ctx.exit(code)


@click.group(
    cls=EagleGraphGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, "--version", prog_name="eaglegraph")
@click.option("--json", "json_output", is_flag=True, help="JSON output for the command.")
@click.option("--no-color", is_flag=True, help="Plain text output without colours.")
@click.pass_context
def cli(ctx: click.Context, json_output: bool, no_color: bool) -> None:
    """Diagnose and profile CUDA-graph capture in EAGLE speculative decoding.

    Every MODEL_DIR also accepts a built-in preset name (see `eaglegraph scaffold --help`).
    Exit codes: 0 clean, 1 findings at or above --fail-on, 2 bad input, 3 missing environment.
    """
    ctx.obj = {"json": json_output, "no_color": no_color}


def main(argv: list[str] | None = None) -> None:
    cli.main(args=argv if argv is not None else sys.argv[1:], prog_name="eaglegraph")
