"""KV a step may not write: every running request's committed prefix, in every layer.

Positions [0, start) of a request were written by earlier steps and are final; no row of this
step — a real one or a padded one — may write them. A padded row whose slot points into a real
request's blocks, or a real row one request off, overwrites them with values that are finite
and plausible: no sentinel, no guard and no NaN sees that. The probe copies those slots before
the step (one gather per cache tensor) and compares them bit for bit after each phase, so the
first phase that wrote them is named, with the request, layer and position.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from eaglegraph.rig.workload import ScheduledRequest

if TYPE_CHECKING:
    from eaglegraph.rig.step import Rig

_INT = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


@dataclass(frozen=True)
class Overwrite:
    """Committed slots of one cache tensor that a phase changed: the first, and how many."""

    request: int
    layer: int
    position: int
    block: int
    slots: int


class CommittedKV:
    """The committed slots of a step's requests, copied, and compared after each phase."""

    def __init__(self, rig: Rig, batch: list[ScheduledRequest]) -> None:
        bs = rig.block_size
        self.owners: list[tuple[int, int, int]] = []  # (request, position, block) per slot
        slots: list[int] = []
        for b in batch:
            for p in range(b.start_pos):
                block = b.blocks[p // bs]
                slots.append(block * bs + p % bs)
                self.owners.append((b.rid, p, block))
        self.index = torch.tensor(slots, dtype=torch.int64, device=rig.config.device)
        self.tensors: list[tuple[int, torch.Tensor]] = []
        for layer, (k_cache, v_cache) in enumerate(rig.kv_caches):
            for cache in (k_cache,) if v_cache is k_cache else (k_cache, v_cache):
                rows = cache.view(cache.shape[0] * cache.shape[1], -1)
                self.tensors.append((layer, rows.view(_INT[cache.element_size()])))
        self.saved = [self._now(t) for _, t in self.tensors]

    def _now(self, rows: torch.Tensor) -> torch.Tensor:
        return rows.index_select(0, self.index)

    def changed(self) -> list[Overwrite]:
        """Slots that differ from the copy; the copy then takes them, so each phase reports
        only its own writes."""
        out = []
        if not self.owners:
            return out
        for i, (layer, rows) in enumerate(self.tensors):
            now = self._now(rows)
            diff = (now != self.saved[i]).any(dim=1)
            if bool(diff.any()):
                first = int(diff.nonzero()[0, 0])
                rid, position, block = self.owners[first]
                out.append(Overwrite(rid, layer, position, block, int(diff.sum())))
                self.saved[i] = now
        return out
