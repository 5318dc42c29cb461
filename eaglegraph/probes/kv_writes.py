"""KV a step may not write: every running request's committed prefix, in every layer.

Positions [0, start) of a request were written by earlier steps and are final; no row of this
step — a real one or a padded one — may write them. A padded row whose slot points into a real
request's blocks, or a real row one request off, overwrites them with values that are finite
and plausible: no sentinel, no guard and no NaN sees that. The probe copies those slots before
the step (one gather per cache tensor) and compares them bit for bit after each phase, so the
first phase that wrote them is named, with the request, layer and position.

One legal exception: multi-module MTP (the "window" speculator) re-prefills up to K-1
positions before each request's window in its own KV layers, because the deeper modules
computed them from drafts that may just have been rejected (vLLM's multi-module speculator
does the same); those slots of the draft layers are not final.
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
        reprefill = rig.speculator.reprefilled_positions()
        target_layers = rig.models.target.num_layers
        # (request, position, block) per slot; draft layers: the re-prefillable tail left out
        self.owners: list[tuple[int, int, int]] = []
        draft_owners: list[tuple[int, int, int]] = []
        for b in batch:
            for p in range(b.start_pos):
                self.owners.append((b.rid, p, b.blocks[p // bs]))
                if p < b.start_pos - reprefill:
                    draft_owners.append(self.owners[-1])
        self.tensors: list[tuple[int, torch.Tensor]] = []
        self.layer_owners: list[list[tuple[int, int, int]]] = []
        self.indexes: list[torch.Tensor] = []
        index = {
            id(o): torch.tensor([blk * bs + p % bs for _, p, blk in o], dtype=torch.int64,
                                device=rig.config.device)
            for o in (self.owners, draft_owners)
        }  # fmt: skip
        for layer, (k_cache, v_cache) in enumerate(rig.kv_caches):
            owners = self.owners if layer < target_layers else draft_owners
            for cache in (k_cache,) if v_cache is k_cache else (k_cache, v_cache):
                rows = cache.view(cache.shape[0] * cache.shape[1], -1)
                self.tensors.append((layer, rows.view(_INT[cache.element_size()])))
                self.layer_owners.append(owners)
                self.indexes.append(index[id(owners)])
        self.saved = [self._now(i) for i in range(len(self.tensors))]

    def _now(self, i: int) -> torch.Tensor:
        return self.tensors[i][1].index_select(0, self.indexes[i])

    def changed(self) -> list[Overwrite]:
        """Slots that differ from the copy; the copy then takes them, so each phase reports
        only its own writes."""
        out: list[Overwrite] = []
        if not self.owners:
            return out
        for i, (layer, _) in enumerate(self.tensors):
            now = self._now(i)
            diff = (now != self.saved[i]).any(dim=1)
            if bool(diff.any()):
                first = int(diff.nonzero()[0, 0])
                rid, position, block = self.layer_owners[i][first]
                out.append(Overwrite(rid, layer, position, block, int(diff.sum())))
                self.saved[i] = now
        return out
