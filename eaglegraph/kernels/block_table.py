"""Per-step block tables and slot mappings (vLLM MRV2 ``BlockTables``, SGLang padded rows).

``gather_block_tables`` copies each scheduled request's row from the persistent per-request
table into the step's input table and zeroes the rows of padded requests;
``compute_slot_mappings`` turns positions into cache slots and pads the tail with
``PAD_SLOT_ID`` so ``write_kv`` skips padded tokens. The padded-rows variant computes a slot
for every row of a padded batch, as SGLang does, which is why stale padded ``positions``
crashed it (hazard ``stale-padded-positions``).

Guards log bad indices and fall back to the padding value (a zero row, slot -1).
"""

from __future__ import annotations

import torch

from eaglegraph.kernels._triton import (
    by_backend,
    check_device,
    pow2_block,
    program_rows,
    reduce_max,
    row_extents,
    tl,
    triton,
)
from eaglegraph.kernels.guard import Guard, check_bounds_pair, guard_args, log_violation
from eaglegraph.kernels.launch import launch_rows, strides

__all__ = [
    "compute_slot_mappings",
    "compute_slot_mappings_padded_rows",
    "gather_block_tables",
]

_TOKEN_BLOCK = 128
_COL_BLOCK = 256
# Under the interpreter every executed operation costs the same whatever its width.
_TOKEN_BLOCK_INTERPRETED = 1024
_COL_BLOCK_INTERPRETED = 4096


@triton.jit
def _gather_block_tables_kernel(
    src_ptr,
    idx_mapping_ptr,
    dst_ptr,
    src_stride,
    dst_stride,
    n_cols,
    num_src_rows,
    num_reqs,
    num_rows,
    log,
    idx_mapping_id,
    BLOCK_R: tl.constexpr,
    BLOCK: tl.constexpr,
    GUARD: tl.constexpr,
):
    i, in_batch = program_rows(num_rows, BLOCK_R)
    is_req = i < num_reqs
    # Padded rows read nothing: their source index is never loaded.
    src_row = tl.load(idx_mapping_ptr + i, mask=is_req, other=0)
    copy = is_req
    if GUARD:
        bad = is_req & ((src_row < 0) | (src_row >= num_src_rows))
        if reduce_max(bad.to(tl.int32), 0) > 0:  # no logger call in the common, valid case
            log_violation(log, idx_mapping_id, i, src_row, bad)
        copy = copy & ~bad
    n_copy = tl.where(copy, n_cols, 0)[:, None]
    src = src_ptr + src_row.to(tl.int64)[:, None] * src_stride
    dst = dst_ptr + i.to(tl.int64)[:, None] * dst_stride
    for j0 in range(0, n_cols, BLOCK):
        j = j0 + tl.arange(0, BLOCK)[None, :]
        vals = tl.load(src + j, mask=j < n_copy, other=0)
        tl.store(dst + j, vals, mask=in_batch[:, None] & (j < n_cols))


def gather_block_tables(
    src: torch.Tensor,
    idx_mapping: torch.Tensor,
    dst: torch.Tensor,
    num_reqs: int,
    num_reqs_padded: int,
    guard: Guard | None = None,
) -> None:
    """``dst[i] = src[idx_mapping[i]]`` for ``i < num_reqs``; ``dst[num_reqs:num_reqs_padded] = 0``.

    ``src`` ``[S, max_blocks]`` and ``dst`` ``[R, max_blocks]`` are int32, row-major.
    Guard role ``"idx_mapping"``: an index outside ``[0, S)`` is logged (row = batch index)
    and that ``dst`` row is zeroed instead.
    """
    check_device(src, idx_mapping, dst)
    if src.dim() != 2 or dst.dim() != 2 or src.shape[1] != dst.shape[1]:
        raise ValueError(f"src {tuple(src.shape)} and dst {tuple(dst.shape)} must share columns")
    if src.stride(1) != 1 or dst.stride(1) != 1:
        raise ValueError("block tables must be row-major")
    if not 0 <= num_reqs <= num_reqs_padded <= dst.shape[0] or idx_mapping.numel() < num_reqs:
        raise ValueError(f"need 0 <= num_reqs {num_reqs} <= num_reqs_padded {num_reqs_padded}")
    g = guard_args(guard, "gather_block_tables", ("idx_mapping",), idx_mapping)
    n_cols = dst.shape[1]
    block = pow2_block(n_cols, _COL_BLOCK, _COL_BLOCK_INTERPRETED)
    launch_rows(
        _gather_block_tables_kernel,
        num_reqs_padded,
        block,
        src,
        idx_mapping,
        dst,
        *strides(src, dst, dims=1),
        n_cols,
        src.shape[0],
        num_reqs,
        num_reqs_padded,
        guard=g,
        BLOCK=block,
    )


@triton.jit
def _slot_mappings_kernel(
    block_table_ptr,
    qsl_ptr,  # unused by PADDED_ROWS
    positions_ptr,
    slot_mapping_ptr,
    bt_stride,
    n_cols,
    num_blocks,
    num_reqs,  # PADDED_ROWS: the rows of the padded batch
    pad_until,
    max_tokens,
    log,
    qsl_id,
    positions_id,
    block_table_id,
    PAGE_SIZE: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK: tl.constexpr,  # PADDED_ROWS: 1
    PADDED_ROWS: tl.constexpr,  # one token per row, token i of block-table row i
    GUARD: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if (not PADDED_ROWS) and (pid == tl.num_programs(0) - 1):
        # Pad program: slot_mapping[qsl[num_reqs]:pad_until] = PAD_SLOT_ID.
        end = tl.load(qsl_ptr + num_reqs)
        if GUARD:
            bad = ((end < 0) | (end > max_tokens)) & (num_reqs == 0)
            if bad:
                log_violation(log, qsl_id, num_reqs, end, bad)
            end = tl.where((end < 0) | (end > max_tokens), pad_until, end)
        for t0 in range(end, pad_until, BLOCK):
            t = t0 + offs
            tl.store(slot_mapping_ptr + t, tl.full([BLOCK], -1, tl.int64), mask=t < pad_until)
    else:
        # Requests [pid * BLOCK_R, (pid + 1) * BLOCK_R), one row of the tile each.
        r, r_ok = program_rows(num_reqs, BLOCK_R)
        if PADDED_ROWS:
            q_start = r
            q_end = tl.where(r_ok, r + 1, r)
        else:
            q_start, q_end = row_extents(qsl_ptr, r, r_ok)
        if GUARD and not PADDED_ROWS:
            bad_start, bad_end = check_bounds_pair(q_start, q_end, max_tokens)
            if reduce_max((bad_start | bad_end).to(tl.int32), 0) > 0:
                log_violation(log, qsl_id, r, q_start, (r == 0) & bad_start)
                log_violation(log, qsl_id, r + 1, q_end, bad_end)
            q_end = tl.where(bad_start | bad_end, q_start, q_end)
        n = (q_end - q_start)[:, None]
        for t0 in range(0, reduce_max(q_end - q_start, 0), BLOCK):
            j = t0 + offs[None, :]
            t = q_start[:, None] + j
            t_ok = j < n
            # Slot of token t of block-table row r; -1 where not valid.
            pos = tl.load(positions_ptr + t, mask=t_ok, other=0).to(tl.int64)
            col = pos // PAGE_SIZE
            ok = t_ok
            if GUARD:
                bad_pos = t_ok & ((pos < 0) | (pos >= n_cols * PAGE_SIZE))
                if reduce_max(bad_pos.to(tl.int32), None) > 0:  # no logger call when all valid
                    log_violation(log, positions_id, t, pos, bad_pos)
                ok = ok & ~bad_pos
            bt_row = r.to(tl.int64)[:, None]
            block = tl.load(block_table_ptr + bt_row * bt_stride + col, mask=ok, other=0)
            block = block.to(tl.int64)
            if GUARD:
                bad_block = ok & ((block < 0) | (block >= num_blocks))
                if reduce_max(bad_block.to(tl.int32), None) > 0:
                    log_violation(log, block_table_id, bt_row * n_cols + col, block, bad_block)
                ok = ok & ~bad_block
            slot = tl.where(ok, block * PAGE_SIZE + pos % PAGE_SIZE, -1)
            tl.store(slot_mapping_ptr + t, slot, mask=t_ok)


def compute_slot_mappings(
    block_table: torch.Tensor,
    query_start_loc: torch.Tensor,
    positions: torch.Tensor,
    slot_mapping: torch.Tensor,
    num_reqs: int,
    pad_until: int,
    block_size: int,
    num_blocks: int,
    guard: Guard | None = None,
) -> None:
    """Slots for every scheduled token, ``PAD_SLOT_ID`` from ``qsl[num_reqs]`` to ``pad_until``.

    For request ``r`` and token ``t`` in ``[qsl[r], qsl[r+1])``:
    ``slot = block_table[r, pos // bs] * bs + pos % bs`` with ``pos = positions[t]``; one
    extra program pads (vLLM ``_compute_slot_mappings_kernel``). ``num_blocks`` bounds the
    guard's block-id check. Guard roles: ``"query_start_loc"`` (monotone, within the
    slot/position buffers; a bad request is skipped), ``"positions"``
    (``0 <= pos < n_cols * bs``), ``"block_table"`` (id in ``[0, num_blocks)``; row =
    ``r * n_cols + pos // bs``); a bad token's slot becomes -1.
    """
    check_device(block_table, query_start_loc, positions, slot_mapping)
    _check_table(block_table, num_reqs)
    if query_start_loc.numel() < num_reqs + 1 or pad_until > slot_mapping.numel():
        raise ValueError("query_start_loc needs num_reqs + 1 entries; pad_until <= slot count")
    max_tokens = min(slot_mapping.numel(), positions.numel())
    g = guard_args(
        guard,
        "compute_slot_mappings",
        ("query_start_loc", "positions", "block_table"),
        query_start_loc,
    )
    # One program per BLOCK_R requests (all of them under the interpreter), then the pad one.
    block = by_backend(_TOKEN_BLOCK, _TOKEN_BLOCK_INTERPRETED)
    launch_rows(
        _slot_mappings_kernel,
        num_reqs,
        block,
        block_table,
        query_start_loc,
        positions,
        slot_mapping,
        block_table.stride(0),
        block_table.shape[1],
        num_blocks,
        num_reqs,
        pad_until,
        max_tokens,
        guard=g,
        extra_programs=1,
        PAGE_SIZE=block_size,
        BLOCK=block,
        PADDED_ROWS=False,
    )


def compute_slot_mappings_padded_rows(
    block_table: torch.Tensor,
    positions: torch.Tensor,
    slot_mapping: torch.Tensor,
    num_rows: int,
    block_size: int,
    num_blocks: int,
    guard: Guard | None = None,
) -> None:
    """One token per row for every row of a padded batch (SGLang-style replay).

    ``slot_mapping[i] = block_table[i, pos // bs] * bs + pos % bs`` with ``pos = positions[i]`` for
    ``i < num_rows``, padded rows included — so a stale padded position turns into an out-of-range
    block-table read (hazard ``stale-padded-positions``). Guard roles ``"positions"`` and
    ``"block_table"`` as in :func:`compute_slot_mappings`.
    """
    check_device(block_table, positions, slot_mapping)
    _check_table(block_table, num_rows)
    if num_rows > min(positions.numel(), slot_mapping.numel()):
        raise ValueError(f"num_rows {num_rows} exceeds positions/slot_mapping")
    g = guard_args(
        guard, "compute_slot_mappings_padded_rows", ("", "positions", "block_table"), positions
    )
    launch_rows(
        _slot_mappings_kernel,
        num_rows,
        1,
        block_table,
        positions,  # no query_start_loc: never read
        positions,
        slot_mapping,
        block_table.stride(0),
        block_table.shape[1],
        num_blocks,
        num_rows,
        num_rows,
        num_rows,
        guard=g,
        gpu_rows=_TOKEN_BLOCK,
        PAGE_SIZE=block_size,
        BLOCK=1,
        PADDED_ROWS=True,
    )


def _check_table(block_table: torch.Tensor, rows: int) -> None:
    if block_table.dim() != 2 or block_table.shape[0] < rows:
        raise ValueError(f"block_table {tuple(block_table.shape)} needs >= {rows} rows")
    if block_table.stride(1) != 1:
        raise ValueError("block_table must be row-major")
