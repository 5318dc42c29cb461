"""Tables of engine knowledge keyed by their rows' own names, with the names checked unique.

A `{row.id: row for row in (...)}` table keeps the last of two rows that share an id and drops
the first without a word; every table of `known/` (and the presets) is built here instead, so a
copied row that forgot its new id fails at import.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


def keyed(key: Callable[[T], K], *rows: T) -> dict[K, T]:
    """The rows by `key(row)`, in their order; a key given twice is a typo in the table."""
    table: dict[K, T] = {}
    for row in rows:
        k = key(row)
        if k in table:
            raise ValueError(f"two rows of one table are keyed {k!r}")
        table[k] = row
    return table
