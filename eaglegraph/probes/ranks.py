"""Run a command as every rank of a layout, one process each, and supervise them.

The parent starts `world_size` rank processes (`probes.rank_worker`), then watches three
things until all have ended: their exit codes, their ledgers (every collective they enter
and leave, `rig.ledger`) and their progress lines. It never waits on a rank:
- a rank that fails is a finding (its first error line); its peers get a short grace to fail
  on their own — their "connection closed by peer" or timeout is labelled a consequence —
  then they are ended;
- ranks that stop making progress while one waits in a collective are stuck: after the
  deadline the supervisor reads the ledgers and says which rank waits in which collective
  inside which graph and what each other rank did last, then ends them all. NCCL's watchdog
  cannot be relied on for this: it never sees work captured in a graph;
- Ctrl-C or SIGTERM ends every rank; no process, port or file is left behind (the run's
  folder is removed once its ledgers are read).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from eaglegraph.errors import BadInput, Terminated
from eaglegraph.known.triage_signals import SIGNALS
from eaglegraph.probes.rank_findings import rank_findings, single_tolerance
from eaglegraph.probes.rank_limits import RankLimits
from eaglegraph.probes.rank_worker import RANK_ENV
from eaglegraph.probes.spec import RunSpec
from eaglegraph.results.capture import CaptureRun
from eaglegraph.results.codec import decode
from eaglegraph.results.dp import DpRun
from eaglegraph.results.parallel import ParallelLayout
from eaglegraph.results.probe import ProbeRun
from eaglegraph.results.rank_runs import (
    CollectiveCall,
    RankedRun,
    RankOutcome,
    SingleRankAgreement,
)
from eaglegraph.rig.ledger import read_ledger

# NVLink multicast stays off in every rank, whatever the caller's environment: a program that
# uses it can take a shared host's GPUs out of service (the lent machines set these too)
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}
GRACE_S = 5.0  # how long peers of a failed rank may take to fail on their own
_CONSEQUENCE = re.compile(
    "|".join(s.regex for s in SIGNALS if s.id in ("secondary.peer-lost", "hang.stall"))
    + r"|Broken pipe|[Cc]onnection refused|NCCL (?:error|communicator was aborted)"
)


@dataclass
class _Rank:
    rank: int
    proc: subprocess.Popen[bytes]
    stderr_path: Path
    ledger_path: Path
    result_path: Path
    stderr: IO[bytes]
    sizes: tuple[int, int] = (0, 0)
    ended_by_us: bool = False

    def progress(self) -> bool:
        """Whether its ledger or progress lines grew since the last look."""
        now = tuple(
            p.stat().st_size if p.exists() else 0 for p in (self.ledger_path, self.stderr_path)
        )
        grew = now != self.sizes
        self.sizes = (now[0], now[1])
        return grew


@dataclass
class RankRequest:
    """A command to run as every rank of `layout`."""

    spec: RunSpec
    layout: ParallelLayout
    task: str = "capture"
    args: dict[str, Any] = field(default_factory=dict)
    limits: RankLimits = field(default_factory=RankLimits)
    command: str = "capture"


def visible_gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def check_layout(request: RankRequest) -> None:
    """What no rank could run, refused before any rank starts: what the engine refuses for
    this pair (heads, KV heads, vocabulary or experts not divisible, more ranks than GPUs,
    `pair.rank_sizing`), and what the rank rig does not rebuild (SGLang's DP attention, a draft
    at another TP than the target's)."""
    from eaglegraph.pair.rank_sizing import check_layout as engine_refusals

    layout = request.layout
    spec = request.spec
    gpus = visible_gpus() if spec.device == "cuda" else None
    engine_refusals(spec.open_pair(), layout, spec.options.framework, gpus)
    if layout.dp_attention:
        raise BadInput(
            "the rank rig runs tensor and plain data parallelism; SGLang's DP attention is "
            "planned by inspect but not rebuilt",
            "drop --enable-dp-attention, or inspect the layout",
        )
    if layout.draft_tensor_parallel != layout.tp:
        raise BadInput(
            f"the rank rig shards the draft like the target (TP {layout.tp}); a draft at "
            f"TP {layout.draft_tensor_parallel} (draft_tensor_parallel_size) is planned by "
            "inspect but not rebuilt",
            "drop draft_tensor_parallel_size, or inspect the layout",
        )
    if request.spec.device == "cuda":
        gpus = visible_gpus()
        if layout.world_size > gpus:
            raise BadInput(
                f"{layout.describe()} needs {layout.world_size} GPU ranks; {gpus} visible",
                "lower --tp/--dp, or run on CPU (--device cpu) as gloo ranks",
            )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_ranks(request: RankRequest, on_stage: Callable[[str], None] | None = None) -> RankedRun:
    """Every rank of the layout, supervised to the end; the merged run."""
    check_layout(request)
    stage = on_stage or (lambda _: None)
    layout = request.layout
    folder = Path(tempfile.mkdtemp(prefix="eaglegraph-ranks-"))
    job = {
        "task": request.task,
        "args": request.args,
        "spec": request.spec.to_json(),
        "layout": dataclasses.asdict(layout),
        "folder": str(folder),
        "init_method": f"tcp://127.0.0.1:{_free_port()}",
        "timeout_s": request.limits.deadline_s + 30.0,  # the supervisor notices first
        "run_timeout_s": request.limits.timeout_s,
    }
    start = time.perf_counter()
    ranks: list[_Rank] = []
    interrupted: str | None = None
    stuck: str | None = None
    try:
        stage(f"starting {layout.world_size} ranks ({layout.describe()})")
        try:
            with _terminate_on_sigterm():
                for rank in range(layout.world_size):
                    ranks.append(_start(rank, folder, job))
                stuck = _supervise(ranks, request, stage)
        except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: end every rank, keep the rest
            interrupted = "SIGTERM" if isinstance(exc, Terminated) else "SIGINT"
            stage(f"{interrupted}: ending every rank; what they measured is kept")
            for r in ranks:
                _end(r)
        read = [_outcome(r, layout) for r in ranks]
    finally:
        for r in ranks:
            _end(r)
        shutil.rmtree(folder, ignore_errors=True)
    outcomes = [o for o, _, _ in read]
    calls = {o.rank: c for o, _, c in read}
    single = read[0][1].get("single_rank") if read else None
    run = _merge(request, outcomes, calls, single, stuck, time.perf_counter() - start)
    run.interrupted = interrupted
    agreement = read[0][1].get("dp_agreement") if read else None
    if agreement:
        run.dp_agreement = [decode(DpRun, d, "rank 0 DP agreement") for d in agreement]
        run.findings += [f for d in run.dp_agreement for f in d.findings]
    return run


def _start(rank: int, folder: Path, job: dict[str, Any]) -> _Rank:
    env = {**os.environ, RANK_ENV: str(rank), "PYTHONUNBUFFERED": "1", **NO_MULTICAST}
    stderr_path = folder / f"rank{rank}.stderr"
    stderr = stderr_path.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "eaglegraph.probes.rank_worker"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=stderr, env=env,
        start_new_session=True,  # Ctrl-C at the terminal reaches the parent, which ends them
    )  # fmt: skip
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(job).encode())
    proc.stdin.close()
    return _Rank(
        rank, proc, stderr_path, folder / f"rank{rank}.ledger", folder / f"rank{rank}.json", stderr
    )


def _end(r: _Rank) -> None:
    if r.proc.poll() is None:
        r.ended_by_us = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(r.proc.pid, signal.SIGTERM)
        try:
            r.proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(r.proc.pid, signal.SIGKILL)
            r.proc.wait()
    r.stderr.close()


def _supervise(
    ranks: list[_Rank], request: RankRequest, stage: Callable[[str], None]
) -> str | None:
    """Wait for every rank to end; why they were ended: "stuck", "out of time" (or None)."""
    last_progress = time.monotonic()
    first_failure: float | None = None
    begin = time.monotonic()
    while True:
        codes = [r.proc.poll() for r in ranks]
        if all(c is not None for c in codes):
            return None
        now = time.monotonic()
        if any([r.progress() for r in ranks]):  # every rank's sizes, not the first that grew
            last_progress = now
            line = _last_line(ranks[0].stderr_path)
            if line:
                stage(line)
        if first_failure is None and any(c not in (None, 0) for c in codes):
            failed = [r.rank for r, c in zip(ranks, codes, strict=True) if c not in (None, 0)]
            stage(f"rank {failed[0]} failed: ending its peers in {GRACE_S:.0f} s")
            first_failure = now
        if first_failure is not None and now - first_failure > GRACE_S:
            for r in ranks:
                _end(r)
            return None
        waiting = any(_open_entry(read_ledger(r.ledger_path)) for r in ranks)
        if waiting and now - last_progress > request.limits.deadline_s:
            stage(f"no progress for {request.limits.deadline_s:.0f} s: ending the ranks as stuck")
            for r in ranks:
                _end(r)
            return "stuck"
        if now - begin > request.limits.timeout_s:
            stage(f"the ranks did not finish in {request.limits.timeout_s:.0f} s: ending them")
            for r in ranks:
                _end(r)
            return "out of time"
        time.sleep(0.2)


@contextlib.contextmanager
def _terminate_on_sigterm() -> Iterator[None]:
    """SIGTERM while supervising raises `Terminated`, so `finally` ends every rank."""

    def raise_terminated(signum: int, frame: Any) -> None:
        raise Terminated()

    try:
        previous = signal.signal(signal.SIGTERM, raise_terminated)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _call(entry: dict[str, Any], finished: bool) -> CollectiveCall:
    return CollectiveCall(
        seq=int(entry["seq"]), op=str(entry["op"]), numel=int(entry["numel"]),
        dtype=str(entry["dtype"]), scope=str(entry["scope"]), graph=bool(entry["graph"]),
        finished=finished,
    )  # fmt: skip


def _open_entry(entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last collective entered and never left."""
    closed = {e["seq"] for e in entries if e.get("ev") == "exit"}
    for entry in reversed(entries):
        if entry.get("ev") == "enter":
            return None if entry["seq"] in closed else entry
    return None


def _calls(entries: list[dict[str, Any]]) -> list[CollectiveCall]:
    closed = {e["seq"] for e in entries if e.get("ev") == "exit"}
    return [_call(e, e["seq"] in closed) for e in entries if e.get("ev") == "enter"]


def _op_counts(calls: list[CollectiveCall]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for c in calls:
        counts[c.op] = counts.get(c.op, 0) + 1
    return counts


def _last_line(path: Path) -> str | None:
    """Rank 0's latest progress line (`[rank 0 12:00:00] capturing graphs`)."""
    try:
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - 400))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if line.startswith("[rank "):
            return line.split("] ", 1)[-1]
    return None


def _first_error(stderr: str) -> str | None:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for line in lines:
        if re.search(r"Error|error:|Exception|terminate called|Aborted|what\(\)", line):
            return line[:300]
    return lines[-1][:300] if lines else None


def _outcome(
    r: _Rank, layout: ParallelLayout
) -> tuple[RankOutcome, dict[str, Any], list[CollectiveCall]]:
    entries = read_ledger(r.ledger_path)
    calls = _calls(entries)
    open_entry = _open_entry(entries)
    code = r.proc.returncode
    reply: dict[str, Any] = {}
    if r.result_path.exists():
        with contextlib.suppress(json.JSONDecodeError):
            reply = json.loads(r.result_path.read_text(encoding="utf-8"))
    stderr = (
        r.stderr_path.read_text(encoding="utf-8", errors="replace")
        if r.stderr_path.exists()
        else ""
    )
    value = reply.get("value") or {}
    error = reply.get("error") or (None if code == 0 else _first_error(stderr))
    if code == 0 and "value" in reply:
        status = "ok"
    elif "value" in reply and r.ended_by_us:  # its result is in; it hung on the way out
        status, error = "ok", "ended after writing its result (it did not exit)"
    elif r.ended_by_us and code is not None and code < 0 and not reply:
        status = "stuck" if open_entry is not None else "stopped"
    else:
        status = "failed"
    capture = (
        decode(CaptureRun, value["capture"], f"rank {r.rank} capture")
        if value.get("capture")
        else None
    )
    probe = decode(ProbeRun, value["probe"], f"rank {r.rank} probe") if value.get("probe") else None
    if capture is not None and capture.failed is not None:  # the rank caught its own error
        status = "failed"
        error = f"capture of {capture.failed.phase} failed: {capture.failed.error}"
    outcome = RankOutcome(
        rank=r.rank,
        tp_rank=layout.tp_rank(r.rank),
        dp_rank=layout.dp_rank(r.rank),
        status=status,
        exit_code=code,
        error=error,
        consequence=bool(error and _CONSEQUENCE.search(error)),
        capture=capture,
        probe=probe,
        collectives=len(calls),
        collective_ops=_op_counts(calls),
        last_collective=calls[-1] if calls else None,
        waiting_in=_call(open_entry, False) if open_entry is not None else None,
        replay_equals_eager=value.get("replay_equals_eager"),
        collectives_per_forward=int(value.get("collectives_per_forward", 0)),
        comm_bytes=value.get("comm_bytes"),
        graph_pool_bytes=capture.totals.pool_reserved_bytes if capture is not None else None,
        graphs=list(value.get("graphs", [])),
        log_tail=[ln for ln in stderr.splitlines() if ln.strip()][-12:],
    )
    return outcome, value, calls


def _merge(
    request: RankRequest,
    outcomes: list[RankOutcome],
    calls: dict[int, list[CollectiveCall]],
    single_reply: dict[str, Any] | None,
    stuck: str | None,
    seconds: float,
) -> RankedRun:
    pools = [o.graph_pool_bytes for o in outcomes if o.graph_pool_bytes is not None]
    comms = [o.comm_bytes for o in outcomes if o.comm_bytes is not None]
    single = None
    if single_reply is not None:
        single = SingleRankAgreement(
            tokens=int(single_reply["tokens"]), equal=int(single_reply["equal"]),
            tolerance=single_tolerance(request.spec), first_difference=single_reply["first_difference"],
        )  # fmt: skip
    return RankedRun(
        layout=request.layout,
        command=request.command,
        device=request.spec.device,
        backend="nccl" if request.spec.device == "cuda" else "gloo",
        ranks=outcomes,
        findings=rank_findings(
            outcomes,
            calls,
            stuck,
            request.limits.deadline_s,
            single,
            request.spec.options.framework,
        ),
        seconds=seconds,
        deadline_s=request.limits.deadline_s,
        single_rank=single,
        pool_spread_bytes=max(pools) - min(pools) if len(pools) == len(outcomes) else None,
        comm_spread_bytes=max(comms) - min(comms) if len(comms) == len(outcomes) else None,
    )
