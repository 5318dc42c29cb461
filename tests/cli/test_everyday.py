"""The everyday experience (issue 26): nothing lost, nothing slow, nothing the engine refuses.

Outputs are checked before any work, SIGTERM ends a run like Ctrl-C (exit 143, one line), a
plan the engine would refuse at startup is refused (exit 2, the limit named; --force runs it),
typos get "did you mean", and the fast answers never import torch (checked in a subprocess:
what a fresh interpreter imported, not how long it took).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.known.startup_limits import STARTUP_LIMITS, startup_refusals
from eaglegraph.rig.options import PlanOptions

PRESET = "tiny-llama-eagle3"
ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


# What a fresh interpreter imports for one command line: exit code, stderr, torch imported.
_PROBE = """
import contextlib, io, json, sys
from eaglegraph.cli import cli
err = io.StringIO()
code = 0
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
    try:
        cli.main(args=sys.argv[1:], prog_name="eaglegraph")
    except SystemExit as exc:
        code = exc.code or 0
print(json.dumps({"code": code, "err": err.getvalue(), "torch": "torch" in sys.modules}))
"""


def fresh(*args: str) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


# --- outputs checked before any work -------------------------------------------------------


@pytest.mark.parametrize("command", ["capture", "probe", "inspect"])
def test_an_unwritable_output_is_refused_before_torch(command: str) -> None:
    started = time.monotonic()
    got = fresh(command, PRESET, "--save", "/proc/eaglegraph-run.json")
    assert got["code"] == 2
    assert "--save /proc/eaglegraph-run.json: folder /proc is not writable" in str(got["err"])
    assert got["torch"] is False  # refused before the run's libraries were even imported
    assert time.monotonic() - started < 60  # a generous bound: the point is "not a run"


def test_a_missing_output_folder_is_refused(tmp_path: Path) -> None:
    code, _, err = run("capture", PRESET, "--html", str(tmp_path / "nowhere" / "run.html"))
    assert code == 2 and f"folder {tmp_path / 'nowhere'} does not exist" in err


def test_explore_export_dir_is_checked_first(tmp_path: Path) -> None:
    code, _, err = run("explore", PRESET, "--export-dir", str(tmp_path / "missing"))
    assert code == 2 and "--export-dir" in err and "does not exist" in err
    (tmp_path / "file").write_text("x")
    code, _, err = run("explore", PRESET, "--export-dir", str(tmp_path / "file"))
    assert code == 2 and "is a file" in err


# --- what the engine refuses at startup ----------------------------------------------------


def test_startup_limits_name_the_engine_and_its_limit() -> None:
    options = PlanOptions(max_num_seqs=100000, max_num_batched_tokens=8192)
    (line,) = startup_refusals("vllm", options)
    assert "--max-num-seqs 100000 exceeds --max-num-batched-tokens 8192" in line
    assert "vLLM refuses this at startup" in line
    assert startup_refusals("vllm", PlanOptions(max_num_seqs=8192)) == []
    assert all(limit.source for limit in STARTUP_LIMITS)  # each row cites the engine's code


def test_capture_refuses_a_plan_vllm_would_not_start() -> None:
    code, out, err = run("capture", PRESET, "--max-num-seqs", "100000")
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert "exceeds --max-num-batched-tokens 8192, the engine's limit" in line
    assert "pass --force" in line


def test_force_runs_a_refused_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    import eaglegraph.probes.capture as capture

    class Proceeded(Exception):
        pass

    def reached(*args: object, **kwargs: object) -> None:
        raise Proceeded

    monkeypatch.setattr(capture, "run_capture", reached)
    result = CliRunner().invoke(
        cli, ["capture", PRESET, "--max-num-seqs", "100000", "--force", "--no-predict"]
    )
    assert isinstance(result.exception, Proceeded), result.output
    assert "warning: --max-num-seqs 100000 exceeds" in result.stderr


def test_probe_refuses_too() -> None:
    code, _, err = run("probe", PRESET, "--max-num-seqs", "64", "--max-num-batched-tokens", "32")
    assert code == 2 and "vLLM refuses this at startup" in err


# --- did you mean --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (["inpsect"], "did you mean inspect?"),
        (["probe", "tiny-lama-eagle3"], "did you mean tiny-llama-eagle3"),
        (["inspect", PRESET, "--gpu", "H10"], "did you mean H100"),
        (["inspect", PRESET, "--mode", "FULLL"], "did you mean FULL"),
        (["capture", PRESET, "--behavior", "vllm-pre-3977"], "did you mean vllm-pre-39773"),
    ],
)
def test_did_you_mean(args: list[str], suggestion: str) -> None:
    code, _, err = run(*args)
    assert code == 2 and suggestion in err, err
    assert len(err.strip().splitlines()) == 1


# --- fast answers: no torch ----------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["capture", "--help"],
        ["inpsect"],
        ["inspect", PRESET, "--gpu", "H10"],
        ["capture", PRESET, "--mode", "FULLL"],
        ["probe", "tiny-lama-eagle3"],
        ["memdiff", PRESET, "--behavior", "nope"],
        ["triage", "{log}"],
        ["report", str(FIXTURES / "runs" / "capture-tiny-llama-eagle3-cpu.json")],
        ["report", str(FIXTURES / "runs" / "probe-flashinfer-pre39773.json"), "--json"],
    ],
)
def test_fast_paths_do_not_import_torch(args: list[str], tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "INFO vllm version 0.24.0\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    got = fresh(*(a.format(log=log) for a in args))
    assert got["torch"] is False, (args, got)


# --- signals -------------------------------------------------------------------------------


def test_sigterm_ends_a_capture_with_one_line_and_143() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("EAGLEGRAPH_NO_PROGRESS", None)  # the progress lines say when the work began
    proc = subprocess.Popen(
        [sys.executable, "-m", "eaglegraph", "capture", PRESET, "--device", "cpu"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert proc.stderr is not None
    for line in proc.stderr:  # wait until the capture itself has started
        if line.startswith("capture:"):
            break
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "eaglegraph: terminated" in err and "Traceback" not in err


# --- memdiff on CPU ------------------------------------------------------------------------


@pytest.mark.skipif(
    __import__("torch").cuda.is_available(), reason="the CPU answer is for machines without CUDA"
)
def test_memdiff_on_cpu_points_to_the_cpu_answer() -> None:
    code, _, err = run("memdiff", PRESET)
    assert code == 3
    assert f"eaglegraph inspect {PRESET} --predict-memory" in err and "capture" not in err


def _session_members(sid: int) -> list[int]:
    """Live processes of session `sid` (a test's command and every worker it started)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":  # fields[3]: the session id
            members.append(int(stat.parent.name))
    return members


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_sigterm_during_a_probe_ends_its_workers() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("EAGLEGRAPH_NO_PROGRESS", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "eaglegraph", "probe", PRESET, "--mode", "FULL", "--workers", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
        start_new_session=True,  # its workers share the session: what is left is findable
    )
    assert proc.stderr is not None
    for line in proc.stderr:  # the cases are planned: workers are starting
        if "cases planned" in line:
            break
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "eaglegraph: terminated" in err and "Traceback" not in err
    deadline = time.monotonic() + 10
    while _session_members(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _session_members(proc.pid) == []  # no worker outlived the command


# --- repaired input is named ---------------------------------------------------------------


@pytest.mark.parametrize("filler", [0, 200_000])  # a ticket-sized log, and one past 2 MiB
def test_a_log_with_bytes_that_are_not_utf8_says_so(tmp_path: Path, filler: int) -> None:
    log = tmp_path / "server.log"
    lines = [b"INFO vllm version 0.24.0\n"]
    lines += [b"INFO step %d ok\n" % i for i in range(filler)]
    lines.append(b"RuntimeError: CUDA error: an illegal \xff\xfe memory access was encountered\n")
    log.write_bytes(b"".join(lines))
    code, out, _ = run("triage", str(log), "--json")
    notes = json.loads(out)["notes"]
    assert code == 0
    assert "1 line(s) hold bytes that are not UTF-8: read with U+FFFD in their place" in notes
    log.write_bytes(b"".join(lines[:-1]) + b"RuntimeError: CUDA error: illegal memory access\n")
    code, out, _ = run("triage", str(log), "--json")
    assert not any("UTF-8" in note for note in json.loads(out)["notes"])
