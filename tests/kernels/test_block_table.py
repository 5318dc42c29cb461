"""Block-table gather and slot mappings against per-token Python references."""

from __future__ import annotations

import torch

from eaglegraph.kernels.block_table import (
    compute_slot_mappings,
    compute_slot_mappings_padded_rows,
    gather_block_tables,
)

from .reference import randint, ref_slots


def check_gather_block_tables(device: torch.device, gen: torch.Generator) -> None:
    S, R, n_cols, num_reqs, num_reqs_padded = 7, 6, 300, 3, 5  # n_cols > one column block
    src = randint(1, 1000, (S, n_cols), gen, torch.int32, device)
    idx_mapping = torch.tensor([5, 0, 3, 6, 6, 6], dtype=torch.int32, device=device)  # stale tail
    dst = randint(1, 1000, (R, n_cols), gen, torch.int32, device)
    before = dst.clone()
    gather_block_tables(src, idx_mapping, dst, num_reqs, num_reqs_padded)
    assert torch.equal(dst[:num_reqs], src[idx_mapping[:num_reqs].long()])
    assert torch.all(dst[num_reqs:num_reqs_padded] == 0)
    assert torch.equal(dst[num_reqs_padded:], before[num_reqs_padded:])


def test_gather_block_tables(device: torch.device, gen: torch.Generator) -> None:
    check_gather_block_tables(device, gen)


def check_compute_slot_mappings(device: torch.device, gen: torch.Generator) -> None:
    bs, num_blocks, R, n_cols = 4, 64, 5, 32
    num_reqs, pad_until, T = 3, 150, 160
    q_lens = [3, 130, 2]  # one request spans several token blocks
    bt = randint(0, num_blocks, (R, n_cols), gen, torch.int32, "cpu")
    qsl = [0]
    for n in q_lens:
        qsl.append(qsl[-1] + n)
    qsl += [150, 151, 155]  # stale
    positions = randint(0, n_cols * bs, (T,), gen, torch.int64, "cpu")
    slot_mapping = randint(0, 99, (T,), gen, torch.int64, device)
    before = slot_mapping.clone()
    compute_slot_mappings(
        bt.to(device),
        torch.tensor(qsl, dtype=torch.int32, device=device),
        positions.to(device),
        slot_mapping,
        num_reqs,
        pad_until,
        bs,
        num_blocks,
    )
    expected = before.cpu().clone()
    for r in range(num_reqs):
        toks = list(range(qsl[r], qsl[r + 1]))
        expected[toks] = torch.tensor(ref_slots(bt, r, positions[toks].tolist(), bs))
    expected[qsl[num_reqs] : pad_until] = -1
    assert torch.equal(slot_mapping.cpu(), expected)


def test_compute_slot_mappings(device: torch.device, gen: torch.Generator) -> None:
    check_compute_slot_mappings(device, gen)


def test_compute_slot_mappings_no_requests_pads_everything(
    device: torch.device, gen: torch.Generator
) -> None:
    bt = randint(0, 8, (2, 4), gen, torch.int32, device)
    slot_mapping = randint(0, 99, (10,), gen, torch.int64, device)
    qsl = torch.tensor([0, 5, 9], dtype=torch.int32, device=device)
    positions = randint(0, 16, (10,), gen, torch.int64, device)
    compute_slot_mappings(bt, qsl, positions, slot_mapping, 0, 8, 4, 8)
    assert torch.all(slot_mapping[:8] == -1) and torch.all(slot_mapping[8:] >= 0)


def test_compute_slot_mappings_padded_rows(device: torch.device, gen: torch.Generator) -> None:
    bs, num_blocks, n_cols, num_rows = 4, 30, 5, 7
    bt = randint(0, num_blocks, (9, n_cols), gen, torch.int32, "cpu")
    positions = randint(0, n_cols * bs, (9,), gen, torch.int64, "cpu")
    slot_mapping = torch.full((9,), 5, dtype=torch.int64, device=device)
    compute_slot_mappings_padded_rows(
        bt.to(device), positions.to(device), slot_mapping, num_rows, bs, num_blocks
    )
    expected = [ref_slots(bt, i, [int(positions[i])], bs)[0] for i in range(num_rows)]
    assert slot_mapping[:num_rows].tolist() == expected
    assert slot_mapping[num_rows:].tolist() == [5, 5]
