"""Chrome trace export: well-formed events, strict nesting per track, counters that add up."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from eaglegraph.errors import BadInput
from eaglegraph.reports.trace import ALLOCATOR_COUNTER, COUNTER, trace_document, write_trace
from eaglegraph.results.capture import CaptureRun
from eaglegraph.results.memdiff import MemdiffRun
from tests.reports.runs import cuda_run, emulated_run, memdiff_run, oom_run

PHASES = {"M", "X", "C", "i"}
TOL = 1e-6  # µs; slices sit on a nanosecond grid


def check_well_formed(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The Trace Event Format rules a viewer relies on; returns the events."""
    assert set(doc) == {"traceEvents", "displayTimeUnit", "metadata"}
    assert doc["displayTimeUnit"] == "ms"
    events = doc["traceEvents"]
    json.dumps(doc, allow_nan=False)
    for e in events:
        assert e["ph"] in PHASES, e
        assert isinstance(e["name"], str) and e["name"]
        assert isinstance(e["pid"], int) and isinstance(e.get("tid", 0), int)
        if e["ph"] == "M":
            assert e["name"] in {
                "process_name", "process_sort_index", "thread_name", "thread_sort_index"
            }  # fmt: skip
            continue
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0
        if e["ph"] == "C":
            assert e["args"] and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in e["args"].values()
            )
        if e["ph"] == "i":
            assert e["s"] in {"g", "p", "t"}
    named = {(e["pid"], e["tid"]) for e in events if e["name"] == "thread_name"}
    used = {(e["pid"], e["tid"]) for e in events if e["ph"] in {"X", "i"}}
    assert used <= named, "every slice track has a thread name"
    procs = {e["pid"] for e in events if e["name"] == "process_name"}
    assert {e["pid"] for e in events} <= procs
    return events


def check_nesting(events: list[dict[str, Any]]) -> None:
    """Perfetto needs slices on one track to nest strictly; ours must not overlap at all."""
    tracks: dict[tuple[int, int], list[tuple[float, float]]] = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            tracks[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    for spans in tracks.values():
        spans.sort()
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert start >= end - TOL


@pytest.mark.parametrize(
    "run", [cuda_run(), emulated_run(), oom_run(), memdiff_run()],
    ids=["shared", "emulated", "oom", "memdiff"],
)  # fmt: skip
def test_well_formed_and_nested(run: CaptureRun | MemdiffRun) -> None:
    check_nesting(check_well_formed(trace_document(run)))


def test_one_slice_per_graph_on_its_phase_track() -> None:
    run = cuda_run()
    events = trace_document(run)["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert list(names.values()) == ["target", "draft_prefill", "draft_decode"]
    order = {e["tid"]: e["args"]["sort_index"] for e in events if e["name"] == "thread_sort_index"}
    assert sorted(order, key=order.__getitem__) == list(names)
    slices = [e for e in events if e["ph"] == "X"]
    assert len(slices) == len(run.events)
    for s, ev in zip(slices, run.events, strict=True):
        assert names[s["tid"]] == ev.phase
        assert s["ts"] == pytest.approx(ev.start_s * 1e6) and s["dur"] == pytest.approx(
            ev.duration_s * 1e6
        )
        assert s["args"]["descriptor"] == ev.descriptor and s["args"]["bytes"] == ev.bytes
        assert s["args"]["pool"] == "global" and s["args"]["warmup_ms"] == pytest.approx(
            ev.warmup_s * 1e3
        )


def test_pool_counter_is_cumulative_per_pool() -> None:
    run = cuda_run("dedicated")
    events = trace_document(run)["traceEvents"]
    samples = [e for e in events if e["ph"] == "C" and e["name"] == COUNTER]
    assert len(samples) == len(run.events) + 1, "a zero sample, then one after each graph"
    assert samples[0]["args"] == {"global": 0, "eagle": 0}
    for key in ("global", "eagle"):
        series = [s["args"][key] for s in samples]
        assert series == sorted(series)
    final = samples[-1]["args"]
    assert final == {p.label: p.reserved_bytes for p in run.pools}
    allocator = [e for e in events if e["ph"] == "C" and e["name"] == ALLOCATOR_COUNTER]
    assert allocator[-1]["args"]["reserved"] == run.events[-1].reserved_after


def test_oom_is_an_instant_event_on_its_phase_track() -> None:
    run = oom_run()
    events = trace_document(run)["traceEvents"]
    instants = [e for e in events if e["ph"] == "i"]
    assert len(instants) == 1
    oom = instants[0]
    assert oom["name"] == "OOM: FULL(tokens=16, reqs=4)" and "out of memory" in oom["args"]["error"]
    thread = next(e for e in events if e["name"] == "thread_name" and e["tid"] == oom["tid"])
    assert thread["args"]["name"] == "draft_prefill"
    failed_slice = [e for e in events if e["ph"] == "X" and "failed" in e["cat"]]
    assert len(failed_slice) == 1 and failed_slice[0]["args"]["status"] == "oom"


def test_emulated_run_has_no_byte_counters() -> None:
    events = trace_document(emulated_run())["traceEvents"]
    assert not [e for e in events if e["ph"] == "C"]
    assert len([e for e in events if e["ph"] == "X"]) == len(emulated_run().events)


def test_memdiff_is_two_processes() -> None:
    run = memdiff_run()
    doc = trace_document(run)
    procs = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
    assert procs == {1: "a: shared (cuda)", 2: "b: dedicated (cuda)"}
    for pid, capture in ((1, run.a), (2, run.b)):
        slices = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == pid]
        assert len(slices) == len(capture.events)
    assert doc["metadata"]["schema"] == "eaglegraph.memdiff/1"
    assert doc["metadata"]["pool_policy"] == ["shared", "dedicated"]


def test_overlapping_input_is_laid_out_without_overlap() -> None:
    run = cuda_run()
    # A clock hiccup: the second graph claims to start inside the first.
    run.events[1] = replace(run.events[1], start_s=run.events[0].start_s + 0.001)
    events = check_well_formed(trace_document(run))
    check_nesting(events)


def test_write_trace_is_atomic_and_refuses_to_clobber(tmp_path: Path) -> None:
    path = write_trace(oom_run(), tmp_path / "t.json")
    doc = json.loads(path.read_text(encoding="utf-8"))
    check_well_formed(doc)
    with pytest.raises(BadInput, match="already exists"):
        write_trace(oom_run(), path)
    write_trace(memdiff_run(), path, overwrite=True)
    assert json.loads(path.read_text(encoding="utf-8"))["metadata"]["schema"].endswith("memdiff/1")
