"""Live Python stacks of a (hung) server through py-spy, grouped and read for meaning.

A hung vLLM/SGLang deployment has dozens of threads in several processes, most of them idle
in the same place. Grouping identical stacks shows the few distinct situations; tagging frames
(graph capture/replay, speculative proposal, sampling, collective waits, see
`eaglegraph.triage.frames`) says which phase the busiest stack is stuck in: the phase is named
by the deepest meaningful frame, with the outer ones as context (e.g. a draft proposal inside a
graph capture).

py-spy errors are turned into one-line messages with the fix: the binary missing, ptrace not
allowed (root, `kernel.yama.ptrace_scope`, SYS_PTRACE in Docker/Kubernetes), the process gone,
or not a Python process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from eaglegraph import frames as fr
from eaglegraph.errors import BadInput, MissingEnvironment
from eaglegraph.results.stacks import (
    ProcessInfo,
    StackFrame,
    StackGroup,
    StacksReport,
    ThreadRef,
)
from eaglegraph.system.proc import command_line
from eaglegraph.system.rank_stacks import divergence, rank_rows

MEANINGFUL = (fr.CAPTURE, fr.REPLAY, fr.SPEC, fr.SAMPLING, fr.COLLECTIVE)
PHASE_NAMES = {
    fr.CAPTURE: "cuda-graph capture",
    fr.REPLAY: "cuda-graph replay",
    fr.SPEC: "speculative proposal",
    fr.SAMPLING: "sampling / verification",
    fr.COLLECTIVE: "collective wait (NCCL)",
    fr.SERVING: "serving loop",
    fr.STARTUP: "startup",
    fr.PROFILE: "memory profiling",
    fr.IDLE: "idle",
}

_CONTAINER_FIX = (
    "in Docker start the container with --cap-add SYS_PTRACE, in Kubernetes add "
    "securityContext.capabilities.add: [SYS_PTRACE]"
)
_CAP_SYS_PTRACE = 19


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def _cap_eff() -> int | None:
    status = _read("/proc/self/status") or ""
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return None


def _owner(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def ptrace_hint(
    pid: int,
    *,
    euid: int | None = None,
    scope: int | None = None,
    cap_eff: int | None = None,
    owner: int | None = None,
) -> str:
    """Why ptrace was refused on this machine, and the one fix that applies (never "run as
    root" to root). The facts default to this machine's; tests pass their own."""
    euid = os.geteuid() if euid is None else euid
    if scope is None:
        text = _read("/proc/sys/kernel/yama/ptrace_scope")
        scope = int(text) if text and text.strip().isdigit() else None
    cap_eff = _cap_eff() if cap_eff is None else cap_eff
    owner = _owner(pid) if owner is None else owner
    has_cap = cap_eff is not None and bool(cap_eff >> _CAP_SYS_PTRACE & 1)
    if cap_eff is not None and not has_cap and euid == 0:
        return f"this process lacks the SYS_PTRACE capability (a container?): {_CONTAINER_FIX}"
    if scope == 3:
        return "kernel.yama.ptrace_scope=3 forbids ptrace until reboot"
    if scope == 2 and not has_cap:
        return "kernel.yama.ptrace_scope=2 lets only CAP_SYS_PTRACE holders attach: run as root"
    if euid != 0 and owner is not None and owner != euid:
        return f'process {pid} belongs to uid {owner}: run as that user or root (sudo env "PATH=$PATH")'
    if scope == 1 and euid != 0:
        return (
            "kernel.yama.ptrace_scope=1 lets you attach only to your own child processes: run as "
            'root (sudo env "PATH=$PATH"), or `sysctl kernel.yama.ptrace_scope=0`'
        )
    return (
        "ptrace_scope and capabilities allow it here, so a seccomp profile or an LSM "
        f"(AppArmor, SELinux) blocks ptrace; {_CONTAINER_FIX}, or --security-opt seccomp=unconfined"
    )


def find_pyspy() -> str:
    """The py-spy executable: on PATH, or next to this Python (a venv not on PATH)."""
    found = shutil.which("py-spy")
    if found:
        return found
    local = Path(sys.executable).with_name("py-spy")
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    raise MissingEnvironment("py-spy is not installed", "pip install py-spy")


def check_pid(pid: int) -> None:
    if pid <= 0:
        raise BadInput(f"PID must be a positive integer, got {pid}")
    if pid >= 2**31:  # os.kill overflows; no kernel hands out such a PID
        raise BadInput(f"no process with PID {pid} (PIDs are below 2^31)")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        raise BadInput(
            f"no process with PID {pid}", "check the PID with `ps` or `nvidia-smi`"
        ) from None
    except PermissionError:
        pass  # it exists but belongs to someone else; py-spy will say whether it can attach
    except OSError as exc:
        raise BadInput(f"cannot check PID {pid}: {exc.strerror or exc}") from None


def interpret_failure(pid: int, returncode: int, stderr: str) -> Exception:
    """Turn py-spy's stderr into the error the user can act on."""
    text = stderr or ""
    low = text.lower()
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), f"exit code {returncode}")
    if (
        "permission denied" in low
        or "operation not permitted" in low
        or "os error 1)" in low
        or "os error 13)" in low
        or "sys_ptrace" in low
    ):
        return MissingEnvironment(
            f"not allowed to read process {pid}'s memory (ptrace)", ptrace_hint(pid)
        )
    if (
        "os error 2)" in low
        or "os error 3)" in low
        or "no such process" in low
        or ("check that the process is running" in low)
    ):
        return BadInput(f"no process with PID {pid} (it may have exited)")
    if (
        "failed to find python version" in low
        or "failed to find a python interpreter" in low
        or ("failed to get python version" in low)
    ):
        return BadInput(
            f"process {pid} does not look like a Python process",
            "pass the PID of the Python server or a worker",
        )
    return MissingEnvironment(f"py-spy failed on PID {pid}: {first[:200]}")


def run_pyspy(
    pid: int, native: bool = False, subprocesses: bool = False, timeout: float = 60.0
) -> tuple[str, str]:
    """Run `py-spy dump --json`; returns (stdout, py-spy path)."""
    exe = find_pyspy()
    check_pid(pid)
    argv = [exe, "dump", "--pid", str(pid), "--json"]
    if native:
        argv.append("--native")
    if subprocesses:
        argv.append("--subprocesses")
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, errors="replace"
        )
    except FileNotFoundError:
        raise MissingEnvironment("py-spy is not installed", "pip install py-spy") from None
    except subprocess.TimeoutExpired:
        raise MissingEnvironment(
            f"py-spy did not answer within {timeout:.0f} s",
            "the process may be in uninterruptible I/O; retry, or raise --timeout",
        ) from None
    if proc.returncode != 0:
        raise interpret_failure(pid, proc.returncode, proc.stderr)
    return proc.stdout, exe


def parse_dump(text: str) -> list[dict[str, Any]]:
    """All StackTrace objects in py-spy's output, which may hold several JSON documents.

    With --subprocesses py-spy can write one document per process; anything between documents
    that is not JSON (warnings) is skipped.
    """
    decoder = json.JSONDecoder()
    out: list[dict[str, Any]] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] not in "[{":
            i += 1
        if i >= n:
            break
        try:
            doc, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            i += 1
            continue
        i = end
        items = doc if isinstance(doc, list) else [doc]
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("frames"), list):
                out.append(item)
    return out


def _frame(raw: dict[str, Any]) -> StackFrame:
    name = str(raw.get("name") or "?")
    filename = str(raw.get("filename") or "")
    short = str(raw.get("short_filename") or Path(filename).name or filename)
    try:
        line = int(raw.get("line") or 0)
    except (TypeError, ValueError):
        line = 0
    return StackFrame(name, filename, short, line, fr.classify(name, filename))


def phase_of(frames: list[StackFrame]) -> tuple[str, int | None]:
    """The phase named by the deepest (innermost) meaningful frame, outer phases as context."""
    inner = next((i for i, f in enumerate(frames) if set(f.tags) & set(MEANINGFUL)), None)
    if inner is None:
        for tag in (fr.SERVING, fr.STARTUP, fr.PROFILE):
            idx = next((i for i, f in enumerate(frames) if tag in f.tags), None)
            if idx is not None:
                return PHASE_NAMES[tag], idx
        if (
            frames
            and all(not f.tags or f.tags == (fr.IDLE,) for f in frames)
            and any(fr.IDLE in f.tags for f in frames)
        ):
            return PHASE_NAMES[fr.IDLE], next(i for i, f in enumerate(frames) if fr.IDLE in f.tags)
        return "unknown", None
    tag = next(t for t in MEANINGFUL if t in frames[inner].tags)
    outer = []
    for f in frames[inner + 1 :]:
        for t in MEANINGFUL:
            if t in f.tags and t != tag and PHASE_NAMES[t] not in outer:
                outer.append(PHASE_NAMES[t])
    name = PHASE_NAMES[tag]
    if outer:
        name += " inside " + ", ".join(outer)
    return name, inner


def group_stacks(traces: list[dict[str, Any]]) -> list[StackGroup]:
    """Identical stacks (same functions, files and lines) across threads and processes."""
    groups: dict[tuple[Any, ...], StackGroup] = {}
    for t in traces:
        frames = [_frame(f) for f in t.get("frames") or [] if isinstance(f, dict)]
        key = tuple((f.name, f.filename, f.line) for f in frames)
        ref = ThreadRef(
            pid=int(t.get("pid") or 0),
            thread_id=int(t.get("thread_id") or 0),
            os_thread_id=t.get("os_thread_id"),
            name=t.get("thread_name"),
            active=bool(t.get("active")),
            owns_gil=bool(t.get("owns_gil")),
        )
        group = groups.get(key)
        if group is None:
            tags = sorted({tag for f in frames for tag in f.tags})
            phase, idx = phase_of(frames)
            group = groups[key] = StackGroup(frames, [], tags, phase, idx)
        group.threads.append(ref)
    ordered = list(groups.values())
    ordered.sort(key=lambda g: (-_busy(g), -g.count, g.phase))
    return ordered


def _busy(group: StackGroup) -> float:
    """How much a group says about where the process is stuck."""
    meaningful = bool(set(group.tags) & set(MEANINGFUL))
    idle = group.phase in (PHASE_NAMES[fr.IDLE], "unknown") and not meaningful
    active = sum(1 for t in group.threads if t.active or t.owns_gil)
    return (3.0 if meaningful else 0.0) + (0.0 if idle else 1.0) + 2.0 * active + 0.1 * group.count


def _activity(group: StackGroup) -> str:
    """Sleeping or stuck, from py-spy's per-thread `active` flag (on CPU when sampled)."""
    running = sum(1 for t in group.threads if t.active)
    if running == 0:
        return "all sleeping (py-spy: idle): blocked in a wait, not computing"
    return f"{running} of {group.count} running (py-spy: active): busy, not waiting"


def build_report(
    pid: int, traces: list[dict[str, Any]], native: bool, subprocesses: bool, exe: str
) -> StacksReport:
    groups = group_stacks(traces)
    processes: dict[int, ProcessInfo] = {}
    for t in traces:
        p = int(t.get("pid") or 0)
        info = t.get("process_info") or {}
        cmd = info.get("command_line") if isinstance(info, dict) else None
        proc = processes.setdefault(p, ProcessInfo(p, cmd, 0))
        proc.threads += 1
        if proc.command_line is None and cmd:
            proc.command_line = cmd
    notes: list[str] = []
    stuck = 0 if groups else None
    if stuck is None:
        phase, detail = "unknown", "py-spy returned no Python threads"
    else:
        g = groups[stuck]
        phase = g.phase
        if g.phase_frame is not None:
            f = g.frames[g.phase_frame]
            detail = f"{f.name} ({f.short_filename}:{f.line}) in {g.count} thread(s)"
        else:
            detail = f"{g.count} thread(s) share this stack"
        detail += "; " + _activity(g)
        if len(groups) > 1 and groups[1].count > g.count and _busy(groups[1]) < _busy(g):
            notes.append(
                f"{groups[1].count} threads share another stack ({groups[1].phase}); "
                "the chosen one has graph/draft/NCCL frames or holds the GIL"
            )
    return StacksReport(
        pid=pid,
        native=native,
        subprocesses=subprocesses,
        py_spy=exe,
        processes=sorted(processes.values(), key=lambda p: p.pid),
        threads=len(traces),
        groups=groups,
        stuck_group=stuck,
        phase=phase,
        phase_detail=detail,
        notes=notes,
    )


def child_pids(pid: int, limit: int = 64) -> list[int]:
    """Descendants of `pid` (breadth first), from /proc; empty where /proc is not available."""
    parents: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().decode("utf-8", "replace")
        except OSError:
            continue
        # The command name is in parentheses and may contain spaces: ppid follows the last ')'.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) >= 2 and fields[1].isdigit():
            parents.setdefault(int(fields[1]), []).append(int(entry))
    out: list[int] = []
    queue = [pid]
    while queue and len(out) < limit:
        for child in sorted(parents.get(queue.pop(0), [])):
            if child not in out:
                out.append(child)
                queue.append(child)
    return out[:limit]


def _dump_one(
    pid: int, native: bool, subprocesses: bool, timeout: float
) -> tuple[list[dict[str, Any]], str, list[str]]:
    """py-spy dump of one PID (and its Python descendants); (traces, py-spy path, notes)."""
    stdout, exe = run_pyspy(pid, native=native, subprocesses=subprocesses, timeout=timeout)
    traces = parse_dump(stdout)
    notes: list[str] = []
    if subprocesses:
        seen = {int(t.get("pid") or 0) for t in traces}
        for child in child_pids(pid):
            if child in seen:
                continue
            try:
                out, _ = run_pyspy(child, native=native, subprocesses=False, timeout=timeout)
            except (BadInput, MissingEnvironment) as exc:
                notes.append(f"child {child}: {exc}")
                continue
            traces += parse_dump(out)
    for t in traces:
        if not t.get("process_info"):
            t["process_info"] = {
                "pid": t.get("pid"),
                "command_line": command_line(int(t.get("pid") or 0)),
            }
    return traces, exe, notes


def dump_stacks(
    pid: int | Sequence[int],
    native: bool = False,
    subprocesses: bool = False,
    timeout: float = 60.0,
) -> StacksReport:
    """py-spy dump of PID (and, with `subprocesses`, of every Python descendant), grouped.

    Several PIDs (every rank of a hung server) are dumped at once, one py-spy per PID in
    parallel so the ranks are seen at nearly the same moment; the report then has a row per
    process (`ranks`) and says which rank waits somewhere the others do not.

    py-spy 0.4's JSON output covers only the target even with --subprocesses (its text output
    does include children), so descendants found in /proc are dumped one by one; a child that is
    not Python (a shell, a compiler) is noted and skipped.
    """
    pids = [pid] if isinstance(pid, int) else list(dict.fromkeys(pid))
    if not pids:
        raise BadInput("stacks needs at least one PID")
    for p in pids:  # every PID checked before any py-spy runs
        check_pid(p)
    with ThreadPoolExecutor(max_workers=min(8, len(pids))) as pool:
        dumps = list(pool.map(lambda p: _dump_one(p, native, subprocesses, timeout), pids))
    traces = [t for d in dumps for t in d[0]]
    report = build_report(pids[0], traces, native, subprocesses, dumps[0][1])
    report.notes = [n for d in dumps for n in d[2]] + report.notes
    if not traces:
        report.notes.append("py-spy printed no stack traces")
    if len(pids) > 1 or subprocesses:
        report.pids = pids
        report.ranks = rank_rows(report)
        report.divergence = divergence(report.ranks)
    return report
