"""Live stacks of a (hung) server, grouped and read for meaning (eaglegraph.stacks/1).

Frame tags are the vocabulary `frames.py` classifies frames into and the views colour by.
"""

from __future__ import annotations

from dataclasses import dataclass, field

STACKS_SCHEMA = "eaglegraph.stacks/1"

# What a frame means for a speculative-decoding server with CUDA graphs.
CAPTURE = "graph-capture"
REPLAY = "graph-replay"
SPEC = "spec-proposal"
SAMPLING = "sampling"
COLLECTIVE = "collective"
SERVING = "serving-loop"
STARTUP = "startup"
PROFILE = "memory-profile"
IDLE = "idle"


@dataclass
class StackFrame:
    name: str
    filename: str
    short_filename: str
    line: int
    tags: tuple[str, ...] = ()


@dataclass
class ThreadRef:
    pid: int
    thread_id: int
    os_thread_id: int | None
    name: str | None
    active: bool
    owns_gil: bool


@dataclass
class StackGroup:
    """Threads (across processes) whose stacks are identical, innermost frame first."""

    frames: list[StackFrame]
    threads: list[ThreadRef]
    tags: list[str]
    phase: str
    phase_frame: int | None

    @property
    def count(self) -> int:
        return len(self.threads)


@dataclass
class ProcessInfo:
    pid: int
    command_line: str | None
    threads: int


@dataclass
class RankName:
    """Which rank a process is, as its engine titled it (or its launcher's environment)."""

    label: str  # "DP0 TP1", "RANK 3", or "pid 1234" when nothing names it
    engine: str | None = None  # "vllm", "sglang", or None
    role: str | None = None  # "Worker", "scheduler", "EngineCore", …
    axes: dict[str, int] = field(default_factory=dict)  # {"DP": 0, "TP": 1}
    source: str = "pid"  # "title", "env" or "pid"


@dataclass
class RankStack:
    """One process of a multi-rank dump: where its busiest stack waits, and whether it is the
    odd one out among the ranks dumped together."""

    pid: int
    rank: RankName
    group: int | None  # index into StacksReport.groups of this process's busiest stack
    phase: str
    wait: str  # innermost meaningful frame: "all_reduce (distributed_c10d.py:2950)"
    collective: str | None  # the collective it waits in, when it waits in one
    active: bool  # a thread of that stack is on CPU (busy), not sleeping in a wait
    differs: bool = False


@dataclass
class StacksReport:
    pid: int
    native: bool
    subprocesses: bool
    py_spy: str
    processes: list[ProcessInfo]
    threads: int
    groups: list[StackGroup]
    stuck_group: int | None
    phase: str
    phase_detail: str
    notes: list[str] = field(default_factory=list)
    # several PIDs dumped together (`stacks PID PID …`): one row per process, and what sets
    # the odd ones apart ("" when one PID was given or every rank waits in the same place)
    pids: list[int] = field(default_factory=list)
    ranks: list[RankStack] = field(default_factory=list)
    divergence: str = ""
