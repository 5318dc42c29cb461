"""Tables that stay readable at any width: as drawn, wrapped, or stacked one row per block.

Rich cuts a table that cannot fit to "rese…", "all…", and when it shrinks a table it takes
width from the widest column first, so `eagle.last_token_indices` folds into `…indice` / `s`
while a narrow column keeps blanks to spare. `Fitted` keeps every cell whole: the table as
designed when it fits; else it gives each column at least its longest unbreakable piece (a
whole number with its unit, a whole identifier; headers may wrap at spaces) and shares out
the rest, so cells wrap only at spaces; and when even that does not fit, each row becomes a
small block of `header: value` lines, the first cell as its heading, long identifiers folded
after a `.`, `_` or `/` rather than mid-name (`Folded`).
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import re
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Column, Table
from rich.text import Text

_UNBOUNDED = 10_000
_BREAK_AFTER = "._/-,=:)"  # where a token too long for its line may fold
_WORD = re.compile(r"\S+")
# a number with its unit is one word: "35.69 GiB" never ends one line and starts the next
_CHUNK = re.compile(r"\S*\d\s(?:[KMGT]i?B|B|ms|µs|s|%)(?=[\s,.;:)\]]|$)|\S+")


def _cuts(plain: str, pos: int, end: int, width: int) -> list[int]:
    """Where to fold the word plain[pos:end] so no piece is wider than `width`: after the last
    separator that fits, at the edge only when a piece has none."""
    cuts = []
    while end - pos > width > 0:
        window = plain[pos : pos + width]
        at = max(window.rfind(c) for c in _BREAK_AFTER)
        pos = pos + at + 1 if at > 0 else pos + width
        cuts.append(pos)
    return cuts


def fold_tokens(text: Text, width: int) -> Text:
    """`text` with each word longer than `width` split into lines after a separator.

    Rich folds a long word at the column edge, mid-name; this breaks it after the last `.`,
    `_`, `/`, `-`, `,`, `=` or `:` that fits, and only cuts at the edge when the word has none.
    """
    plain = text.plain
    cuts = [c for m in _WORD.finditer(plain) for c in _cuts(plain, *m.span(), width)]
    if not cuts:
        return text
    bounds = [0, *cuts, len(plain)]
    folded = Text("\n").join(text[a:b] for a, b in itertools.pairwise(bounds))
    folded.end = text.end
    return folded


def _line_spans(plain: str, width: int) -> list[tuple[int, int]]:
    """Greedy lines over `plain`'s chunks (words; a number with its unit), a chunk wider than
    a line folded into pieces of their own."""
    indent = len(plain) - len(plain.lstrip(" "))
    lines: list[tuple[int, int]] = []
    start = end = -1
    for match in _CHUNK.finditer(plain, indent):
        a, b = match.span()
        if start >= 0 and b - start <= width:
            end = b
            continue
        if start >= 0:
            lines.append((start, end))
        bounds = [a, *_cuts(plain, a, b, width), b]
        lines.extend(itertools.pairwise(bounds[:-1]))
        start, end = bounds[-2], b
    if start < 0:
        return [(0, len(plain))]
    lines.append((start, end))
    lines[0] = (0, lines[0][1])  # the paragraph keeps its own indent
    return lines


def wrap_words(text: Text, width: int) -> Text:
    """`text` wrapped to `width` at spaces, a number kept with its unit, words too long for a
    line folded after a separator; styles kept."""
    out = [
        paragraph[a:b]
        for paragraph in text.split("\n", allow_blank=True)
        for a, b in _line_spans(paragraph.plain, width)
    ]
    wrapped = Text("\n").join(out)
    wrapped.end = text.end
    return wrapped


def _pieces(plain: str) -> int:
    """The longest piece of `plain` that folding at separators cannot split."""
    parts = re.split(r"\s+|(?<=[" + re.escape(_BREAK_AFTER) + "])", plain)
    return max((len(p) for p in parts), default=0)


def label_grid() -> Table:
    """Dim labels, each beside its value; a long value folds under its own column."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column(overflow="fold")
    return grid


class Folded:
    """A text that wraps at spaces (a number with its unit), and folds long identifiers
    after a separator, never mid-name."""

    def __init__(self, text: Text | str, style: str = "") -> None:
        self.text = Text(text, style=style) if isinstance(text, str) else text

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        natural = Measurement.get(console, options, self.text)
        return Measurement(min(_pieces(self.text.plain), natural.maximum), natural.maximum)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield wrap_words(self.text, options.max_width)


def _header(column: Column) -> str:
    header = column.header
    return header.plain if isinstance(header, Text) else str(header)


def _cell_text(value: Any) -> Any:
    return Text(value) if isinstance(value, str) else value


def _measure(console: Console, options: ConsoleOptions, value: Any) -> Measurement:
    if value is None or value == "":
        return Measurement(0, 0)
    return Measurement.get(console, options, _cell_text(value))


class Fitted:
    """A table that wraps at spaces, then stacks, rather than truncate or split its cells."""

    def __init__(self, table: Table, heading_columns: int = 1) -> None:
        self.table = table
        self.heading_columns = heading_columns

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        natural = Measurement.get(console, options, self.table)
        return Measurement(min(natural.minimum, options.max_width), natural.maximum)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        unbounded = options.update_width(_UNBOUNDED)  # Measurement.get clamps to the width
        if Measurement.get(console, unbounded, self.table).maximum <= width:
            yield self.table
            return
        widths = self._column_widths(console, unbounded, width)
        if widths is None:
            yield from self._stacked(width)
        else:
            yield self._wrapping(widths)

    def _ranges(self, console: Console, options: ConsoleOptions) -> list[tuple[int, int, int]]:
        """Each column's (least, natural, body) content width: a no-wrap column's cells stay
        whole, only its header may wrap at spaces; `body` is what its cells alone need."""
        ranges = []
        for column in self.table.columns:
            low = high = body = 0
            for where, value in (("header", column.header), ("footer", column.footer)):
                if where == "footer" and not self.table.show_footer:
                    continue
                if where == "header" and not self.table.show_header:
                    continue
                m = _measure(console, options, value)
                low, high = max(low, m.minimum), max(high, m.maximum)
                body = max(body, m.maximum) if where == "footer" else body
            for value in column._cells:
                m = _measure(console, options, value)
                low = max(low, m.maximum if column.no_wrap else m.minimum)
                high = max(high, m.maximum)
                body = max(body, m.maximum)
            if column.width is not None:
                low = high = body = max(low, column.width)
            ranges.append((low, high, max(low, body)))
        return ranges

    def _column_widths(
        self, console: Console, options: ConsoleOptions, width: int
    ) -> list[int] | None:
        """Content widths that fit `width` with every column at least its least width: headers
        wider than their cells wrap first (one line more, not one per row), then the columns
        that can wrap give up width in proportion to their slack."""
        table = self.table
        padding = [table._get_padding_width(i) for i in range(len(table.columns))]
        ranges = self._ranges(console, options)
        room = width - sum(padding) - table._extra_width
        if sum(low for low, _, _ in ranges) > room:
            return None
        widths = [high for _, high, _ in ranges]
        excess = sum(widths) - room
        for i, (_, high, body) in enumerate(ranges):
            give = min(max(excess, 0), high - body)
            widths[i] -= give
            excess -= give
        slack = [w - low for w, (low, _, _) in zip(widths, ranges, strict=True)]
        total = sum(slack)
        if excess > 0 and total:
            cut = [excess * s // total for s in slack]
            short = excess - sum(cut)
            for i in sorted(range(len(slack)), key=lambda i: -slack[i]):
                if short <= 0:
                    break
                if cut[i] < slack[i]:
                    cut[i] += 1
                    short -= 1
            widths = [w - c for w, c in zip(widths, cut, strict=True)]
        return widths

    def _wrapping(self, widths: list[int]) -> Table:
        """The same table with each column at its given width, allowed to wrap at spaces."""
        loose = copy.copy(self.table)
        loose.columns = [
            dataclasses.replace(c, width=w, no_wrap=False, overflow="fold", _cells=list(c._cells))
            for c, w in zip(self.table.columns, widths, strict=True)
        ]
        return loose

    def _stacked(self, width: int) -> RenderResult:
        """One block per row: the heading cells, then `header: value` for the others."""
        table = self.table
        if table.title:
            yield Text(table.title) if isinstance(table.title, str) else table.title
        columns = table.columns
        rows = table.row_count
        keys = columns[: self.heading_columns]
        rest = columns[self.heading_columns :]
        key_width = max((len(_header(c) or "·") for c in rest), default=1)
        room = max(width - 2 - key_width - 1, 8)
        for index in range(rows + (1 if table.show_footer else 0)):
            footer = index == rows
            heading = Text(style="bold")
            for column in keys:
                value = column.footer if footer else column._cells[index]
                part = _cell_text(value)
                if heading.plain and isinstance(part, Text) and part.plain:
                    heading.append(" ")
                if isinstance(part, Text):
                    heading.append_text(part)
            grid = label_grid()
            for column in rest:
                value = column.footer if footer else column._cells[index]
                if value is None or (isinstance(value, (str, Text)) and not str(value).strip()):
                    continue
                cell: RenderableType = _cell_text(value)
                if isinstance(cell, Text):
                    cell = fold_tokens(cell, room)
                grid.add_row(_header(column) or "·", cell)
            yield fold_tokens(heading, width)
            yield Padding(grid, (0, 0, 0, 2))
