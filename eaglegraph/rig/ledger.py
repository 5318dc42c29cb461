"""Every collective one rank issues, written down as it happens, for the rank supervisor.

When ranks hang nothing says where: NCCL's watchdog never sees work captured in a CUDA graph
(`ProcessGroupNCCL` enqueues only uncaptured work), and a rank blocked in a collective prints
nothing. So each rank appends one JSON line before every collective it calls eagerly or
captures (`enter`, with its sequence number, op, size, dtype, and the phase and graph it runs
in) and one after it (`exit`), and one pair around every graph replay that contains
collectives. The file is flushed line by line: the supervisor, another process, reads the
last `enter` without an `exit` of each rank and says "rank 0 waits in all_reduce #6 inside
draft_decode FULL(16); rank 1 ran eager" — without the rank's cooperation, even while it is
stuck in C++. (Wrapping `torch.distributed` alone would miss the engines' own communicators,
as an SGLang engineer found; here every collective of the rig goes through the ops of
`models.collectives`: all-reduces and the vocab-parallel logits' all-gathers.)

Cost per collective: two short JSON lines to a line-buffered file, about 20 µs of Python
(`benchmarks/bench_ranks.py` measures it alone and around real all-reduces); nothing when no
ledger is installed.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import torch

OUTSIDE_PHASES = "outside any phase"


class Ledger:
    """One rank's collective ledger file (JSON lines)."""

    def __init__(self, path: Path, rank: int, group: str = "tp") -> None:
        self.path = path
        self.rank = rank
        self.group = group
        self.seq = 0
        self.scopes: list[str] = []
        # on CUDA: wait for each replay and eager collective, so a stuck one stays open
        self.sync_replays = False
        self.replays = 0
        self.skip_replay: int | None = None  # a planted fault: leave this replay out
        self._file: IO[str] = path.open("a", encoding="utf-8", buffering=1)

    def write(self, **entry: Any) -> None:
        entry.setdefault("t", round(time.time(), 4))
        self._file.write(json.dumps(entry, separators=(",", ":")) + "\n")

    @property
    def scope(self) -> str:
        # no phase scope: eager work between a step's phases (the logits the LM head computes
        # outside the graphs, sampling) or before any step (the communicators' warm-up)
        return self.scopes[-1] if self.scopes else OUTSIDE_PHASES

    @contextlib.contextmanager
    def scoped(self, label: str) -> Iterator[None]:
        """Collectives issued inside carry `label` (the phase and graph they run in)."""
        self.scopes.append(label)
        try:
            yield
        finally:
            self.scopes.pop()

    def observe(self, op: str, tensor: torch.Tensor) -> Callable[[], None]:
        """Record a collective about to be issued; the returned callable records its end."""
        seq = self.seq
        self.seq += 1
        captured = tensor.is_cuda and torch.cuda.is_current_stream_capturing()
        self.write(
            ev="enter", seq=seq, op=op, group=self.group, numel=tensor.numel(),
            dtype=str(tensor.dtype).removeprefix("torch."), scope=self.scope,
            graph=captured,
        )  # fmt: skip
        wait = self.sync_replays and tensor.is_cuda and not captured

        def done() -> None:
            if wait:  # NCCL returns at once: its end is when the stream passed it
                torch.cuda.current_stream().synchronize()
            self.write(ev="exit", seq=seq)

        return done

    def around_replay(self, label: str, collectives: int) -> Callable[[], None] | None:
        """Record a graph replay that runs `collectives` captured collectives; the returned
        callable (after the replay) waits for the stream when asked and records the end.
        None: a planted fault says this rank leaves the replay out (`rig.ranks`)."""
        self.replays += 1
        if self.skip_replay == self.replays - 1:
            return None
        first = self.seq
        self.seq += collectives
        self.write(
            ev="enter", seq=first, op="replay", group=self.group, numel=collectives,
            dtype="", scope=label, graph=True,
        )  # fmt: skip

        def done() -> None:
            if self.sync_replays and torch.cuda.is_available():
                torch.cuda.current_stream().synchronize()
            self.write(ev="exit", seq=first)

        return done

    def close(self) -> None:
        self._file.close()


def read_ledger(path: Path) -> list[dict[str, Any]]:
    """A ledger's entries, skipping a last line cut off mid-write."""
    out: list[dict[str, Any]] = []
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out
