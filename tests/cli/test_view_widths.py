"""Every view, rendered at 80 and at 200 columns, keeps all of its content.

Each run kind comes from the library on presets and fixtures (inspect on every preset, triage
on every fixture log, the environment of this machine), from saved real runs (a CPU capture
and a probe of the tiny pair, the 8B pair's CPU memory prediction), from capture and memdiff
runs rebuilt with the 8B pair's predicted figures (251 graphs, GiB pools, 40-character graph
labels: CUDA figures cannot be produced on a CPU), or from the reports' synthetic runs. A view
passes when no line is wider than the console, no line ends in blanks, no cell was cut to "…"
(the data itself holds none; a number next to "…" fails whatever the data), no number is
parted from its unit, and no word or identifier of the wide rendering is split across two
lines except after a `.` or `_` (where long names may fold).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.reports.console import plain_console
from eaglegraph.reports.runfile import render_run
from eaglegraph.results import load_run
from eaglegraph.results.capture import CaptureEvent
from eaglegraph.results.env import GpuInfo, GpuProcess, NvmlReport
from eaglegraph.serial import to_jsonable
from tests.reports.real_sized import capture_8b, memdiff_8b
from tests.reports.runs import cuda_run, emulated_run, memdiff_run, oom_run

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "triage" / "logs"
RUNS = ROOT / "fixtures" / "runs"
WIDTHS = (80, 200)


def _inspect_runs() -> Iterator[tuple[str, Any]]:
    from eaglegraph.pair.presets import PRESETS
    from eaglegraph.probes.setup import plan_options
    from eaglegraph.rig.inspect import inspect_pair, open_pair

    for name in sorted(PRESETS):
        pair = open_pair(name, None, None)
        yield f"inspect-{name}", inspect_pair(pair, plan_options(pair, {}))
    pair = open_pair("tiny-llama-eagle3", None, None)
    options = plan_options(pair, {"framework": "sglang", "attention_backend": "flashinfer"})
    yield "inspect-sglang", inspect_pair(pair, options)


def _triage_runs() -> Iterator[tuple[str, Any]]:
    from eaglegraph.triage.diagnose import triage_path

    for log in sorted(LOGS.glob("*.log")):
        yield f"triage-{log.stem}", triage_path(str(log))


def _env_runs() -> Iterator[tuple[str, Any]]:
    from eaglegraph.system.environment import collect_environment

    here = collect_environment()
    yield "env-here", here
    procs = [
        GpuProcess(pid=4242 + i, used_memory_mib=70123.5, name="python3 -m vllm") for i in (0, 1)
    ]
    gpus = [
        GpuInfo(i, "NVIDIA H100 80GB HBM3", f"GPU-{i}-1234abcd", 81559.0, 79000.0, 2559.0, 512.0,
                "9.0", procs)
        for i in range(2)
    ]  # fmt: skip
    nvml = NvmlReport(True, None, "550.54.15", "12.4", "12.550.54", gpus)
    yield "env-gpus", dataclasses.replace(here, nvml=nvml)


def _stacks_runs() -> Iterator[tuple[str, Any]]:
    from eaglegraph.system.pyspy import build_report

    def trace(pid: int, name: str, frames: list[tuple[str, str]], active: bool) -> dict:
        return {
            "pid": pid, "thread_id": len(name), "thread_name": name, "os_thread_id": 1,
            "active": active, "owns_gil": active,
            "frames": [
                {"name": f, "filename": p, "short_filename": Path(p).name, "line": 10}
                for f, p in frames
            ],
            "process_info": {"pid": pid, "command_line": "python -m vllm.entrypoints.api_server "
                             "--model /models/Meta-Llama-3.1-8B-Instruct --speculative-config "
                             '{"method": "eagle3", "num_speculative_tokens": 3}'},
        }  # fmt: skip

    busy = [
        ("replay", "/opt/venv/lib/python3.11/site-packages/sglang/srt/model_executor/"
         "cuda_graph_runner.py"),
        ("forward_batch_generation", "/opt/venv/lib/python3.11/site-packages/sglang/srt/"
         "speculative/eagle_worker.py"),
    ]  # fmt: skip
    idle = [("wait", "/usr/lib/python3.11/threading.py")]
    traces = [trace(10, "s0", busy, True), trace(11, "s1", busy, True), trace(10, "i", idle, False)]
    yield "stacks", build_report(10, traces, native=False, subprocesses=True, exe="py-spy")


def _scaffold_runs() -> Iterator[tuple[str, Any]]:
    from eaglegraph.pair.presets import PRESETS
    from eaglegraph.results.scaffold import PresetInfo, PresetList, ScaffoldResult

    rows = [
        PresetInfo(p.name, p.kind, "seeded" if p.with_weights else "config only", p.description)
        for p in PRESETS.values()
    ]
    yield "presets", PresetList(rows)
    spec = PRESETS["tiny-llama-eagle3"]
    files = ["draft/config.json", "draft/model.safetensors", "target/config.json"]
    yield (
        "scaffold",
        ScaffoldResult("/tmp/a/long/folder/name/pair", spec.name, spec.description, files),
    )


def _long_run() -> Any:
    """An emulated capture of the engine's whole default plan: 213 graphs, as on a CPU."""
    run = emulated_run()
    events: list[CaptureEvent] = []
    t = 0.0
    sizes = [*range(512, 256, -16), *range(256, 8, -8), 8, 4]
    plan = [("target", "PIECEWISE", None), ("target", "FULL", 4), ("draft_prefill", "FULL", 4)]
    plan += [("draft_decode", "FULL", 1)]
    for phase, mode, per in plan:
        for n in sizes if phase != "draft_decode" else sizes[-20:]:
            reqs = None if per is None else max(n // per, 1)
            e = CaptureEvent(len(events), phase, mode, n, reqs, per, run.events[0].pool,
                             "emulated", t, 0.5 + n / 1000, 0.2, segments=5 if per is None else 1)  # fmt: skip
            events.append(e)
            t += 0.8
    run.events = events
    return run


def _capture_runs() -> Iterator[tuple[str, Any]]:
    yield "capture-cuda", cuda_run()
    yield "capture-dedicated", cuda_run("dedicated")
    yield "capture-emulated", emulated_run()
    yield "capture-oom", oom_run()
    predicted = cuda_run()
    predicted.prediction = {
        "policy": "shared",
        "reserved_bytes": 123_456_789_012,
        "available_bytes": 79 * 2**30,
        "pools": {p.label: p.reserved_bytes * 11 // 10 for p in predicted.pools},
    }
    for pool in predicted.pools:
        pool.reserved_bytes *= 1000
        pool.allocated_bytes *= 1000
    yield "capture-predicted", predicted
    yield "capture-213-graphs", _long_run()
    yield "memdiff", memdiff_run()
    yield "capture-8b-shared", capture_8b("shared")
    yield "capture-8b-dedicated", capture_8b("dedicated")
    yield "capture-8b-per-graph", capture_8b("per-graph")
    failed = capture_8b("dedicated")
    failed.failed = dataclasses.replace(
        failed.events[120], status="oom", bytes=None, error=OOM_8B, reserved_after=None
    )
    failed.events = failed.events[:120]
    yield "capture-8b-oom", failed
    yield "memdiff-8b", memdiff_8b()


OOM_8B = (
    "CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 has a total capacity of 79.19 GiB of "
    "which 1.02 GiB is free. Including non-PyTorch memory, this process has 78.16 GiB memory in "
    "use. Of the allocated memory 74.88 GiB is allocated by PyTorch, and 2.63 GiB is reserved by "
    "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
)


def _saved_runs() -> Iterator[tuple[str, Any]]:
    for path in sorted(RUNS.glob("*.json")):
        yield f"saved-{path.stem}", load_run(path)


SOURCES: list[Callable[[], Iterator[tuple[str, Any]]]] = [
    _capture_runs,
    _inspect_runs,
    _triage_runs,
    _env_runs,
    _stacks_runs,
    _scaffold_runs,
    _saved_runs,
]


@pytest.fixture(scope="module")
def views() -> dict[str, Any]:
    return {name: run for source in SOURCES for name, run in source()}


@pytest.fixture(scope="module")
def wide_views(views: dict[str, Any]) -> dict[str, str]:
    """Each view with room for everything: the words a narrow view must not split."""
    return {name: _render(run, 1000) for name, run in views.items()}


_CUT_NUMBER = re.compile(r"(?:\d|[KMGT]iB)\s?…|…\s?[-+]?\d")
_TAIL = re.compile(r"[\w.]+$")
_HEAD = re.compile(r"^\s*([\w.]+)")
_PARTED = re.compile(r"\d$")
_UNIT = re.compile(r"^\s*[KMGT]iB\b")


def split_tokens(text: str, wide: str) -> list[str]:
    """Words of the wide rendering (`wide`) that `text` splits over two lines mid-token."""
    whole = set(re.findall(r"[\w.]+", wide))
    lines = text.splitlines()
    out = []
    for above, below in itertools.pairwise(lines):
        tail, head = _TAIL.search(above), _HEAD.match(below)
        if tail is None or head is None or tail[0][-1] in "._":
            continue
        # a break at a space the wide view also has ("cuda graph") is no split, even where
        # the joined word occurs elsewhere ("cudagraph mode")
        if tail[0] + head[1] in whole and f"{tail[0]} {head[1]}" not in wide:
            out.append(f"{tail[0]}|{head[1]}")
        if _PARTED.search(above) and _UNIT.match(below):
            out.append(f"{tail[0]}|{below.strip()[:4]} (number parted from its unit)")
    return out


def check_text(text: str, width: int, data: str = "", wide: str | None = None) -> None:
    """No line wider than `width`, none ending in blanks, no cut cell, no split token."""
    for line in text.splitlines():
        assert len(line) <= width, f"{len(line)} > {width}: {line!r}"
        assert line == line.rstrip(), f"trailing blanks: {line!r}"
    cut = [line for line in text.splitlines() if _CUT_NUMBER.search(line)]
    assert not cut, f"number truncated at {width} columns: {cut[:3]}"
    if "…" not in data:
        cut = [line for line in text.splitlines() if "…" in line]
        assert not cut, f"truncated at {width} columns: {cut[:3]}"
    if wide is not None:
        split = split_tokens(text, wide)
        assert not split, f"split across lines at {width} columns: {split[:5]}"


def _render(run: Any, width: int) -> str:
    console = plain_console(width)
    render_run(run, console)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_every_kind_of_view_is_covered(views: dict[str, Any]) -> None:
    kinds = {type(run).__name__ for run in views.values()}
    assert kinds >= {
        "CaptureRun", "MemdiffRun", "InspectReport", "TriageResult", "EnvReport",
        "StacksReport", "PresetList", "ScaffoldResult", "ProbeRun",
    }  # fmt: skip
    # the parts of those views: timeline, pools, prediction, findings, with real widths
    assert any(getattr(r, "memory_prediction", None) for r in views.values())
    assert any(len(getattr(r, "events", ())) > 200 for r in views.values())
    assert any(getattr(r, "findings", None) for r in views.values())
    assert any(getattr(r, "failed", None) for r in views.values())


@pytest.mark.parametrize("width", WIDTHS)
def test_views_keep_their_content(
    views: dict[str, Any], wide_views: dict[str, str], width: int
) -> None:
    failures = []
    for name, run in views.items():
        data = json.dumps(to_jsonable(run), ensure_ascii=False)
        try:
            check_text(_render(run, width), width, data, wide_views[name])
        except AssertionError as exc:
            failures.append(f"{name}: {exc}")
    assert not failures, "\n".join(failures)


def test_long_timeline_is_summarised(views: dict[str, Any]) -> None:
    text = _render(views["capture-213-graphs"], 80)
    assert len(text.splitlines()) < 120, "213 graphs should not be 213 rows"
    assert "more" in text and "--json" in text  # says what it left out and where it is


@pytest.mark.parametrize("name", ["capture-8b-per-graph", "memdiff-8b"])
def test_long_pool_and_graph_lists_are_summarised(views: dict[str, Any], name: str) -> None:
    # 251 graphs, each in its own pool (per-graph) or diffed one by one (memdiff)
    text = _render(views[name], 80)
    assert len(text.splitlines()) < 150, f"{name}: {len(text.splitlines())} lines"
    assert "more" in text and "--json" in text


@pytest.mark.parametrize(
    "args",
    [
        ["probe", "--list-behaviors"],
        *[[c, "--help"] for c in ("inspect", "capture", "probe", "memdiff", "report", "triage")],
        *[[c, "--help"] for c in ("stacks", "env", "scaffold", "explore")],
        ["--help"],
        ["scaffold", "--list"],
    ],
    ids=" ".join,
)
@pytest.mark.parametrize("width", WIDTHS)
def test_command_views_fit(args: list[str], width: int) -> None:
    result = CliRunner().invoke(cli, ["--no-color", *args], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    wide = CliRunner().invoke(cli, ["--no-color", *args], env={"COLUMNS": "1000"})
    check_text(result.stdout, width, wide=wide.stdout)


def _table(cells: list[list[str]], headers: list[str]) -> Any:
    from rich.table import Table

    table = Table(box=None, show_footer=True)
    for h in headers:
        table.add_column(h, no_wrap=True, footer="Σ" if h == headers[0] else "")
    for row in cells:
        table.add_row(*row)
    return table


@pytest.mark.parametrize("width", [30, 50, 80])
def test_fitted_tables_wrap_or_stack_but_never_cut(width: int) -> None:
    from eaglegraph.reports.layout import Fitted

    rows = [
        [f"pool-{i}", f"{i}.25 GiB", "357.42 GiB", "reserved-by-the-draft-pool"] for i in range(3)
    ]
    table = _table(rows, ["pool", "allocated bytes", "reserved bytes", "why"])
    console = plain_console(width)
    console.print(Fitted(table))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    wide = plain_console(1000)
    wide.print(Fitted(table))
    check_text(text, width, wide=wide.file.getvalue())  # type: ignore[attr-defined]
    squashed = "".join(text.split())  # a long word may fold over lines, but stays whole
    for row in rows:
        for cell in row:
            assert "".join(cell.split()) in squashed, (cell, text)


@pytest.mark.parametrize("width", [12, 20, 33])
def test_folded_text_breaks_at_separators_and_keeps_units(width: int) -> None:
    from eaglegraph.reports.layout import Folded

    text = "buffer eagle.last_token_indices read 144.00 MiB past /opt/venv/lib/site-packages/x.py"
    console = plain_console(width)
    console.print(Folded(text))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    lines = out.splitlines()
    assert all(len(line) <= width for line in lines), out
    assert any("144.00 MiB" in line for line in lines), out
    for above in lines[:-1]:  # a name folds only after a separator, or between words
        word = above.split()[-1]
        assert word[-1] in "._/-" or word in text.split(), (word, out)
    assert "".join(out.split()) == "".join(text.split())
