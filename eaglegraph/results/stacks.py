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
