"""The results floor and the renderers above it import only what DESIGN.md allows them.

`results/` imports nothing above it (leaf helpers and the knowledge package only), and
`reports/` reads results and knowledge alone: a renderer that reached into probes/, rig/,
triage/ or system/ could compute, and a saved run could then render differently from a live one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import eaglegraph

ROOT = Path(eaglegraph.__file__).parent
LEAVES = {"eaglegraph", "eaglegraph.errors", "eaglegraph.serial"}
ALLOWED = {
    "results": ("eaglegraph.results", "eaglegraph.known"),
    "reports": ("eaglegraph.reports", "eaglegraph.results", "eaglegraph.known"),
}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {n for n in names if n == "eaglegraph" or n.startswith("eaglegraph.")}


@pytest.mark.parametrize("floor", sorted(ALLOWED))
def test_floor_imports_only_what_it_may(floor: str) -> None:
    files = sorted((ROOT / floor).glob("*.py"))
    assert files
    bad = {
        f"{path.name}: {name}"
        for path in files
        for name in _imports(path)
        if name not in LEAVES and not name.startswith(ALLOWED[floor])
    }
    assert not bad, sorted(bad)
