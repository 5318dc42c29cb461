"""Fixtures shared by the report tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reports.explore_runs import make_runs


@pytest.fixture(scope="session")
def explore_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The saved runs the terminal and HTML explorer tests open, made once (the probe is the
    slow part); tests read them and write elsewhere."""
    return make_runs(tmp_path_factory.mktemp("explore-runs"))
