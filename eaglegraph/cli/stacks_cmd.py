"""`eaglegraph stacks PID [PID…]`: where a live (hung) server is stuck, through py-spy."""

from __future__ import annotations

import click

from eaglegraph.cli.app import App, output_options
from eaglegraph.cli.options import Seconds
from eaglegraph.cli.outputs import Outputs, output_files
from eaglegraph.results.stacks import StacksReport


@click.command("stacks")
@click.argument("pids", type=int, metavar="PID...", nargs=-1, required=True)
@click.option("--native", is_flag=True, help="Include C/C++/CUDA frames (py-spy --native).")
@click.option(
    "--subprocesses", is_flag=True, help="Also dump the child processes (workers, TP ranks)."
)
@click.option(
    "--timeout",
    type=Seconds(0, 600),
    default=60.0,
    show_default=True,
    help="Seconds to wait for py-spy.",
)
@output_files(StacksReport, inputs=())
@output_options
def command(
    pids: tuple[int, ...],
    native: bool,
    subprocesses: bool,
    timeout: float,
    outputs: Outputs,
    app: App,
) -> None:
    """Dump the Python stacks of PID with py-spy and say which phase it is stuck in.

    Give every rank's PID of a hung multi-GPU server (`pgrep -f VLLM::Worker`, `pgrep -f
    sglang::scheduler`) and each rank is named as its engine titled it, with where it waits;
    the rank that waits elsewhere than the others (out of the collective they wait in) is
    marked.

    Identical stacks across threads and processes are grouped; frames of CUDA-graph capture
    and replay, speculative proposal, sampling and NCCL waits are highlighted, and the phase
    comes from the deepest meaningful frame of the busiest stack. Needs py-spy and ptrace
    rights (root, or SYS_PTRACE in containers). `--json` gives schema eaglegraph.stacks/1.
    Exit codes: 0 done, 2 no such process / not Python, 3 py-spy missing or not permitted.
    """
    from eaglegraph.system.pyspy import dump_stacks

    report = dump_stacks(pids, native=native, subprocesses=subprocesses, timeout=timeout)
    app.finish(report, outputs)
