"""The capture timeline: one row per graph, grouped by phase, with bars drawn to scale.

Also home of the small layout pieces the other capture views share (phase order, the emulated
backend's "N/A", time formatting, the bar), so every view spells them the same way. Bars are
the only arithmetic here: a row's share of the longest capture or the largest allocation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from eaglegraph.reports.format import fmt_bytes
from eaglegraph.results.capture import PHASES, CaptureEvent, CaptureRun

EMULATED_NA = "N/A (emulated backend)"
SEGMENTED_MODES = ("PIECEWISE", "BREAKABLE")
WIDE = 100  # console width from which the timeline also draws a bar for bytes

_EIGHTHS = " ▏▎▍▌▋▊▉"


def memory_na(run: CaptureRun) -> bool:
    """The emulated backend measures no memory: every byte figure reads N/A."""
    return not run.memory_measured


def phase_order(phases: Iterable[str]) -> list[str]:
    """Known phases in capture order (target, draft_prefill, draft_decode), then any others."""
    seen = list(dict.fromkeys(phases))
    return [p for p in PHASES if p in seen] + [p for p in seen if p not in PHASES]


def fmt_seconds(seconds: float) -> str:
    if seconds < 0.001:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    if seconds < 100:
        return f"{seconds:.2f} s"
    return f"{seconds:.0f} s"


def fmt_reqs(event: CaptureEvent) -> str:
    return f"{event.num_tokens}/{'—' if event.num_reqs is None else event.num_reqs}"


class Bar:
    """A horizontal bar that fills `fraction` of whatever width its table cell gets.

    Drawing at render time (not at a fixed character count) keeps bars to scale at 80 columns
    and lets them grow on a wider terminal or in the HTML export.
    """

    def __init__(self, fraction: float, style: str = "") -> None:
        self.fraction = min(max(fraction, 0.0), 1.0)
        self.style = style

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(4, max(4, options.max_width))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        eighths = round(self.fraction * options.max_width * 8)
        if self.fraction > 0 and eighths == 0:
            eighths = 1  # a nonzero value never draws as nothing
        full, rest = divmod(eighths, 8)
        yield Text("█" * full + (_EIGHTHS[rest] if rest else ""), style=self.style)


def _share(value: float | None, largest: float) -> float:
    return 0.0 if value is None or largest <= 0 else max(value, 0) / largest


def timeline_rows(run: CaptureRun) -> list[CaptureEvent]:
    """The captured graphs, then the failed attempt (if any) as the last row."""
    rows = list(run.events)
    if run.failed is not None and run.failed not in rows:
        rows.append(run.failed)
    return rows


def render_timeline(run: CaptureRun, console: Console) -> None:
    rows = timeline_rows(run)
    if not rows:
        console.print(Text("Capture timeline: no graphs captured", style="bold"))
        return
    na = memory_na(run)
    longest = max(e.duration_s for e in rows)
    largest = max((e.bytes or 0 for e in rows), default=0)
    byte_bar = not na and largest > 0 and console.width >= WIDE
    segmented = any(e.mode in SEGMENTED_MODES or e.segments > 1 for e in rows)
    fit = _fit(rows, run, na, segmented, console.width, 2 if byte_bar else 1)
    byte_bar = byte_bar and fit.bar

    console.print(Text("Capture timeline", style="bold"))
    long = len(rows) > LONG_TIMELINE
    hidden_total = 0
    for n, phase in enumerate(phase_order(e.phase for e in rows)):
        mine = [e for e in rows if e.phase == phase]
        table = _phase_table(phase, mine, fit, segmented, byte_bar, header=n == 0)
        for part in _runs(mine) if long else [mine]:
            shown, hidden = _summarised(part)
            for e in shown[:HEAD] if hidden else shown:
                table.add_row(*_cells(e, run, na, longest, largest, fit, segmented, byte_bar))
            if not hidden:
                continue
            hidden_total += len(hidden)
            console.print(Padding(table, (0, 0, 0, 2)))
            console.print(Padding(_hidden_line(hidden), (0, 0, 0, 4)))
            table = _phase_table(phase, mine, fit, segmented, byte_bar, header=False)
            table.title = None
            for e in shown[HEAD:]:
                table.add_row(*_cells(e, run, na, longest, largest, fit, segmented, byte_bar))
        console.print(Padding(table, (0, 0, 0, 2)))
    if hidden_total:
        note = f"  {hidden_total} graphs not listed; every graph: --json, --html or --trace"
        console.print(Text(note, style="dim"))
    if fit.short_pools:
        legend = Text("  pools: ", style="dim")
        legend.append("  ".join(f"{pid} {label}" for pid, label in _pool_names(run, rows)))
        console.print(legend)
    if not fit.bar:
        return _na_line(console, na)
    legend = Text("  bars: capture time ", style="dim")
    legend.append("█", style="cyan")
    legend.append(f" (longest {fmt_seconds(longest)})", style="dim")
    if byte_bar:
        legend.append(" · bytes added ", style="dim")
        legend.append("█", style="magenta")
        legend.append(f" (largest {fmt_bytes(largest)})", style="dim")
    console.print(legend)
    _na_line(console, na)


def _na_line(console: Console, na: bool) -> None:
    if na:
        console.print(Text(f"  memory figures: {EMULATED_NA}", style="yellow"))


LONG_TIMELINE = 40  # rows from which runs of one mode are summarised
HEAD, TAIL = 3, 2  # rows kept at each end of a summarised run


def _runs(rows: Sequence[CaptureEvent]) -> list[list[CaptureEvent]]:
    """Consecutive rows of one mode (a phase captures PIECEWISE, then FULL, largest first)."""
    runs: list[list[CaptureEvent]] = []
    for e in rows:
        if runs and runs[-1][-1].mode == e.mode:
            runs[-1].append(e)
        else:
            runs.append([e])
    return runs


def _summarised(rows: list[CaptureEvent]) -> tuple[list[CaptureEvent], list[CaptureEvent]]:
    """The rows to show (both ends, and every failure) and those a summary line stands for."""
    if len(rows) <= HEAD + TAIL + 3:
        return rows, []
    middle = rows[HEAD:-TAIL]
    hidden = [e for e in middle if e.status == "ok"]
    if len(hidden) < 2:
        return rows, []
    shown = rows[:HEAD] + [e for e in middle if e.status != "ok"] + rows[-TAIL:]
    return shown, hidden


def _hidden_line(hidden: Sequence[CaptureEvent]) -> Text:
    sizes = [e.num_tokens for e in hidden]
    seconds = fmt_seconds(sum(e.duration_s for e in hidden))
    return Text(
        f"⋮ {len(hidden)} more {hidden[0].mode}: tokens {max(sizes)} to {min(sizes)}, "
        f"{seconds} of capture",
        style="dim",
    )


_HEADERS = ("mode", "tokens/reqs", "pool", "segs", "warmup", "capture", "bytes added")
_INDENT, _GAP, _BAR = 2, 2, 4  # the table's indent, the blanks between columns, a bar's least


@dataclass
class _Fit:
    """How the timeline fits the console: column widths, pools by id (with a legend line)
    instead of by label, and whether the time bar has room."""

    widths: dict[str, int]
    short_pools: bool
    bar: bool
    dropped: tuple[str, ...] = ()


def _fit(
    rows: Sequence[CaptureEvent],
    run: CaptureRun,
    na: bool,
    segmented: bool,
    width: int,
    bars: int,
) -> _Fit:
    """The widest layout that fits: long pool labels give way to ids first (a legend names
    them, when there are few), then the time bar (the capture column keeps the number), then
    the warmup and segments columns."""
    few = len(_pool_names(run, rows)) <= 4
    for short, bar, dropped in (
        (False, True, ()),
        (True, True, ()),
        (True, False, ()),
        (True, False, ("warmup",)),
        (True, False, ("warmup", "segs")),
    ):
        short = short and few
        widths = _widths(rows, run, na, short)
        shown = [h for h in _HEADERS if h not in dropped and (h != "segs" or segmented)]
        need = _INDENT + sum(widths[h] for h in shown) + _GAP * (len(shown) - 1)
        if bar:
            need += (_GAP + _BAR) * bars
        if need <= width:
            break
    return _Fit(widths, short, bar, dropped)


def _pool_names(run: CaptureRun, rows: Sequence[CaptureEvent]) -> list[tuple[str, str]]:
    """(id, label) of each pool the rows use, in order of first use."""
    pools = dict.fromkeys(e.pool for e in rows if e.pool is not None)
    return [(str(p), run.pool_label(p) or str(p)) for p in pools]


def _widths(
    rows: Sequence[CaptureEvent], run: CaptureRun, na: bool, short: bool = False
) -> dict[str, int]:
    """Fixed column widths shared by every phase's table, so the groups line up."""
    cells = [_texts(e, run, na, short) for e in rows]
    return {h: max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(_HEADERS)}


def _texts(e: CaptureEvent, run: CaptureRun, na: bool, short: bool = False) -> tuple[str, ...]:
    added = e.status.upper() if e.status != "ok" else "N/A" if na else fmt_bytes(e.bytes)
    pool = (
        (str(e.pool) if short else run.pool_label(e.pool) or str(e.pool))
        if e.pool is not None
        else "—"
    )
    segs = str(e.segments) if e.mode in SEGMENTED_MODES or e.segments > 1 else ""
    return (
        e.mode,
        fmt_reqs(e),
        pool,
        segs,
        fmt_seconds(e.warmup_s),
        fmt_seconds(e.duration_s),
        added,
    )


def _phase_table(
    phase: str,
    rows: Sequence[CaptureEvent],
    fit: _Fit,
    segmented: bool,
    byte_bar: bool,
    header: bool,
) -> Table:
    """One phase's rows; only the first phase carries the column headers."""
    ok = sum(1 for e in rows if e.status == "ok")
    title = Text(phase, style="bold cyan")
    title.append(f"  {ok} graph{'s' if ok != 1 else ''}", style="dim")
    if ok < len(rows):
        title.append(f" + {len(rows) - ok} failed", style="bold red")
    table = Table(
        title=title,
        title_justify="left",
        show_header=header,
        expand=True,
        box=None,
        padding=(0, 1),
        pad_edge=False,
        header_style="dim",
    )
    for h in _HEADERS:
        if (h == "segs" and not segmented) or h in fit.dropped:
            continue
        right = h not in ("mode", "pool")
        width = fit.widths[h]
        table.add_column(h, width=width, justify="right" if right else "left", no_wrap=True)
    if fit.bar:
        table.add_column("time", ratio=1, no_wrap=True)
    if byte_bar:
        table.add_column("bytes", ratio=1, no_wrap=True)
    return table


def _cells(
    e: CaptureEvent,
    run: CaptureRun,
    na: bool,
    longest: float,
    largest: int,
    fit: _Fit,
    segmented: bool,
    byte_bar: bool,
) -> list[Text | Bar]:
    failed = e.status != "ok"
    style = "bold red" if failed else ""
    texts = [
        Text(t, style=style)
        for h, t in zip(_HEADERS, _texts(e, run, na, fit.short_pools), strict=True)
        if h not in fit.dropped and (h != "segs" or segmented)
    ]
    cells: list[Text | Bar] = list(texts)
    if fit.bar:
        cells.append(Bar(_share(e.duration_s, longest), "red" if failed else "cyan"))
    if byte_bar:
        cells.append(Text("✖", style=style) if failed else Bar(_share(e.bytes, largest), "magenta"))
    return cells
