"""Terminal views of `scaffold`: the files it wrote, and the list of presets."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from eaglegraph.results.scaffold import PresetList, ScaffoldResult


def render_scaffold(result: ScaffoldResult, console: Console) -> None:
    console.print(f"wrote preset [bold]{result.preset}[/bold] to {result.path}")
    console.print(f"[dim]{result.description}[/dim]")
    for f in result.files:
        console.print(f"  {f}")


def render_presets(listing: PresetList, console: Console) -> None:
    table = Table(title="Presets", title_justify="left")
    table.add_column("name", style="bold")
    table.add_column("kind")
    table.add_column("weights")
    table.add_column("description", overflow="fold")
    for p in listing.presets:
        table.add_row(p.name, p.kind, p.weights, p.description)
    console.print(table)
