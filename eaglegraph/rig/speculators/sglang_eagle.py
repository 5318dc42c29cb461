"""SGLang's EAGLE worker: EAGLE drafting, with SGLang's own padded draft-decode replay.

A FULL draft-decode graph captured for bs requests replays a smaller batch raw_bs < bs with
rows [raw_bs:bs] padded as SGLang pads them (`rig.sglang_padding`): seq_len 1, one token and
req_pool_index 0 each, positions zeroed only where the release resets them (hazard
`stale-padded-positions`), and a slot computed for every row from its own positions buffer —
padded rows write the reserved block's slots, by design. Everything else is the EAGLE
speculator's.
"""

from __future__ import annotations

from eaglegraph.rig.descriptors import PaddedBatch
from eaglegraph.rig.sglang_padding import PADDED_SEQ_LEN, pad_draft_rows, padded_slot_mapping
from eaglegraph.rig.speculators.base import DraftFacts
from eaglegraph.rig.speculators.eagle import EagleSpeculator


class SGLangEagleSpeculator(EagleSpeculator):
    facts = EagleSpeculator.facts & ~DraftFacts.DECODE_SLOTS_BY_QUERY

    def _pad_decode_rows(self, batch: PaddedBatch) -> int:
        if not batch.full:
            return super()._pad_decode_rows(batch)
        p = self.parts
        reset = p.behavior.reset_positions_on_padded_replay
        pad_draft_rows(p.bufs, batch.real_reqs, batch.num_reqs, reset)
        return PADDED_SEQ_LEN

    def _decode_slots(self, batch: PaddedBatch) -> None:
        if not batch.full:
            return super()._decode_slots(batch)
        p = self.parts
        padded_slot_mapping(
            p.bufs, batch.num_reqs, p.config.block_size, p.allocator.num_blocks,
            p.guard(positions="sglang.draft_positions", block_table="block_table"),
        )  # fmt: skip


SPECULATOR = SGLangEagleSpeculator
