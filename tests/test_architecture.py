"""The package's structure, as DESIGN.md draws it: every floor imports only the floors below it,
and no module imports itself back through others.

Every import counts — at module level, inside functions, and under TYPE_CHECKING — since a
deferred import hides a cycle without removing it (the one that runs first then depends on
the order of the others). The root package's lazy API (`from eaglegraph import Rig`) is the
one exception: it is the library's front door, above every floor.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

import eaglegraph

ROOT = Path(eaglegraph.__file__).parent
# leaf helpers any floor may use: the error types, JSON helpers and frame classification
LEAVES = {"errors", "serial", "frames"}
# what each package may import besides itself and the leaves (DESIGN.md, "Layers")
ALLOWED: dict[str, set[str]] = {
    "cli": {"reports", "probes", "triage", "system", "rig", "models", "kernels", "pair", "known", "results"},
    "reports": {"results", "known"},  # renderers read results; they never compute
    "probes": {"rig", "models", "kernels", "pair", "known", "results"},
    "triage": {"rig", "pair", "known", "results"},
    "system": {"known", "results"},
    "rig": {"models", "kernels", "pair", "known", "results"},
    "models": {"kernels", "pair", "known", "results"},
    "kernels": {"known", "results"},
    "pair": {"known", "results"},
    "results": {"known"},
    "known": set(),  # engine knowledge is the bottom floor
    "errors": set(),
    "serial": {"errors"},
    "frames": {"results", "errors"},
}  # fmt: skip


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _graph() -> dict[str, set[str]]:
    """Module → the package modules it imports (a name imported from a package resolves to
    its submodule where one exists)."""
    modules = {_module(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        out: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    out.add(sub if sub in modules else node.module)
            elif isinstance(node, ast.Import):
                out.update(alias.name for alias in node.names)
        graph[name] = {m for m in out if m in modules and m != name}
    return graph


def _floor(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_floor_imports_only_the_floors_below() -> None:
    assert set(ALLOWED) >= {_floor(m) for m in _graph() if m.count(".") >= 1} - {"__main__"}
    bad = []
    for module, deps in _graph().items():
        floor = _floor(module)
        if floor in ("", "__main__"):
            continue
        may = ALLOWED[floor] | (set() if floor in LEAVES else LEAVES) | {floor}
        bad += [f"{module} -> {dep}" for dep in deps if _floor(dep) not in may | {""}]
    assert not bad, "\n".join(sorted(bad))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles() -> None:
    graph = {m: d - {"eaglegraph"} for m, d in _graph().items() if m != "eaglegraph"}
    assert _cycles(graph) == []


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}, "c": set()}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": set()}, []),
    ],
)
def test_cycle_finder(graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert _cycles(graph) == expected
