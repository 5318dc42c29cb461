"""The capture page's memory-over-time plot: each graph pool's bytes along the capture
timeline, as inline SVG (no script, no external file), for people who would rather look than
read the pool table.

Each captured graph adds the bytes the run attributed to it (`CaptureEvent.bytes`) to its
pool at the moment its capture ended; a pool's line is those steps. The plot draws what the
events hold: on the emulated backend, which measures no memory, it says so instead.
"""

from __future__ import annotations

import html
import itertools

from eaglegraph.reports.format import fmt_bytes
from eaglegraph.results.capture import CaptureEvent, CaptureRun

WIDTH, HEIGHT = 760, 260
LEFT, RIGHT, TOP, BOTTOM = 70, 170, 16, 34  # margins: axis labels left, legend right
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b")


def _series(run: CaptureRun) -> dict[str, list[tuple[float, int]]]:
    """Per pool label: (time the capture ended, the pool's bytes after it), from 0 at 0 s."""
    lines: dict[str, list[tuple[float, int]]] = {}
    ok: list[CaptureEvent] = [e for e in run.events if e.status == "ok" and e.bytes is not None]
    for e in ok:
        label = run.pool_label(e.pool) or "default"
        points = lines.setdefault(label, [(0.0, 0)])
        points.append((e.start_s + e.duration_s, points[-1][1] + (e.bytes or 0)))
    return lines


def memory_plot_svg(run: CaptureRun) -> str:
    """The plot as an HTML section (a heading and one <svg>), or a one-line note."""
    head = "<h3>Graph pool memory over the capture</h3>"
    if not run.memory_measured:
        return (
            f'<section id="memory-plot">{head}<p>The emulated backend measures no memory: '
            "run the capture on a CUDA GPU for this plot, or <kbd>eaglegraph inspect MODEL "
            "--predict-memory</kbd> for the CPU prediction.</p></section>"
        )
    lines = _series(run)
    if not lines:
        return f'<section id="memory-plot">{head}<p>No graph was captured.</p></section>'
    end = max(t for points in lines.values() for t, _ in points) or 1.0
    top = max(b for points in lines.values() for _, b in points) or 1
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(t: float) -> float:
        return LEFT + t / end * plot_w

    def y(b: float) -> float:
        return TOP + plot_h - b / top * plot_h

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" font-family="sans-serif" font-size="11">',
        f"<title>graph pool bytes per pool over {end:.2f} s of capture</title>",
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}" '
        'stroke="#555"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="#555"/>',
    ]
    for frac in (0, 0.5, 1):  # y ticks: 0, half, the largest pool
        yy = y(top * frac)
        parts.append(
            f'<text x="{LEFT - 6}" y="{yy + 4:.1f}" text-anchor="end">'
            f"{html.escape(fmt_bytes(top * frac))}</text>"
        )
    for frac in (0, 0.5, 1):  # x ticks: seconds since the first capture began
        xx = x(end * frac)
        parts.append(
            f'<text x="{xx:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">'
            f"{end * frac:.2f} s</text>"
        )
    for i, (label, points) in enumerate(lines.items()):
        color = COLORS[i % len(COLORS)]
        path = [f"{x(points[0][0]):.1f},{y(points[0][1]):.1f}"]
        for (_, prev), (t, b) in itertools.pairwise(points):  # steps, not slopes
            path += [f"{x(t):.1f},{y(prev):.1f}", f"{x(t):.1f},{y(b):.1f}"]
        name = html.escape(label)
        final = html.escape(fmt_bytes(points[-1][1]))
        parts.append(
            f'<polyline class="pool" data-pool="{name}" fill="none" stroke="{color}" '
            f'stroke-width="2" points="{" ".join(path)}"><title>{name}: {final}</title></polyline>'
        )
        ly = TOP + 14 + 18 * i
        parts.append(
            f'<rect x="{LEFT + plot_w + 14}" y="{ly - 9}" width="12" height="3" fill="{color}"/>'
            f'<text x="{LEFT + plot_w + 32}" y="{ly - 4}">{name} {final}</text>'
        )
    parts.append("</svg>")
    return f'<section id="memory-plot">{head}{"".join(parts)}</section>'
