"""One rank of a multi-rank deployment: its process groups, ledger and tensor-parallel state.

Every rank is its own process (`probes.rank_worker`), as every engine runs one worker per GPU:
NCCL on GPUs (one device each), gloo on CPU (several processes on one machine, for CI and
users without GPUs). The runtime joins the process group, makes the groups the engines make
(a tensor-parallel group per data-parallel replica, every rank calling `new_group` for each
in the same order), warms each communicator with one eager all-reduce before anything is
captured (NCCL communicators start lazily: the first collective must not be inside a
capture; vLLM warms up before every capture), and installs the ledger every collective
writes to. A gloo group over all ranks stays usable for the control traffic (results,
plans) even when NCCL is wedged, as the engines keep their CPU groups.

`EAGLEGRAPH_RANK_FAULT=<fault>:<rank>:<seq>` plants a divergence for the supervisor's tests:
`skip` (that rank leaves collective #seq out, as a rank taking another path does: its peers
wait for it) or `shrink` (it reduces one element fewer: a size mismatch, as ranks padding a
batch differently do) or `stall` (it never reaches the collective, as a rank spinning in a
kernel: its peers wait in it); `skip-replay` leaves its graph replay number `seq` out (counted
from 0 over replays that hold collectives: a rank that ran eagerly where its peers replayed).
"""

from __future__ import annotations

import contextlib
import datetime
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from eaglegraph.models.collectives import TensorParallel, tensor_parallel
from eaglegraph.results.parallel import ParallelLayout
from eaglegraph.rig.ledger import Ledger

FAULT_ENV = "EAGLEGRAPH_RANK_FAULT"
KINDS = ("skip", "shrink", "stall", "skip-replay")


@dataclass
class PlantedFault:
    kind: str  # one of KINDS
    rank: int
    seq: int

    @classmethod
    def from_env(cls) -> PlantedFault | None:
        spec = os.environ.get(FAULT_ENV, "")
        if not spec:
            return None
        kind, rank, seq = spec.split(":")
        if kind not in KINDS:
            raise ValueError(f"{FAULT_ENV}: unknown fault {kind!r} ({', '.join(KINDS)})")
        return cls(kind, int(rank), int(seq))


class RankTensorParallel(TensorParallel):
    """The tensor-parallel state of a rank, with a planted fault where a test asks for one
    (on whichever collective, all-reduce or all-gather, carries the planted number)."""

    fault: PlantedFault | None = None
    global_rank: int = 0

    def issue(self, op: str, x: torch.Tensor, run: Callable[[torch.Tensor], None]) -> None:
        ledger = self.ledger
        fault = self.fault
        planted = (
            fault is not None
            and fault.rank == self.global_rank
            and ledger is not None
            and ledger.seq == fault.seq
        )
        if planted:
            self.fault = None  # once
        if planted and fault is not None and fault.kind == "skip":
            return  # as a rank that took another path: its next collective takes this number
        if planted and fault is not None and fault.kind == "stall":
            time.sleep(3600)  # as a rank spinning in a kernel that never returns
        if planted:
            x = x.view(-1)[:-1]
        super().issue(op, x, run)


@dataclass
class RankRuntime:
    """Join the deployment as `rank`; a context manager that leaves it cleanly."""

    layout: ParallelLayout
    rank: int
    init_method: str
    ledger_path: Path
    device: torch.device
    timeout_s: float = 60.0
    control_timeout_s: float = 3600.0  # results and plans: a peer may still be computing
    tp_group: Any = None
    dp_group: Any = None  # gloo: this rank and its peers of the same TP index in every replica
    control_group: Any = None
    ledger: Ledger | None = None
    comm_bytes: int | None = None  # device memory the communicators took (outside torch)
    _stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    @property
    def backend(self) -> str:
        return "nccl" if self.device.type == "cuda" else "gloo"

    def __enter__(self) -> RankRuntime:
        import torch.distributed as dist

        layout, timeout = self.layout, datetime.timedelta(seconds=self.timeout_s)
        free_before = self._free()
        dist.init_process_group(
            self.backend, init_method=self.init_method, rank=self.rank,
            world_size=layout.world_size, timeout=timeout,
        )  # fmt: skip
        self._stack.callback(dist.destroy_process_group)
        replicas = layout.world_size // layout.tp
        for replica in range(replicas):  # every rank creates every group, in one order
            ranks = list(range(replica * layout.tp, (replica + 1) * layout.tp))
            group = dist.new_group(ranks, timeout=timeout)
            if self.rank in ranks:
                self.tp_group = group
        for index in range(layout.tp):  # the DP agreement runs on CPU groups, as the engines'
            ranks = [index + replica * layout.tp for replica in range(replicas)]
            group = dist.new_group(ranks, timeout=timeout, backend="gloo")
            if self.rank in ranks:
                self.dp_group = group
        self.control_group = dist.new_group(
            backend="gloo", timeout=datetime.timedelta(seconds=self.control_timeout_s)
        )
        self.ledger = Ledger(self.ledger_path, self.rank)
        self._stack.callback(self.ledger.close)
        self.ledger.sync_replays = self.device.type == "cuda"
        tp = RankTensorParallel(layout.tp_rank(self.rank), layout.tp, self.tp_group, self.ledger)
        fault = PlantedFault.from_env()
        if fault is not None and fault.kind == "skip-replay":
            if fault.rank == self.rank:
                self.ledger.skip_replay = fault.seq
            fault = None
        tp.fault, tp.global_rank = fault, self.rank
        self._stack.enter_context(tensor_parallel(tp))
        self._warm_up()
        if free_before is not None:
            free_after = self._free()
            assert free_after is not None
            self.comm_bytes = free_before - free_after
        return self

    def _free(self) -> int | None:
        if self.device.type != "cuda":
            return None
        torch.cuda.synchronize(self.device)
        return int(torch.cuda.mem_get_info(self.device)[0])

    def _warm_up(self) -> None:
        """One eager all-reduce on each group this rank captures collectives of, and a
        barrier: communicators exist before any graph is captured."""
        import torch.distributed as dist

        probe = torch.ones(16, device=self.device)
        assert self.ledger is not None
        with self.ledger.scoped("communicator warm-up"):
            done = self.ledger.observe("all_reduce", probe)
            dist.all_reduce(probe, group=self.tp_group)
            done()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self.barrier()

    def barrier(self) -> None:
        import torch.distributed as dist

        dist.barrier(group=self.control_group)

    def dp_gather(self, value: Any) -> list[Any]:
        """`value` of every DP replica (this TP index), in replica order, over gloo."""
        import torch.distributed as dist

        out: list[Any] = [None] * (self.layout.world_size // self.layout.tp)
        dist.all_gather_object(out, value, group=self.dp_group)
        return out

    def gather(self, value: Any) -> list[Any]:
        """`value` of every rank, on every rank, over the control (gloo) group."""
        import torch.distributed as dist

        out: list[Any] = [None] * self.layout.world_size
        dist.all_gather_object(out, value, group=self.control_group)
        return out

    def __exit__(self, *exc: object) -> None:
        self._stack.close()
