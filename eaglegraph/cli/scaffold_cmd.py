"""`eaglegraph scaffold DIR --preset NAME`: write a real HF target/draft pair."""

from __future__ import annotations

import click

from eaglegraph.cli.app import App, output_options


@click.command("scaffold")
@click.argument("directory", required=False, type=click.Path(file_okay=True, dir_okay=True))
@click.option("--preset", default=None, help="Preset name (see --list).")
@click.option("--list", "list_presets", is_flag=True, help="List the built-in presets.")
@click.option(
    "--force", is_flag=True, help="Write into a non-empty folder (never over target/ or draft/)."
)
@output_options
def command(
    directory: str | None,
    preset: str | None,
    list_presets: bool,
    force: bool,
    app: App,
) -> None:
    """Write a small real target/draft pair (HF config.json + safetensors) into DIRECTORY.

    Tiny presets have deterministic seeded weights (CPU-sized); 8B presets are config-only with
    real public geometry, for --random-weights GPU runs.
    """
    from pathlib import Path

    from eaglegraph.errors import BadInput
    from eaglegraph.pair.presets import PRESETS, get_preset, scaffold
    from eaglegraph.reports.scaffold_view import render_presets, render_scaffold
    from eaglegraph.results.scaffold import (
        PRESETS_SCHEMA,
        SCAFFOLD_SCHEMA,
        PresetInfo,
        PresetList,
        ScaffoldResult,
    )

    if list_presets and (directory is not None or preset is not None or force):
        given = [
            x for x, v in (("DIRECTORY", directory), ("--preset", preset), ("--force", force)) if v
        ]
        raise BadInput(
            f"--list takes no {' or '.join(given)}", "list, then scaffold in a second call"
        )
    if list_presets:
        rows = [
            PresetInfo(
                name=p.name,
                kind=p.kind,
                weights="seeded" if p.with_weights else "config only",
                description=p.description,
            )
            for p in PRESETS.values()
        ]
        app.emit(PRESETS_SCHEMA, PresetList(rows), render_presets)
        return
    if directory is None or preset is None:
        raise BadInput("give DIRECTORY and --preset NAME (or --list)")
    spec = get_preset(preset)
    dest = scaffold(preset, Path(directory), force=force)
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    result = ScaffoldResult(str(dest), spec.name, spec.description, files)
    app.emit(SCAFFOLD_SCHEMA, result, render_scaffold)
