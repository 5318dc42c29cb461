"""`eaglegraph stacks` against a real Python process, and py-spy's failure messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.errors import BadInput, MissingEnvironment
from eaglegraph.system import pyspy
from eaglegraph.system.pyspy import build_report, dump_stacks, parse_dump

HUNG = textwrap.dedent(
    """
    import sys, threading, time

    def propose_draft():
        time.sleep(600)

    def capture_cudagraph():
        propose_draft()

    def all_reduce():
        time.sleep(600)

    for i in range(3):
        threading.Thread(target=capture_cudagraph, name=f"capture-{i}", daemon=True).start()
    threading.Thread(target=all_reduce, name="nccl", daemon=True).start()
    time.sleep(0.2)
    print("ready", flush=True)
    time.sleep(600)
    """
)

NON_ROOT_DENIED = (
    "Permission Denied: Try running again with elevated permissions by going "
    "'sudo env \"PATH=$PATH\" !!'\n"
)
DOCKER_DENIED = (
    "Permission Denied\n\nIt looks like you are running in a docker container. Please make sure you "
    "started your container with the SYS_PTRACE capability. See "
    "https://github.com/benfred/py-spy#how-do-i-run-py-spy-in-docker for more details\n"
)
ROOT_DENIED = (
    "Error: Failed to get process executable name. Check that the process is running.\n\n"
    "Caused by:\n    0: Permission denied (os error 13)\n    1: Permission denied (os error 13)\n"
)
GONE = (
    "Error: Failed to get process executable name. Check that the process is running.\n\n"
    "Caused by:\n    0: No such file or directory (os error 2)\n"
)
NOT_PYTHON = "Error: Failed to find python version from target process\n"


@pytest.fixture
def hung_process(tmp_path: Path):
    script = tmp_path / "hung_server.py"
    script.write_text(HUNG)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _dump_or_skip(pid: int, **kw) -> pyspy.StacksReport:
    try:
        return dump_stacks(pid, **kw)
    except MissingEnvironment as exc:
        if "ptrace" in str(exc):
            pytest.skip(f"this machine does not allow ptrace: {exc}")
        raise


def test_real_process_groups_and_phase(hung_process: subprocess.Popen) -> None:
    report = _dump_or_skip(hung_process.pid)
    assert report.pid == hung_process.pid
    assert report.threads == 5
    top = report.groups[report.stuck_group]
    assert top.count == 3
    assert sorted(t.name for t in top.threads) == ["capture-0", "capture-1", "capture-2"]
    assert [f.name for f in top.frames[:2]] == ["propose_draft", "capture_cudagraph"]
    assert "spec-proposal" in top.frames[0].tags and "graph-capture" in top.frames[1].tags
    assert report.phase == "speculative proposal inside cuda-graph capture"
    assert "propose_draft" in report.phase_detail
    nccl = next(g for g in report.groups if any(t.name == "nccl" for t in g.threads))
    assert nccl.phase == "collective wait (NCCL)" and nccl.count == 1


def test_real_process_through_the_cli(hung_process: subprocess.Popen) -> None:
    res = CliRunner().invoke(cli, ["stacks", "--json", str(hung_process.pid)])
    if res.exit_code == 3 and "ptrace" in res.output:
        pytest.skip("this machine does not allow ptrace")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["schema"] == "eaglegraph.stacks/1"
    assert doc["phase"] == "speculative proposal inside cuda-graph capture"
    assert len(doc["groups"][0]["threads"]) == 3
    res = CliRunner().invoke(cli, ["stacks", "--no-color", str(hung_process.pid)])
    assert res.exit_code == 0 and "propose_draft" in res.output
    # its threads sleep inside the capture: blocked there, not computing
    assert "blocked in: speculative proposal" in res.output or "stuck in" in res.output


def test_subprocesses_flag_reaches_children(tmp_path: Path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(
        textwrap.dedent(
            """
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c",
            "import time\\ndef barrier():\\n    time.sleep(600)\\nbarrier()"])
        print(child.pid, flush=True)
        try:
            time.sleep(600)
        finally:
            child.kill()
        """
        )
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        child = int(proc.stdout.readline())
        time.sleep(0.5)
        report = _dump_or_skip(proc.pid, subprocesses=True)
        pids = {p.pid for p in report.processes}
        assert {proc.pid, child} <= pids
        assert any(g.phase == "collective wait (NCCL)" for g in report.groups)
    finally:
        proc.kill()
        proc.wait(timeout=10)
        try:
            os.kill(child, 9)
        except (ProcessLookupError, UnboundLocalError):
            pass


def test_missing_pyspy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(pyspy.shutil, "which", lambda name: None)
    monkeypatch.setattr(pyspy.sys, "executable", str(tmp_path / "bin" / "python"))
    with pytest.raises(MissingEnvironment, match="py-spy is not installed"):
        dump_stacks(os.getpid())
    res = CliRunner().invoke(cli, ["stacks", str(os.getpid())])
    assert res.exit_code == 3
    assert "pip install py-spy" in res.output and "Traceback" not in res.output


def test_dead_pid_is_bad_input() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=10)
    with pytest.raises(BadInput, match=f"no process with PID {proc.pid}"):
        dump_stacks(proc.pid)
    res = CliRunner().invoke(cli, ["stacks", str(proc.pid)])
    assert res.exit_code == 2


def _fake_run(stderr: str, returncode: int = 1):
    def run(argv, **kw):
        return subprocess.CompletedProcess(argv, returncode, stdout="", stderr=stderr)

    return run


@pytest.mark.parametrize("stderr", [NON_ROOT_DENIED, DOCKER_DENIED, ROOT_DENIED])
def test_permission_denied_explains_ptrace(monkeypatch: pytest.MonkeyPatch, stderr: str) -> None:
    monkeypatch.setattr(pyspy.subprocess, "run", _fake_run(stderr))
    with pytest.raises(MissingEnvironment) as info:
        dump_stacks(os.getpid())
    message = str(info.value)
    assert "ptrace" in message and str(os.getpid()) in message
    if os.geteuid() == 0:
        assert "run as root" not in message
    res = CliRunner().invoke(cli, ["stacks", str(os.getpid())])
    assert res.exit_code == 3 and "ptrace" in res.output


@pytest.mark.parametrize(
    ("facts", "expected", "absent"),
    [
        ({"euid": 0, "scope": 1, "cap_eff": 0, "owner": 0}, "lacks the SYS_PTRACE", "run as root"),
        ({"euid": 0, "scope": 3, "cap_eff": 1 << 19, "owner": 0}, "ptrace_scope=3", "run as root"),
        ({"euid": 1000, "scope": 1, "cap_eff": 0, "owner": 1000}, "ptrace_scope=1", "seccomp"),
        ({"euid": 1000, "scope": 0, "cap_eff": 0, "owner": 0}, "belongs to uid 0", "seccomp"),
        ({"euid": 0, "scope": 0, "cap_eff": 1 << 19, "owner": 0}, "seccomp", "run as root"),
    ],
)
def test_ptrace_hint_names_the_real_reason(
    facts: dict[str, int], expected: str, absent: str
) -> None:
    hint = pyspy.ptrace_hint(4242, **facts)
    assert expected in hint and absent not in hint


def test_process_gone_between_check_and_dump(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pyspy.subprocess, "run", _fake_run(GONE))
    with pytest.raises(BadInput, match="may have exited"):
        dump_stacks(os.getpid())


def test_not_a_python_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pyspy.subprocess, "run", _fake_run(NOT_PYTHON))
    with pytest.raises(BadInput, match="does not look like a Python process"):
        dump_stacks(os.getpid())


def test_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    def run(argv, **kw):
        raise subprocess.TimeoutExpired(argv, kw.get("timeout", 1))

    monkeypatch.setattr(pyspy.subprocess, "run", run)
    with pytest.raises(MissingEnvironment, match="did not answer"):
        dump_stacks(os.getpid(), timeout=2)


def test_invalid_pid() -> None:
    with pytest.raises(BadInput, match="positive"):
        dump_stacks(0)


def _trace(pid: int, name: str, frames: list[tuple[str, str]], active: bool = False) -> dict:
    return {
        "pid": pid,
        "thread_id": hash(name) & 0xFFFF,
        "thread_name": name,
        "os_thread_id": 1,
        "active": active,
        "owns_gil": active,
        "frames": [
            {
                "name": f,
                "filename": p,
                "short_filename": Path(p).name,
                "line": 10,
                "module": None,
                "locals": None,
                "is_entry": False,
                "is_shim_entry": False,
            }
            for f, p in frames
        ],
        "process_info": {"pid": pid, "command_line": f"python worker{pid}.py", "parent": None},
    }


def test_parse_several_documents_with_noise() -> None:
    a = [_trace(1, "main", [("wait", "/usr/lib/python3.11/threading.py")])]
    b = [_trace(2, "w", [("all_reduce", "/x/vllm/distributed/parallel_state.py")])]
    text = (
        "py-spy> warning: something\n"
        + json.dumps(a, indent=2)
        + "\n\n"
        + json.dumps(b)
        + "\n{broken"
    )
    traces = parse_dump(text)
    assert [t["pid"] for t in traces] == [1, 2]


def test_grouping_across_processes_and_busiest_stack() -> None:
    capture = [
        ("replay", "/x/sglang/srt/model_executor/cuda_graph_runner.py"),
        ("forward_batch_generation", "/x/sglang/srt/speculative/eagle_worker.py"),
        ("event_loop_normal", "/x/sglang/srt/managers/scheduler.py"),
    ]
    idle = [
        ("wait", "/usr/lib/python3.11/threading.py"),
        ("run", "/usr/lib/python3.11/threading.py"),
    ]
    traces = [_trace(10, "s0", capture, active=True), _trace(11, "s1", capture, active=True)]
    traces += [_trace(10, f"idle{i}", idle) for i in range(6)]
    report = build_report(10, traces, native=False, subprocesses=True, exe="py-spy")
    assert len(report.groups) == 2
    top = report.groups[report.stuck_group]
    assert top.count == 2 and {t.pid for t in top.threads} == {10, 11}
    # The replay runs inside the speculative worker's verify step.
    assert report.phase == "cuda-graph replay inside speculative proposal"
    assert report.groups[1].phase == "idle"
    assert [p.pid for p in report.processes] == [10, 11]
    assert any("6 threads share another stack" in n for n in report.notes)


def test_native_frames_are_classified() -> None:
    frames = [
        ("ncclKernel_AllReduce_RING_LL_Sum_bf16", "/usr/lib/libnccl.so.2"),
        ("cudaStreamSynchronize", "/usr/lib/libcudart.so.12"),
        ("all_reduce", "/x/vllm/distributed/parallel_state.py"),
    ]
    report = build_report(3, [_trace(3, "main", frames, active=True)], True, False, "py-spy")
    assert report.phase == "collective wait (NCCL)"
    assert report.groups[0].phase_frame == 0


def _one_thread(frames: list[tuple[str, str]], active: bool) -> dict:
    return {
        "pid": 7, "thread_id": 1, "thread_name": "MainThread", "active": active,
        "owns_gil": active,
        "frames": [{"name": n, "filename": f, "line": 3} for n, f in frames],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("frames", "active", "headline"),
    [
        ([("sleep", ""), ("main", "/srv/app.py")], False, "waiting, no thread busy:"),
        ([("replay", "/x/vllm/v1/cudagraph_dispatcher.py")], False, "blocked in: cuda-graph"),
        ([("replay", "/x/vllm/v1/cudagraph_dispatcher.py")], True, "stuck in: cuda-graph"),
        ([("propose", "/home/u/work/drafts/server.py")], True, "stuck in:"),
    ],
)
def test_headline_tells_sleeping_from_stuck(
    frames: list[tuple[str, str]], active: bool, headline: str
) -> None:
    import io

    from rich.console import Console

    from eaglegraph.reports.stacks_view import render_stacks

    report = build_report(7, [_one_thread(frames, active)], False, False, "py-spy")
    out = io.StringIO()
    render_stacks(report, Console(file=out, width=100, color_system=None))
    assert out.getvalue().startswith(headline), out.getvalue()
