"""Every command's saved run loads back equal and `report` re-renders it as the command did.

Each run kind is produced by its own command on a preset or fixture (CPU), saved, loaded
through the one registry, and re-rendered: the terminal view of `report RUN.json` must be the
command's own view, `report --json` must give back the same document, `--html` must carry
the view, and `--trace` works where the run has a capture timeline and is a one-line error
where it has none.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.reports.console import plain_console
from eaglegraph.reports.runfile import render_run
from eaglegraph.results import SCHEMAS, document, load_run, run_from_document, schema_of
from eaglegraph.results.capture import CaptureRun
from eaglegraph.results.env import NA, EnvReport
from eaglegraph.results.inspect import InspectReport
from eaglegraph.results.pools import PoolId, PoolKind
from eaglegraph.results.probe import ProbeRun
from eaglegraph.results.scaffold import PresetList, ScaffoldResult
from eaglegraph.results.stacks import StacksReport
from eaglegraph.results.triage import TriageResult
from eaglegraph.serial import dumps
from eaglegraph.system.pyspy import build_report

LOGS = Path(__file__).parent.parent / "triage" / "logs"
CAPTURE = ["--max-num-seqs", "4", "-K", "3", "--capture-sizes", "4,8"]
CAPTURE += ["--max-num-batched-tokens", "64", "--device", "cpu", "--max-model-len", "256"]
# The historic stale kv_indptr read (flashinfer, PIECEWISE draft decode): a probe with findings.
PROBE = ["probe", "tiny-llama-eagle3", "--behavior", "vllm-pre-39773"]
PROBE += ["--attention-backend", "flashinfer", "--mode", "PIECEWISE", "--batches", "3"]
PROBE += ["--max-num-seqs", "4", "-K", "3", "--device", "cpu", "--max-model-len", "256"]
PROBE += ["--no-isolation"]


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--no-color", *args], env={"COLUMNS": "80"})
    return result.exit_code, result.stdout, result.stderr


def _stacks_report() -> StacksReport:
    """A py-spy dump as py-spy writes it: a graph replay inside a draft proposal, plus idlers."""

    def trace(pid: int, name: str, frames: list[tuple[str, str]], active: bool) -> dict:
        return {
            "pid": pid, "thread_id": len(name), "thread_name": name, "os_thread_id": 1,
            "active": active, "owns_gil": active,
            "frames": [
                {"name": f, "filename": p, "short_filename": Path(p).name, "line": 10}
                for f, p in frames
            ],
            "process_info": {"pid": pid, "command_line": f"python worker{pid}.py"},
        }  # fmt: skip

    busy = [
        ("replay", "/x/sglang/srt/model_executor/cuda_graph_runner.py"),
        ("forward_batch_generation", "/x/sglang/srt/speculative/eagle_worker.py"),
    ]
    idle = [("wait", "/usr/lib/python3.11/threading.py")]
    traces = [trace(10, "s0", busy, True), trace(11, "s1", busy, True), trace(10, "i", idle, False)]
    return build_report(10, traces, native=False, subprocesses=True, exe="py-spy")


def _save(tmp_path: Path, name: str, args: list[str], save: bool = False) -> tuple[Path, str]:
    """Run a command, keep its terminal view, and save its run (`--save`, or `--json`)."""
    path = tmp_path / f"{name}.json"
    if save:
        code, view, err = invoke(*args, "--save", str(path))
        assert code in (0, 1), err
    else:
        code, view, err = invoke(*args)
        assert code in (0, 1), err
        code, out, err = invoke(*args, "--json")
        assert code in (0, 1), err
        path.write_text(out, encoding="utf-8")
    return path, view


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    tmp = tmp_path_factory.mktemp("runs")
    runs = {
        "inspect": _save(tmp, "inspect", ["inspect", "tiny-llama-eagle3"]),
        "triage": _save(tmp, "triage", ["triage", str(LOGS / "vllm_mrv2_stale_ima.log")]),
        "env": _save(tmp, "env", ["env"]),
        "capture": _save(tmp, "capture", ["capture", "tiny-llama-eagle1", *CAPTURE], save=True),
        "probe": _save(tmp, "probe", PROBE, save=True),
        "presets": _save(tmp, "presets", ["scaffold", "--list"]),
    }
    # scaffold writes a folder, so its view and its --json come from two folders of one length
    _, view, _ = invoke("scaffold", str(tmp / "pair-v"), "--preset", "tiny-llama-eagle1")
    code, out, err = invoke(
        "scaffold", str(tmp / "pair-j"), "--preset", "tiny-llama-eagle1", "--json"
    )
    assert code == 0, err
    (tmp / "scaffold.json").write_text(out, encoding="utf-8")
    runs["scaffold"] = (tmp / "scaffold.json", view.replace("pair-v", "pair-j"))
    stacks = _stacks_report()
    path = tmp / "stacks.json"
    path.write_text(dumps(document(stacks)), encoding="utf-8")
    console = plain_console(80)  # the console commands print to: no trailing blanks
    render_run(stacks, console)
    runs["stacks"] = (path, console.file.getvalue())  # type: ignore[attr-defined]
    return runs


TYPES: dict[str, type] = {
    "inspect": InspectReport,
    "triage": TriageResult,
    "env": EnvReport,
    "capture": CaptureRun,
    "probe": ProbeRun,
    "stacks": StacksReport,
    "scaffold": ScaffoldResult,
    "presets": PresetList,
}


def test_every_schema_is_registered() -> None:
    assert set(SCHEMAS.values()) >= set(TYPES.values())
    assert all(name.startswith("eaglegraph.") and name.endswith("/1") for name in SCHEMAS)


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_saved_run_loads_as_its_type_and_round_trips(
    saved: dict[str, tuple[Path, str]], kind: str
) -> None:
    path, _ = saved[kind]
    run = load_run(path)
    assert isinstance(run, TYPES[kind])
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["schema"] == schema_of(run)
    again = json.loads(dumps(document(run)))
    assert again == doc  # JSON → run → JSON is the identity
    assert run_from_document(again) == run


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_report_renders_what_the_command_showed(
    saved: dict[str, tuple[Path, str]], kind: str
) -> None:
    path, view = saved[kind]
    code, out, err = invoke("report", str(path))
    assert code == 0, err
    if kind not in ("capture", "probe"):
        assert out == view  # deterministic views: identical
    else:  # capture and probe carry their own timings; the structure must match line by line
        assert len(out.splitlines()) == len(view.splitlines())
        assert out.splitlines()[0].split()[:2] == view.splitlines()[0].split()[:2]


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_report_json_gives_the_document_back(saved: dict[str, tuple[Path, str]], kind: str) -> None:
    path, _ = saved[kind]
    code, out, err = invoke("report", str(path), "--json")
    assert code == 0, err
    assert json.loads(out) == json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_report_html_and_trace(
    saved: dict[str, tuple[Path, str]], kind: str, tmp_path: Path
) -> None:
    path, view = saved[kind]
    html = tmp_path / "r.html"
    code, _, err = invoke("report", str(path), "--html", str(html))
    assert code == 0 and f"wrote {html}" in err
    first = next(line.strip() for line in view.splitlines() if line.strip())
    page = html.read_text(encoding="utf-8")
    assert "<!DOCTYPE html>" in page and schema_of(load_run(path)) in page
    assert first.split()[0] in page
    trace = tmp_path / "r.trace.json"
    code, _, err = invoke("report", str(path), "--trace", str(trace))
    if kind == "capture":
        assert code == 0
        events = json.loads(trace.read_text(encoding="utf-8"))["traceEvents"]
        assert sum(e["ph"] == "X" for e in events) == len(load_run(path).events)
    else:
        assert code == 2 and not trace.exists()
        assert "no capture timeline" in err and len(err.strip().splitlines()) == 1


def test_inspect_report_keeps_the_plan_and_draft_facts(saved: dict[str, tuple[Path, str]]) -> None:
    run = load_run(saved["inspect"][0])
    assert run.draft is not None and run.draft.kind == "eagle3" and run.draft.supported
    assert run.draft.aux is not None and run.draft.aux_layer_ids_effective == [2, 4, 5]
    assert [p.phase for p in run.plan.phases] == ["target", "draft_prefill", "draft_decode"]
    assert run.plan.phases[2].mode == "FULL_DECODE_ONLY"
    assert run.plan.phases[0].descriptor_count == len(run.plan.phases[0].descriptors)


def test_probe_run_keeps_cases_hits_and_matrix(saved: dict[str, tuple[Path, str]]) -> None:
    run = load_run(saved["probe"][0])
    (case,) = run.cases
    assert case.hits == len(case.violations) > 0
    assert {v.buffer for v in case.violations} == {"draft.kv_indptr", "draft.last_page_len"}
    read = {r.buffer: r.reads for r in run.matrix if r.reads}
    per_buffer = {b: sum(v.buffer == b for v in case.violations) for b in read}
    assert read == {b: {"draft_decode": n} for b, n in per_buffer.items()}
    code, out, _ = invoke("report", str(saved["probe"][0]))
    assert code == 0 and "pre-39773" in out and "draft.kv_indptr in draft_decode" in out


def test_capture_pools_carry_their_kind(saved: dict[str, tuple[Path, str]]) -> None:
    run = load_run(saved["capture"][0])
    assert run.pools and all(p.kind is PoolKind.SHARED for p in run.pools)
    assert {e.pool for e in run.events} == {p.id for p in run.pools}
    doc = json.loads(saved["capture"][0].read_text(encoding="utf-8"))
    assert doc["pools"][0]["id"] == "(0,1)" and doc["pools"][0]["kind"] == "shared"


def test_env_report_keeps_na_markers(saved: dict[str, tuple[Path, str]]) -> None:
    run = load_run(saved["env"][0])
    doc = json.loads(saved["env"][0].read_text(encoding="utf-8"))
    assert run.python.version == platform.python_version()
    unread = [k for k, v in doc["torch"].items() if v == "N/A"]
    assert all(getattr(run.torch, k) is NA for k in unread)
    if not run.nvml.available:  # no driver here: every NVML figure is the one NA marker
        assert run.nvml.driver_version is NA and run.nvml.gpus == []


def test_pool_id_kinds_and_text() -> None:
    assert PoolId.of((0, 0)).kind is PoolKind.DEFAULT
    assert PoolId.of((3, 0)).kind is PoolKind.PRIVATE
    assert PoolId.of((0, 2)).kind is PoolKind.SHARED
    assert PoolId.of((0, 2), foreign=True).kind is PoolKind.FOREIGN
    assert PoolId.of((0, 2), foreign=True) == PoolId.of((0, 2))  # identity is the allocator id
    assert str(PoolId.parse("( 0, 2 )")) == "(0,2)" and PoolId.parse("private").id is None
    with pytest.raises(ValueError):
        PoolId.parse("pool 2")


def test_old_files_mark_foreign_pools_by_label(saved: dict[str, tuple[Path, str]]) -> None:
    doc: dict[str, Any] = json.loads(saved["capture"][0].read_text(encoding="utf-8"))
    pool = {**doc["pools"][0], "id": "(0,9)", "label": "foreign (not this capture's)"}
    del pool["kind"]
    doc["pools"] = [*doc["pools"], pool]
    run = run_from_document(doc)
    assert run.pools[-1].kind is PoolKind.FOREIGN and not run.pools[-1].id.graph_pool
