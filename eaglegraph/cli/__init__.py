"""The `eaglegraph` command line: a thin click layer over the library.

Each command lives in its own module and only parses options, calls one library function and
hands the result to a renderer. Errors the user can fix end as one line with exit code 2 (3 when
the machine lacks something); anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from eaglegraph import __version__
from eaglegraph.errors import EagleGraphError

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

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except EagleGraphError as exc:
            click.echo(f"eaglegraph: error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("eaglegraph: interrupted", err=True)
            ctx.exit(130)


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
