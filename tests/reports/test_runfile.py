"""Saved runs load back exactly, and every kind of bad file is one BadInput line."""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from eaglegraph.errors import BadInput
from eaglegraph.reports.runfile import render_run
from eaglegraph.results import load_run, run_from_document, schema_of
from eaglegraph.results.capture import CAPTURE_SCHEMA, CaptureRun
from eaglegraph.results.codec import decode
from eaglegraph.results.memdiff import MEMDIFF_SCHEMA, MemdiffRun
from eaglegraph.serial import document, dumps
from tests.reports.runs import cuda_run, emulated_run, memdiff_run, oom_run

RUNS: dict[str, Callable[[], CaptureRun | MemdiffRun]] = {
    "measured": cuda_run,  # not "cuda": that id would pick up the cuda marker's skip
    "emulated": emulated_run,
    "oom": oom_run,
    "memdiff": memdiff_run,
}


def doc_of(run: CaptureRun | MemdiffRun) -> dict[str, Any]:
    return json.loads(dumps(document(schema_of(run), run)))


@pytest.mark.parametrize("name", sorted(RUNS))
def test_round_trip_is_exact(name: str, tmp_path: Path) -> None:
    run = RUNS[name]()
    text = dumps(document(schema_of(run), run))
    assert decode(type(run), json.loads(text), "run") == run
    path = tmp_path / "run.json"
    path.write_text(text, encoding="utf-8")
    assert load_run(path) == run


def test_schema_picks_the_type() -> None:
    assert isinstance(run_from_document(doc_of(cuda_run())), CaptureRun)
    assert isinstance(run_from_document(doc_of(memdiff_run())), MemdiffRun)
    assert doc_of(cuda_run())["schema"] == CAPTURE_SCHEMA
    assert doc_of(memdiff_run())["schema"] == MEMDIFF_SCHEMA


def test_unknown_keys_are_ignored() -> None:
    doc = doc_of(cuda_run())
    doc["added_in_a_later_version"] = {"x": 1}
    doc["events"][0]["new_field"] = 3
    assert run_from_document(doc) == cuda_run()


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        node: Any = doc
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


def _drop(path: str) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        node: Any = doc
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        del node[last]

    return mutate


BAD = [
    (_drop("schema"), "no 'schema' key"),
    (_set("schema", "eaglegraph.behaviors/1"), "not a saved run"),
    (_set("schema", "something.else/3"), "not a saved run"),
    (_set("schema", "eaglegraph.capture/9"), "not supported by this eaglegraph"),
    (_set("schema", 7), "'schema' must be a string"),
    (_drop("totals"), "totals"),
    (_drop("events/2/phase"), "events[2]: missing phase"),
    (_drop("config"), "missing config"),
    (_set("events", {}), "events must be a list, not object"),
    (_set("events/3/duration_s", "fast"), "events[3].duration_s must be a finite number"),
    (_set("events/3/num_tokens", True), "events[3].num_tokens must be an integer"),
    (_set("events/3/num_reqs", 2.5), "events[3].num_reqs must be an integer"),
    (_set("events/0/bytes", "1 MiB"), "events[0].bytes must be an integer"),
    (_set("pools/0/bytes_per_phase/target", None), "bytes_per_phase.target must be an integer"),
    (_set("pools/0", []), "pools[0]: expected an object"),
    (_set("totals/accounted", "yes"), "totals.accounted must be true or false"),
    (_set("config", []), "config must be an object, not list"),
    (_set("replay", [1, 2]), "replay must be an object"),
    (_set("findings", [{"id": "x", "severity": "fatal", "message": "m"}]), "unknown severity"),
    (_set("findings", [{"id": "x", "severity": "info", "message": 1}]), "message must be a string"),
    (_set("failed", {"phase": "target"}), "failed: missing"),
]


@pytest.mark.parametrize(("mutate", "message"), BAD)
def test_bad_capture_documents(mutate: Callable[[dict[str, Any]], None], message: str) -> None:
    doc = doc_of(cuda_run())
    mutate(doc)
    with pytest.raises(BadInput) as info:
        run_from_document(doc, "run.json")
    text = str(info.value)
    assert message in text and text.startswith("run.json: ") and "\n" not in text


def test_bad_memdiff_documents_name_the_side() -> None:
    doc = doc_of(memdiff_run())
    doc["b"]["events"][1]["start_s"] = "later"
    with pytest.raises(BadInput, match=r"b\.events\[1\]\.start_s must be a finite number"):
        run_from_document(doc, "md.json")
    doc = doc_of(memdiff_run())
    doc["per_graph"][0]["a_bytes"] = -0.5
    with pytest.raises(BadInput, match=r"per_graph\[0\]\.a_bytes must be an integer"):
        run_from_document(doc, "md.json")


def test_non_finite_numbers_are_rejected(tmp_path: Path) -> None:
    text = dumps(document(CAPTURE_SCHEMA, cuda_run())).replace(
        '"duration_s": 0.0136', '"duration_s": NaN', 1
    )
    assert "NaN" in text
    path = tmp_path / "nan.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BadInput, match=r"duration_s must be a finite number, not NaN"):
        load_run(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"schema": "eaglegraph.capture/1",\n  "events": [}', "invalid JSON at line 2, column"),
        ("[1, 2, 3]", "expected a JSON object, not a list"),
        ("", "invalid JSON at line 1, column 1"),
    ],
)
def test_bad_files(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "run.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(BadInput, match=message):
        load_run(path)


def test_directory_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="is a directory"):
        load_run(tmp_path)
    with pytest.raises(BadInput, match="does not exist"):
        load_run(tmp_path / "missing.json")


_JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(["[/bold]", "[red]x", "eaglegraph.capture/1", "ok", "oom"]),
    st.just([]),
    st.just({}),
)


def _leaf_paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    children: list[tuple[Any, Any]] = []
    if isinstance(node, dict):
        children = list(node.items())
    elif isinstance(node, list):
        children = list(enumerate(node))
    paths = [prefix] if prefix else []
    for key, child in children:
        paths.extend(_leaf_paths(child, (*prefix, key)))
    return paths


_BASE = {name: doc_of(make()) for name, make in RUNS.items()}
_PATHS = {name: _leaf_paths(doc) for name, doc in _BASE.items()}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(RUNS)),
    picks=st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=3),
    values=st.lists(_JSON_LEAVES, min_size=3, max_size=3),
)
def test_any_corruption_is_bad_input_or_renders(
    name: str, picks: list[int], values: list[Any]
) -> None:
    """Whatever a field is replaced with: a one-line BadInput, or a report that renders."""
    doc = copy.deepcopy(_BASE[name])
    paths = _PATHS[name]
    for pick, value in zip(picks, values, strict=False):
        path = paths[pick % len(paths)]
        node: Any = doc
        try:
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue  # an earlier replacement removed this path
    try:
        run = run_from_document(doc, "fuzz.json")
    except BadInput as exc:
        assert "\n" not in str(exc)
        return
    render_run(run, Console(width=80, color_system=None, file=io.StringIO()))
