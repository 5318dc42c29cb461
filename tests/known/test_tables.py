"""`keyed` builds every table of known/ (and the presets): order kept, a repeated key refused."""

from __future__ import annotations

import pytest

from eaglegraph.known.dp_scenarios import SCENARIOS
from eaglegraph.known.hazards import HAZARDS
from eaglegraph.known.pair_checks import PAIR_CHECKS
from eaglegraph.known.tables import keyed
from eaglegraph.pair.presets import PRESETS

pytestmark = pytest.mark.fast


def test_rows_keyed_in_order() -> None:
    table = keyed(len, "a", "bb", "ccc")
    assert list(table.items()) == [(1, "a"), (2, "bb"), (3, "ccc")]


def test_a_key_given_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="keyed 2"):
        keyed(len, "a", "bb", "cc")


def test_tables_keep_their_rows_names() -> None:
    for table, key in (
        (HAZARDS, lambda r: r.id),
        (SCENARIOS, lambda r: r.name),
        (PAIR_CHECKS, lambda r: r.id),
        (PRESETS, lambda r: r.name),
    ):
        assert table and all(key(row) == k for k, row in table.items())
