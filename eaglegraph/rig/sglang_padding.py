"""SGLang's padded draft-decode replay (research sglang.md): what the padded rows hold.

A FULL draft-decode graph captured for bs requests replays a smaller batch raw_bs < bs with
rows [raw_bs:bs] padded: seq_len 1 and one token each, req_pool_indices zero (the reserved
block-table row), and positions zeroed only with `reset_positions_on_padded_replay` (hazard
``stale-padded-positions``).
"""

from __future__ import annotations

from eaglegraph.kernels.block_table import compute_slot_mappings_padded_rows
from eaglegraph.kernels.guard import Guard
from eaglegraph.rig.step_buffers import StepBuffers, h2d

# seq_len SGLang gives each padded row
PADDED_SEQ_LEN = 1


def pad_draft_rows(bufs: StepBuffers, rb: int, r_pad: int, reset_positions: bool) -> None:
    """Fill rows [rb:r_pad] as SGLang's replay does before the decode steps."""
    if r_pad == rb:
        return
    bufs.eagle_seq_lens[rb:r_pad].fill_(PADDED_SEQ_LEN)
    bufs.block_table[rb:r_pad].zero_()  # req_pool_indices ZERO: padded rows → reserved row
    h2d(bufs.eagle_qsl[: r_pad + 1], list(range(r_pad + 1)))
    if reset_positions:
        bufs.decode_positions[rb:r_pad].zero_()


def padded_slot_mapping(
    bufs: StepBuffers, r_pad: int, block_size: int, num_blocks: int, guard: Guard | None
) -> None:
    """Slots for every row up to r_pad, padded ones included (one token per row)."""
    compute_slot_mappings_padded_rows(
        bufs.block_table, bufs.decode_positions, bufs.slot_mapping, r_pad, block_size,
        num_blocks, guard,
    )  # fmt: skip
