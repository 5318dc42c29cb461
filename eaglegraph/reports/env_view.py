"""Terminal view of an `EnvReport` (rich). Renders only; "N/A" values are shown as they are."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from eaglegraph.results.env import EnvReport


def _kv_table(title: str, rows: Sequence[tuple[str, object]]) -> Table:
    table = Table(title=title, title_justify="left", show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    for key, value in rows:
        table.add_row(key, escape(str(value)))
    return table


def render_env(report: EnvReport, console: Console) -> None:
    nv = report.nvml
    t = report.torch
    console.print(
        _kv_table(
            "Software",
            [
                ("eaglegraph", report.eaglegraph),
                ("python", f"{report.python.version} ({report.python.implementation})"),
                ("platform", report.python.platform),
                ("torch", t.version),
                ("CUDA runtime (torch)", t.cuda_runtime),
                ("cuDNN", t.cudnn),
                ("CUDA available", t.cuda_available),
                ("triton", report.triton),
                ("NVIDIA driver", nv.driver_version),
                ("CUDA (driver max)", nv.cuda_driver_version),
                ("NVML", nv.nvml_version if nv.available else "N/A"),
            ],
        )
    )
    installed = [
        (k, v) for k, v in report.packages.items() if k not in ("torch", "triton") and v != "N/A"
    ]
    if installed:
        console.print(_kv_table("Packages", installed))
    gpus = Table(title="GPUs (NVML)", title_justify="left")
    for col in ("#", "name", "CC", "total MiB", "used MiB", "free MiB", "processes"):
        gpus.add_column(col, justify="right" if "MiB" in col or col == "#" else "left")
    for g in nv.gpus:
        if isinstance(g.processes, list):
            procs = (
                "\n".join(
                    f"{p.pid}: {p.used_memory_mib} MiB {escape(str(p.name))[:48]}"
                    for p in g.processes
                )
                or "-"
            )
        else:
            procs = str(g.processes)
        gpus.add_row(
            str(g.index),
            escape(str(g.name)),
            str(g.compute_capability),
            str(g.memory_total_mib),
            str(g.memory_used_mib),
            str(g.memory_free_mib),
            procs,
        )
    if nv.gpus:
        console.print(gpus)
    else:
        console.print(Text("GPUs (NVML): N/A", style="bold"))
    if t.devices:
        dev = Table(title="CUDA devices (torch)", title_justify="left")
        for col in ("#", "name", "capability", "total MiB"):
            dev.add_column(col)
        for d in t.devices:
            dev.add_row(
                str(d.index), escape(str(d.name)), str(d.capability), str(d.total_memory_mib)
            )
        console.print(dev)
    if report.env:
        console.print(_kv_table("Environment", sorted(report.env.items())))
    for note in report.notes:
        console.print(Text(f"note: {note}", style="yellow"))
