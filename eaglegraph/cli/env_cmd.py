"""`eaglegraph env`: GPUs, driver, CUDA and library versions, for a ticket."""

from __future__ import annotations

import click

from eaglegraph.cli.app import App, output_options
from eaglegraph.cli.outputs import Outputs, output_files
from eaglegraph.results.env import EnvReport


@click.command("env")
@output_files(EnvReport, inputs=())
@output_options
def command(outputs: Outputs, app: App) -> None:
    """Report GPUs (name, memory total/used, memory per process), driver and CUDA versions
    through NVML, and the torch / CUDA runtime / triton / Python / eaglegraph versions.

    Anything that cannot be read (no driver, no NVML, no CUDA) shows as "N/A"; the command
    never fails for that. Attach `eaglegraph env --json` (schema eaglegraph.env/1) to tickets.
    """
    from eaglegraph.system.environment import collect_environment

    app.finish(collect_environment(), outputs)
