"""The isolation runner: one task (a probe case, a capture) as data, in a fresh worker process.

A task is a name from `TASKS` plus JSON arguments (a serialised RunSpec and the task's own
fields); the worker (`python -m eaglegraph.probes.worker`) reads them on stdin and prints one
marked JSON result line. Nothing is re-parsed from command-line flags. An illegal memory
access or a device assert kills the worker's CUDA context, so dying there costs one task: a
real crash, a hang past the timeout, Ctrl-C or SIGTERM each end that worker and are reported.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from eaglegraph.errors import BadInput, EagleGraphError, MissingEnvironment, Terminated

MARKER = "EAGLEGRAPH-WORKER-RESULT "

# task name → "module:function"; the function takes the JSON arguments, returns JSON data
TASKS = {
    "probe-case": "eaglegraph.probes.cases:case_task",
    "probe-cases": "eaglegraph.probes.cases:cases_task",
    "capture": "eaglegraph.probes.capture:capture_task",
}


@dataclass(frozen=True)
class Outcome:
    """How a task ended: ok (value set), failed (the task refused its input: exit_code set),
    crash (the worker died), timeout (killed after `timeout` seconds)."""

    status: str
    value: Any = None
    error: str | None = None
    exit_code: int | None = None
    stderr: str = ""
    duration_s: float = 0.0

    def raise_failure(self) -> None:
        """Re-raise a refused input in the parent as the same one-line error."""
        if self.status == "failed" and self.error is not None:
            raise (BadInput if self.exit_code == 2 else MissingEnvironment)(self.error)


def task_function(task: str) -> Any:
    if task not in TASKS:
        raise ValueError(f"unknown worker task {task!r}")
    module, name = TASKS[task].split(":")
    return getattr(importlib.import_module(module), name)


def call_task(task: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """Run a task here; the reply the worker prints (value, or the refusal's message)."""
    try:
        return {"value": task_function(task)(args)}
    except EagleGraphError as exc:
        return {"error": str(exc), "exit_code": exc.exit_code}


@dataclass(frozen=True)
class Job:
    """One task for `run_tasks`: its name in `TASKS`, JSON arguments, a label, a time limit."""

    task: str
    args: Mapping[str, Any]
    name: str
    timeout: float = 900.0


def run_task(
    task: str, args: Mapping[str, Any], *, name: str, isolate: bool = True, timeout: float = 900.0
) -> Outcome:
    """Run one task, in a worker process unless `isolate` is False (then a crash ends the run)."""
    start = time.perf_counter()
    if not isolate:
        reply = call_task(task, args)
        return _outcome(reply, "", time.perf_counter() - start)
    with _sigterm_ends_the_wait():
        return _isolated(Job(task, args, name, timeout), _Workers())


def run_tasks(
    jobs: Sequence[Job], *, workers: int, on_done: Callable[[int, Outcome], None] | None = None
) -> list[Outcome]:
    """Run `jobs` in worker processes, up to `workers` at once; `on_done(index, outcome)` as
    each ends. Ctrl-C or SIGTERM while waiting ends every worker still running."""
    outcomes: list[Outcome | None] = [None] * len(jobs)
    live = _Workers()
    with _sigterm_ends_the_wait():
        pool = ThreadPoolExecutor(max_workers=max(1, workers))
        try:
            futures = {pool.submit(_isolated, job, live): i for i, job in enumerate(jobs)}
            for future in as_completed(futures):
                i = futures[future]
                outcome = outcomes[i] = future.result()
                if on_done is not None:
                    on_done(i, outcome)
        finally:
            live.stop()
            pool.shutdown(wait=True, cancel_futures=True)
    return [o for o in outcomes if o is not None]


class _Workers:
    """The worker processes running now; once stopped, none starts and all running are killed."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.procs: set[subprocess.Popen[str]] = set()
        self.stopped = False

    def start(self) -> subprocess.Popen[str] | None:
        with self.lock:
            if self.stopped:
                return None
            proc = subprocess.Popen(
                [sys.executable, "-m", "eaglegraph.probes.worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            self.procs.add(proc)
            return proc

    def done(self, proc: subprocess.Popen[str]) -> None:
        if proc.poll() is None:  # Ctrl-C or SIGTERM while waiting: the worker goes too
            proc.kill()
            proc.wait()
        with self.lock:
            self.procs.discard(proc)

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            for proc in self.procs:
                if proc.poll() is None:
                    proc.kill()


def _isolated(job: Job, live: _Workers) -> Outcome:
    start = time.perf_counter()
    proc = live.start()
    if proc is None:
        return Outcome("crash", error="stopped before it started")
    try:
        payload = json.dumps({"task": job.task, "name": job.name, "args": job.args})
        try:
            out, err = proc.communicate(payload, timeout=job.timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
            return Outcome(
                "timeout",
                error=f"no result after {job.timeout:.0f} s (hang?)",
                stderr=(err or "")[-4000:],
                duration_s=time.perf_counter() - start,
            )
    finally:
        live.done(proc)
    duration = time.perf_counter() - start
    for line in reversed(out.splitlines()):
        if line.startswith(MARKER):
            return _outcome(json.loads(line[len(MARKER) :]), err, duration)
    return Outcome(
        "crash",
        error=f"worker exited with status {proc.returncode}",
        stderr=(err or "")[-4000:],
        duration_s=duration,
    )


def _outcome(reply: Mapping[str, Any], stderr: str, duration: float) -> Outcome:
    if "error" in reply:
        return Outcome(
            "failed",
            error=reply["error"],
            exit_code=int(reply["exit_code"]),
            stderr=stderr[-4000:],
            duration_s=duration,
        )
    return Outcome("ok", value=reply["value"], stderr=stderr[-4000:], duration_s=duration)


@contextlib.contextmanager
def _sigterm_ends_the_wait() -> Iterator[None]:
    """SIGTERM raises `Terminated` (as Ctrl-C raises KeyboardInterrupt) while a worker runs,
    so `finally` kills the worker; the CLI turns it into one line and exit 143."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
