"""Terminal view of `eaglegraph probe`: cases, findings, and the padding-region matrix."""

from __future__ import annotations

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from eaglegraph.known.profiles import FLAGS
from eaglegraph.reports.format import SEVERITY_STYLE
from eaglegraph.reports.layout import Fitted, Folded, label_grid
from eaglegraph.results.behaviors import BehaviorList
from eaglegraph.results.probe import ProbeRun

_KIND_STYLE = {
    "stale-read": "bold red",
    "oob-read": "bold red",
    "nan-read": "red",
    "kv-canary": "magenta",
    "crash": "bold white on red",
}


def _cases_table(run: ProbeRun) -> Table:
    table = Table(title="Cases", title_justify="left")
    table.add_column("case", style="bold", no_wrap=True)
    table.add_column("status")
    table.add_column("target / draft prefill / draft decode", overflow="fold")
    table.add_column("hits", justify="right", no_wrap=True)
    table.add_column("time", justify="right", no_wrap=True)  # "15.9 s" never splits at 80
    for c in run.cases:
        status = Text(c.status, style="green" if c.status == "ok" else "bold red")
        descs = " / ".join(c.descriptors.get(p, "—") for p in run.phases)
        table.add_row(c.name, status, descs, str(c.hits), f"{c.duration_s:.1f} s")
    return table


def _findings(run: ProbeRun, console: Console) -> None:
    if not run.findings:
        console.print("[bold]Findings[/bold]: [green]none — no stale or out-of-bounds read[/green]")
        return
    console.print(f"[bold]Findings[/bold] ({len(run.findings)})")
    for f in run.findings:
        head = Text(
            f"✖ {f.kind or f.id} ", style=_KIND_STYLE.get(f.kind or "", SEVERITY_STYLE["error"])
        )
        head.append(
            " ".join(x for x in (f.buffer, f"in {f.phase}" if f.phase else None) if x), style="bold"
        )
        if f.ref:
            head.append(f"  [{f.ref}]", style="dim")
        console.print(head)
        rows = [
            ("kernel", f.kernel),
            ("mode", f.mode),
            ("batch", f.batch),
            ("descriptor", f.descriptor),
            ("what", f.message),
            ("evidence", f.evidence),
            ("fix", f.fix),
        ]
        grid = label_grid()
        for label, value in rows:
            if value:
                grid.add_row(label, Folded(value))
        console.print(Padding(grid, (0, 0, 0, 2)))


_OWNER = {"target": "target", "draft_prefill": "prefill", "draft_decode": "decode"}


def _matrix(run: ProbeRun) -> Table:
    table = Table(
        title="Padding regions × phases (×n: stale reads the guards saw; after step: whether "
        "the step filled the padding or left the poison)",
        title_justify="left",
        box=None,
        padding=(0, 1),
        pad_edge=False,
        header_style="bold",
    )
    table.add_column("buffer", style="bold", no_wrap=True)
    table.add_column("owner", no_wrap=True)
    table.add_column("padding", no_wrap=True)
    for phase in run.phases:
        table.add_column(_OWNER.get(phase, phase), justify="center", no_wrap=True)
    table.add_column("after step", no_wrap=True)
    rows = sorted(run.matrix, key=lambda r: (not r.reads, r.owner, r.buffer))
    for row in rows:
        cells = []
        for phase in run.phases:
            n = row.reads.get(phase, 0)
            cells.append(Text(f"×{n}", style="bold red") if n else Text("·", style="dim"))
        after = row.after_step
        style = {"filled": "green", "stale": "yellow", "partly": "cyan"}.get(after, "")
        table.add_row(
            row.buffer, _OWNER.get(row.owner, row.owner), Text(row.padding), *cells,
            Text(after, style=style),
        )  # fmt: skip
    return table


def render_probe(run: ProbeRun, console: Console) -> None:
    cfg = run.config
    console.rule(
        f"[bold]probe[/bold] {cfg.get('model')} · {cfg.get('behavior')} · "
        + (f"{str(cfg['runner']).upper()} · " if cfg.get("runner") else "")
        + f"{cfg.get('attention_backend')} · "
        f"backend {run.backend}",
        align="left",
    )
    console.print(
        f"modes {', '.join(cfg.get('modes', []))} · K={cfg.get('num_speculative_tokens')} · "
        f"max_num_seqs={cfg.get('max_num_seqs')} · pool {cfg.get('pool')} · "
        f"{len(run.cases)} case(s) in {run.duration_s:.1f} s"
        + (f" · {cfg['workers']} worker(s)" if run.isolated and cfg.get("workers") else "")
        + ("" if run.isolated else " · [yellow]not isolated[/yellow]")
    )
    console.print(Fitted(_cases_table(run)))
    _findings(run, console)
    console.print(Fitted(_matrix(run)))


def render_behaviors(listing: BehaviorList, console: Console) -> None:
    """`probe --list-behaviors`: each profile with its releases and its own engine's flags."""
    table = Table(title="Behaviors", title_justify="left", show_lines=True)
    table.add_column("behavior", style="bold", no_wrap=True)
    table.add_column("what it reproduces", overflow="fold")
    for row in listing.behaviors:
        flags = [
            f"{'✓' if f.on else '✗'} {name} ({f.ref})"
            for name, f in row.flags.items()
            if FLAGS[name].engine == row.framework
        ]
        releases = f"releases {row.versions}"
        table.add_row(row.name, row.summary + "\n[dim]" + "\n".join([releases, *flags]) + "[/dim]")
    console.print(table)
    console.print("[dim]flags:[/dim]")
    for name, flag in FLAGS.items():
        console.print(f"  [bold]{name}[/bold] ({flag.ref}): {flag.meaning}")
