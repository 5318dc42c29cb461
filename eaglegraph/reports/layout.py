"""Tables that stay readable at any width: as drawn, wrapped, or stacked one row per block.

Rich cuts a table that cannot fit to "rese…", "all…": the content a support engineer needed
is gone. `Fitted` keeps it: the table as designed when it fits; else its cells may wrap at
spaces (a header "vs ideal" over two lines); and when even the longest words do not fit,
each row becomes a small block of `header: value` lines, the first cell as its heading.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Column, Table
from rich.text import Text

_UNBOUNDED = 10_000


def _wrapping(table: Table) -> Table:
    """The same table with every column allowed to wrap (widths still fixed where set)."""
    loose = copy.copy(table)
    loose.columns = [
        dataclasses.replace(c, no_wrap=False, overflow="fold", _cells=list(c._cells))
        for c in table.columns
    ]
    return loose


def _header(column: Column) -> str:
    header = column.header
    return header.plain if isinstance(header, Text) else str(header)


def _cell_text(value: Any) -> Any:
    return Text(value) if isinstance(value, str) else value


class Fitted:
    """A table that wraps, then stacks, rather than truncate its cells."""

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
        loose = _wrapping(self.table)
        if Measurement.get(console, unbounded, loose).minimum <= width:
            yield loose
            return
        yield from self._stacked()

    def _stacked(self) -> RenderResult:
        """One block per row: the heading cells, then `header: value` for the others."""
        table = self.table
        if table.title:
            yield Text(table.title) if isinstance(table.title, str) else table.title
        columns = table.columns
        rows = table.row_count
        keys = columns[: self.heading_columns]
        rest = columns[self.heading_columns :]
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
            grid = Table.grid(padding=(0, 1))
            grid.add_column(style="dim", no_wrap=True)
            grid.add_column(overflow="fold")
            for column in rest:
                value = column.footer if footer else column._cells[index]
                if value is None or (isinstance(value, (str, Text)) and not str(value).strip()):
                    continue
                grid.add_row(_header(column) or "·", _cell_text(value))
            yield heading
            yield Padding(grid, (0, 0, 0, 2))
