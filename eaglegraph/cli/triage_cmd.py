"""`eaglegraph triage LOG`: read a crash log and say what failed, why, and how to reproduce it."""

from __future__ import annotations

import click

from eaglegraph.cli.app import App, output_options
from eaglegraph.cli.outputs import Outputs, output_files
from eaglegraph.results.findings import FAIL_ON_CHOICES, reaches
from eaglegraph.results.triage import TriageResult


@click.command("triage")
@click.argument("log", metavar="LOG")
@click.option(
    "--fail-on",
    type=click.Choice(FAIL_ON_CHOICES),
    default="never",
    show_default=True,
    help="Exit 1 when the diagnosis reaches this severity: 'error' for a crash, hang or "
    "capture/memory failure, 'warning' also for mode downgrades and acceptance drops "
    "without a crash. The default never fails: the input is already a failure report.",
)
@output_files(TriageResult, inputs=("log",))
@output_options
def command(
    log: str,
    fail_on: str,
    outputs: Outputs,
    app: App,
) -> None:
    """Diagnose a vLLM / SGLang / TensorRT-LLM log from speculative decoding with CUDA graphs.

    LOG is a file (gzip, bzip2, xz and UTF-16 are detected from content) or '-' for stdin.
    Prints the framework, version and configuration read from the log, the failure class
    (stale-buffer-read, oob-index, pool-memory/oom, capture-failure, mode-incompatibility,
    hidden-dim/config-mismatch, acceptance-regression, hang, other) with a confidence, the
    primary error line apart from its consequences (NCCL watchdog, engine death), the upstream
    fixes that match, what to check, and the eaglegraph command that reproduces the situation.
    `--json` gives schema eaglegraph.triage/1. Exit codes: 0 done, 1 diagnosis at or above
    --fail-on, 2 unreadable LOG.
    """
    from eaglegraph.triage.diagnose import triage_path

    with app.progress("reading log") as bar:
        result = triage_path(log, progress=lambda n: bar(advance=n))
    app.finish(result, outputs, 1 if reaches(result.findings, fail_on) else 0)
