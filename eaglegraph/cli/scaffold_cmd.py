"""`eaglegraph scaffold DIR --preset NAME`: write a real HF target/draft pair."""

from __future__ import annotations

from dataclasses import dataclass

import click
from rich.console import Console
from rich.table import Table

from eaglegraph.cli.app import make_app, output_options


@dataclass
class ScaffoldResult:
    path: str
    preset: str
    description: str
    files: list[str]


def _render(result: ScaffoldResult, console: Console) -> None:
    console.print(f"wrote preset [bold]{result.preset}[/bold] to {result.path}")
    console.print(f"[dim]{result.description}[/dim]")
    for f in result.files:
        console.print(f"  {f}")


def _render_list(presets: list[dict[str, str]], console: Console) -> None:
    table = Table(title="Presets", title_justify="left")
    table.add_column("name", style="bold")
    table.add_column("kind")
    table.add_column("weights")
    table.add_column("description", overflow="fold")
    for p in presets:
        table.add_row(p["name"], p["kind"], p["weights"], p["description"])
    console.print(table)


@click.command("scaffold")
@click.argument("directory", required=False, type=click.Path(file_okay=True, dir_okay=True))
@click.option("--preset", default=None, help="Preset name (see --list).")
@click.option("--list", "list_presets", is_flag=True, help="List the built-in presets.")
@click.option(
    "--force", is_flag=True, help="Write into a non-empty folder (never over target/ or draft/)."
)
@output_options
@click.pass_context
def command(
    ctx: click.Context,
    directory: str | None,
    preset: str | None,
    list_presets: bool,
    force: bool,
    json_output: bool,
    no_color: bool,
) -> None:
    """Write a small real target/draft pair (HF config.json + safetensors) into DIRECTORY.

    Tiny presets have deterministic seeded weights (CPU-sized); 8B presets are config-only with
    real public geometry, for --random-weights GPU runs.
    """
    app = make_app(ctx, json_output, no_color)
    from pathlib import Path

    from eaglegraph.errors import BadInput
    from eaglegraph.pair.presets import PRESETS, get_preset, scaffold

    if list_presets:
        rows = [
            {
                "name": p.name,
                "kind": p.kind,
                "weights": "seeded" if p.with_weights else "config only",
                "description": p.description,
            }
            for p in PRESETS.values()
        ]
        app.emit(
            "eaglegraph.presets/1", {"presets": rows}, lambda r, c: _render_list(r["presets"], c)
        )
        return
    if directory is None or preset is None:
        raise BadInput("give DIRECTORY and --preset NAME (or --list)")
    spec = get_preset(preset)
    dest = scaffold(preset, Path(directory), force=force)
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    result = ScaffoldResult(str(dest), spec.name, spec.description, files)
    app.emit("eaglegraph.scaffold/1", result, _render)
