"""The collectives of a tensor-parallel model: one opaque op per kind, and the group they use.

Every collective a sharded model issues is one of these ops — `eaglegraph::tp_all_reduce`
(row-parallel outputs, the vocab-parallel embedding) and `eaglegraph::tp_all_gather` (the
vocab-parallel logits) — so a compiled forward keeps each as one call, as vLLM's `all_reduce`
and `all_gather` custom ops, and each calls the installed `TensorParallel`: its process
group and the ledger that records every collective (the rank runtime's, `rig.ledger`), which
the supervisor reads to say where a rank waits. Without an installed group a sharded model
refuses to run.

This module holds nothing but the group and the ops, so that the model modules that issue a
collective (`models.vocab`) and the sharding (`models.parallel`) import it without a cycle.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import Tensor


class CollectiveLedger(Protocol):
    """What records a rank's collectives (`rig.ledger.Ledger`)."""

    seq: int

    def observe(self, op: str, tensor: Tensor) -> Callable[[], None]: ...

    def scoped(self, label: str) -> contextlib.AbstractContextManager[None]: ...

    def around_replay(self, label: str, collectives: int) -> Callable[[], None] | None: ...


@dataclass
class TensorParallel:
    """This process's place in its tensor-parallel group, and the ledger of its collectives.

    `all_reduce` and `all_gather` record the collective, then `issue` it; a subclass that
    plants faults (`rig.ranks`) overrides `issue` alone, so every op is planted alike."""

    rank: int
    size: int
    group: Any = None  # a torch.distributed ProcessGroup (None: the default group)
    ledger: CollectiveLedger | None = None

    def all_reduce(self, x: Tensor) -> None:
        """Sum `x` over the group, in place."""
        import torch.distributed as dist

        self.issue("all_reduce", x, lambda t: dist.all_reduce(t, group=self.group))

    def all_gather(self, x: Tensor) -> Tensor:
        """Every rank's `x` (`[T, N]`) side by side along the last dimension, in rank order:
        `[T, size·N]`, as vLLM's `tensor_model_parallel_all_gather(x, dim=-1)`."""
        import torch.distributed as dist

        rows = x.contiguous()
        gathered: list[Tensor] = []

        def gather(t: Tensor) -> None:
            out = t.new_empty((self.size * t.shape[0], *t.shape[1:]))
            gather_single = getattr(dist, "all_gather_single", None)
            if gather_single is None:  # torch before all_gather_into_tensor's rename
                gather_single = dist.all_gather_into_tensor
            gather_single(out, t, group=self.group)
            gathered.append(out)

        self.issue("all_gather", rows, gather)
        if not gathered or gathered[0].numel() != self.size * rows.numel():
            # a planted fault left it out or shrank it (`rig.ranks`): this rank goes on
            gathered = [rows.new_zeros((self.size * rows.shape[0], *rows.shape[1:]))]
        stacked = gathered[0].view(self.size, *rows.shape)  # [size, T, N]
        return stacked.movedim(0, -2).reshape(*rows.shape[:-1], self.size * rows.shape[-1])

    def issue(self, op: str, x: Tensor, run: Callable[[Tensor], None]) -> None:
        """Record collective `op` over `x` in the ledger, run it, record its end."""
        done = self.ledger.observe(op, x) if self.ledger is not None else None
        run(x)
        if done is not None:
            done()


_INSTALLED: list[TensorParallel] = []


@contextlib.contextmanager
def tensor_parallel(tp: TensorParallel) -> Iterator[TensorParallel]:
    """Install `tp` for the forwards run inside (the rank runtime installs one per process)."""
    _INSTALLED.append(tp)
    try:
        yield tp
    finally:
        _INSTALLED.remove(tp)


def installed() -> TensorParallel | None:
    return _INSTALLED[-1] if _INSTALLED else None


def _ledger() -> CollectiveLedger | None:
    return _INSTALLED[-1].ledger if _INSTALLED else None


def collective_scope(label: str | Callable[[], str]) -> contextlib.AbstractContextManager[None]:
    """Collectives issued inside are recorded as running in `label` (a phase and its graph,
    or a callable making it, called only when a ledger records); a no-op without an installed
    ledger (single-rank runs pay one list test)."""
    ledger = _ledger()
    if ledger is None:
        return contextlib.nullcontext()
    return ledger.scoped(label if isinstance(label, str) else label())


def collectives_issued() -> int:
    """How many collectives this rank has recorded so far (0 without a ledger)."""
    ledger = _ledger()
    return ledger.seq if ledger is not None else 0


@contextlib.contextmanager
def replay_watch(label: str, collectives: int) -> Iterator[bool]:
    """Around a replay that runs `collectives` captured collectives no Python sees: recorded
    as one ledger entry whose end is written once the replay finished (a stuck peer leaves
    it open). Yields whether to replay (False only where a test planted a skipped replay). A
    no-op when nothing is recorded or the graph holds no collective."""
    ledger = _ledger()
    if ledger is None or not collectives:
        yield True
        return
    done = ledger.around_replay(label, collectives)
    yield done is not None
    if done is not None:
        done()


def _group() -> TensorParallel:
    if not _INSTALLED:
        raise RuntimeError("a tensor-parallel model ran with no process group installed")
    return _INSTALLED[-1]


@torch.library.custom_op("eaglegraph::tp_all_reduce", mutates_args=("x",))
def tp_all_reduce(x: Tensor) -> None:
    """Sum `x` over the tensor-parallel group, in place."""
    _group().all_reduce(x)


@tp_all_reduce.register_fake
def _tp_all_reduce_fake(x: Tensor) -> None:
    return None


@torch.library.custom_op("eaglegraph::tp_all_gather", mutates_args=())
def tp_all_gather(x: Tensor, size: int) -> Tensor:
    """Every rank's `x` (`[T, N]`) concatenated along the last dimension (`[T, size·N]`);
    `size` is the group's, passed so a compiled graph knows the output's shape."""
    group = _group()
    if group.size != size:
        raise RuntimeError(f"an all-gather over {size} ranks in a group of {group.size}")
    return group.all_gather(x)


@tp_all_gather.register_fake
def _tp_all_gather_fake(x: Tensor, size: int) -> Tensor:
    return x.new_empty((*x.shape[:-1], size * x.shape[-1]))
