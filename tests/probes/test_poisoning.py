"""What the probe poisons: per-slot state (extent "all") row by row, the whole null block
under vLLM, and committed KV slots it copies to see overwrites."""

from __future__ import annotations

import torch

from eaglegraph.probes.poisoning import null_block_regions, padding_regions, per_slot_rows
from eaglegraph.rig.buffers import BufferRegistry, StepCounts


def _registry() -> BufferRegistry:
    reg = BufferRegistry()
    reg.register("state.block_table", "target", torch.zeros(4, 8, dtype=torch.int32), "all")
    reg.register("mtp.cached_ids", "draft_prefill", torch.zeros(4, 2, dtype=torch.int64), "all")
    reg.register(
        "eagle.current_draft_step", "draft_decode", torch.zeros(1, dtype=torch.int64), "all"
    )
    reg.register("target.seq_lens", "target", torch.zeros(4, dtype=torch.int32), "num_reqs")
    return reg


def test_per_slot_state_is_poisoned_where_no_running_request_owns_it() -> None:
    reg = _registry()
    owned = per_slot_rows(list(reg), 4, {0, 2})
    assert set(owned) == {"state.block_table", "mtp.cached_ids"}  # not the step counter
    counts = {p: StepCounts(2, 2) for p in ("target", "draft_prefill", "draft_decode")}
    regions = padding_regions(list(reg), counts, "A", owned)
    rows = {(r.buffer.name, r.first_row, r.rows) for r in regions}
    assert rows == {
        ("state.block_table", 1, 1), ("state.block_table", 3, 1),
        ("mtp.cached_ids", 1, 1), ("mtp.cached_ids", 3, 1),
        ("target.seq_lens", 2, 2),
    }  # fmt: skip
    first = next(r for r in regions if r.buffer.name == "state.block_table")
    assert (first.region.start, first.region.end) == (8, 16)


def test_null_block_canary_spares_only_sglang_pad_slots() -> None:
    k = torch.zeros(3, 16, 2, 4)
    caches = [(k, torch.zeros_like(k))]
    vllm = null_block_regions(caches, 0)
    assert [(c.region.start, c.region.end, c.null_block) for c in vllm] == [(0, 128, True)] * 2
    sglang = null_block_regions(caches, 3)
    assert [(c.region.start, c.region.end) for c in sglang] == [(24, 128)] * 2
    latent = null_block_regions([(k, k)], 0)
    assert len(latent) == 1  # MLA: one cache tensor, one canary
