"""Terminal view of `eaglegraph probe`: cases, findings, and the padding-region matrix."""

from __future__ import annotations

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from eaglegraph.known.profiles import DEFAULT_PROFILE, FLAGS
from eaglegraph.reports.format import SEVERITY_STYLE
from eaglegraph.reports.layout import Fitted, Folded, label_grid
from eaglegraph.results.behaviors import BehaviorList
from eaglegraph.results.probe import MatrixRow, ProbeRun

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
        # a case that ran to the end but caught something is not "ok" to a reader
        found = c.status == "ok" and c.hits > 0
        word = "findings" if found else c.status
        status = Text(word, style="green" if word == "ok" else "bold red")
        descs = " / ".join(c.descriptors.get(p, "—") for p in run.phases)
        table.add_row(c.name, status, descs, str(c.hits), f"{c.duration_s:.1f} s")
    return table


def _findings(run: ProbeRun, console: Console) -> None:
    if not run.findings:  # the summary says so
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
# what the step did to a poisoned padding region, in words a reader does not misread: a region
# the step never wrote still holds the poison, which is harmless unless something read it
_AFTER_STEP = {"filled": "written", "stale": "poison kept", "partly": "partly written"}


def _matrix(run: ProbeRun, console: Console) -> None:
    """The padding regions that were read while poisoned; the others as one line."""
    read = [row for row in run.matrix if row.reads]
    quiet = [row for row in run.matrix if not row.reads]
    if read:
        console.print(Fitted(_matrix_table(run, read)))
    if quiet:
        words = [_AFTER_STEP.get(row.after_step, row.after_step) for row in quiet]
        kinds = ", ".join(f"{w} {words.count(w)}" for w in dict.fromkeys(words))
        lead = f"{len(quiet)} more" if read else f"all {len(quiet)}"
        console.print(
            f"[bold]Padding regions[/bold]: {lead} never read while poisoned "
            f"[dim](after the step: {kinds}; `--json` lists them)[/dim]"
        )


def _matrix_table(run: ProbeRun, rows: list[MatrixRow]) -> Table:
    table = Table(
        title="Padding regions read while poisoned (×n: reads the guards saw per phase)",
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
    for row in sorted(rows, key=lambda r: (r.owner, r.buffer)):
        cells = []
        for phase in run.phases:
            n = row.reads.get(phase, 0)
            cells.append(Text(f"×{n}", style="bold red") if n else Text("·", style="dim"))
        after = _AFTER_STEP.get(row.after_step, row.after_step)
        table.add_row(
            row.buffer, _OWNER.get(row.owner, row.owner), Text(row.padding), *cells,
            Text(after, style="yellow" if row.after_step == "stale" else ""),
        )  # fmt: skip
    return table


def _summary(run: ProbeRun, console: Console) -> None:
    """The last lines on screen: what was found where, the fix, and the next command."""
    cfg = run.config
    model = cfg.get("model") or "MODEL"
    console.rule("[bold]Summary[/bold]", align="left")
    if not run.findings:
        console.print(
            f"[green]clean[/green]: {len(run.cases)} case(s), no stale or out-of-bounds read "
            f"under {cfg.get('behavior')}",
            highlight=False,
        )
    for i, f in enumerate(run.findings):
        where = " ".join(x for x in (f.buffer, f"in {f.phase}" if f.phase else None) if x)
        line = Text(f"✖ {f.kind or f.id} ", style=SEVERITY_STYLE.get(f.severity, ""))
        console.print(line.append(where or f.message, style="bold"))
        following = run.findings[i + 1] if i + 1 < len(run.findings) else None
        if f.fix and (following is None or following.fix != f.fix):  # once per run of a fix
            console.print(Padding(Folded(f"fix: {f.fix}"), (0, 0, 0, 2)))
    console.print("[bold]Next[/bold]")
    steps = [("explore the run (saved with --save RUN.json)", "eaglegraph explore RUN.json")]
    current = DEFAULT_PROFILE.get(str(cfg.get("framework") or "vllm"))
    if run.findings and current and cfg.get("behavior") != current:
        modes = " ".join(f"--mode {m}" for m in cfg.get("modes", []))
        steps.append(
            (f"check {current} (the newest semantics)",
             f"eaglegraph probe {model} --behavior {current} {modes}".rstrip())
        )  # fmt: skip
    if not run.findings:
        steps.append(("see the graphs and their pools", f"eaglegraph capture {model}"))
    for label, command in steps:  # the command on a line of its own, to copy
        console.print(f"  {label}:", highlight=False)
        console.print(Text(f"    {command}", style="bold"), soft_wrap=True)


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
    for line in run.reference_compares:  # what the reference differential compared
        console.print(f"[dim]reference compares: {line}[/dim]", highlight=False)
    _matrix(run, console)  # above the findings, so they are what stays on screen
    _findings(run, console)
    _summary(run, console)


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
