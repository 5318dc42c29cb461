"""How a multi-rank engine stops, as data: the line forms of each kind of stop and what to do.

Three kinds are told apart (tp-dp.md, crash-triage.md):

- `collective-wait`: every rank waits inside a collective for a peer that never arrives (NCCL's
  watchdog, Gloo's recv timeout). The rank that is elsewhere is the cause; its stack says where.
- `step-stuck`: the engine waited for its workers' step and it never returned (vLLM's shared
  memory broadcast, an RPC to the workers timing out, SGLang's scheduler watchdog): one kernel
  spinning or a host loop in one worker, not necessarily a collective.
- `rank-died`: a rank failed with its own error; engine death, lost peers and watchdogs on the
  others are the cascade that follows it.

Each form cites where the engine or library prints it.
"""

from __future__ import annotations

from typing import NamedTuple

from eaglegraph.known.enums import StrEnum


class StopKind(StrEnum):
    COLLECTIVE_WAIT = "collective-wait"
    STEP_STUCK = "step-stuck"
    RANK_DIED = "rank-died"


class StopForm(NamedTuple):
    """A line form (`pattern`, a regex over the hits of `signals`) that shows a `kind` of stop;
    `source` says where the engine or library prints it."""

    id: str
    kind: StopKind
    signals: tuple[str, ...]
    pattern: str
    source: str


STOP_FORMS: tuple[StopForm, ...] = (
    StopForm(
        "shm-broadcast",
        StopKind.STEP_STUCK,
        ("hang.stall",),
        r"No available shared memory broadcast block",
        "vllm/distributed/device_communicators/shm_broadcast.py::MessageQueue.acquire_write "
        "(https://github.com/vllm-project/vllm/issues/35465)",
    ),
    StopForm(
        "rpc-timeout",
        StopKind.STEP_STUCK,
        ("hang.stall",),
        r"RPC call to [\w.]+ timed out",
        "vllm/v1/executor/multiproc_executor.py::MultiprocExecutor.collective_rpc",
    ),
    StopForm(
        "scheduler-watchdog",
        StopKind.STEP_STUCK,
        ("hang.watchdog",),
        r"[Ss]cheduler watchdog|[Ww]atchdog timeout|soft watchdog",
        "sglang/srt/managers/scheduler.py::Scheduler.watchdog_thread",
    ),
    StopForm(
        "gloo-recv",
        StopKind.COLLECTIVE_WAIT,
        ("hang.stall",),
        r"Timed out waiting \d+ ?ms for recv",
        "gloo/transport/tcp/pair.cc::Pair::recv (through torch.distributed's Gloo backend)",
    ),
    StopForm(
        "nccl-watchdog",
        StopKind.COLLECTIVE_WAIT,
        ("secondary.nccl-timeout",),
        r"collective operation timeout|Watchdog caught|ProcessGroupNCCL",
        "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp::ProcessGroupNCCL::Watchdog",
    ),
    StopForm(
        "engine-dead",
        StopKind.RANK_DIED,
        ("secondary.engine",),
        r"EngineDeadError|Engine core proc [^\n]*died|Worker proc [^\n]*died|WorkerProc",
        "vllm/v1/engine/exceptions.py::EngineDeadError",
    ),
    StopForm(
        "peer-lost",
        StopKind.RANK_DIED,
        ("secondary.peer-lost",),
        r"Connection (?:closed|reset) by peer",
        "gloo/transport/tcp/pair.cc (a peer's socket closed when its process died)",
    ),
)

NEXT_STEP: dict[StopKind, str] = {
    StopKind.COLLECTIVE_WAIT: "all ranks wait in a collective for one rank that is elsewhere: "
    "run `eaglegraph stacks PID --subprocesses` on every rank while it is stuck; the rank "
    "outside the collective is the cause",
    StopKind.STEP_STUCK: "a worker's step never returned (one kernel spinning or a host loop): "
    "run `eaglegraph stacks PID --subprocesses` on every rank while it is stuck, and rerun with "
    "CUDA_LAUNCH_BLOCKING=1 to see which kernel does not return",
    StopKind.RANK_DIED: "one rank failed first and the rest is its cascade: read that rank's "
    "first error (collect every rank's log); the watchdog and engine-death lines are "
    "consequences",
}
