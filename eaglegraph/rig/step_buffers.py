"""The step's persistent buffers: every tensor a graph may record, each registered with its
owning phase and valid extent, in vLLM MRV2's layout (research vllm-mrv2.md §3.1).

Registration order fixes the buffer ids the guard log carries, so it never changes.
"""

from __future__ import annotations

import numpy as np
import torch

from eaglegraph.rig.buffers import BufferRegistry


def h2d(dst: torch.Tensor, values: list[int] | np.ndarray) -> None:
    """Host values into a persistent buffer (asynchronously on CUDA, as prepare_inputs)."""
    src = torch.as_tensor(np.asarray(values), dtype=dst.dtype)
    dst.copy_(src, non_blocking=dst.device.type == "cuda")


class StepBuffers:
    """Target inputs, block tables, rejection sampling and the speculator's private state."""

    def __init__(
        self,
        reg: BufferRegistry,
        device: torch.device,
        *,
        max_num_seqs: int,
        max_tokens: int,
        num_speculative_tokens: int,
        max_blocks: int,
        target_hidden_size: int,
        draft_hidden_size: int,
        aux_width: int,
        dtype: torch.dtype,
        framework: str,
    ) -> None:
        r, t, k, mb = max_num_seqs, max_tokens, num_speculative_tokens, max_blocks
        i32, i64 = torch.int32, torch.int64

        def buf(
            name: str, phase: str, shape: tuple[int, ...], dtype: torch.dtype, extent: str
        ) -> torch.Tensor:
            return reg.register(name, phase, torch.zeros(shape, dtype=dtype, device=device), extent)

        # target InputBuffers and the shared BlockTables
        self.input_ids = buf("target.input_ids", "target", (t,), i32, "num_tokens")
        self.positions = buf("target.positions", "target", (t,), i64, "num_tokens")
        self.query_start_loc = buf("target.query_start_loc", "target", (r + 1,), i32, "num_reqs+1")
        self.seq_lens = buf("target.seq_lens", "target", (r,), i32, "num_reqs")
        self.idx_mapping = buf("target.idx_mapping", "target", (r,), i32, "num_reqs")
        self.state_block_table = buf("state.block_table", "target", (r, mb), i32, "all")
        self.block_table = buf("block_table", "target", (r, mb), i32, "num_reqs")
        self.slot_mapping = buf("slot_mapping", "target", (t,), i64, "num_tokens")
        self.target_hidden = buf(
            "target.hidden", "target", (t, target_hidden_size), dtype, "num_tokens"
        )
        self.target_aux = (
            buf("target.aux", "target", (t, aux_width), dtype, "num_tokens") if aux_width else None
        )
        # rejection sampling (eager, between target and draft)
        self.target_argmax = buf("verify.target_argmax", "target", (t,), i64, "num_tokens")
        self.verify_drafts = buf("verify.drafts", "target", (r, max(k, 1)), i64, "num_reqs")
        self.num_drafts = buf("verify.num_drafts", "target", (r,), i32, "num_reqs")
        self.num_accepted = buf("verify.num_accepted", "target", (r,), i32, "num_reqs")
        self.num_rejected = buf("verify.num_rejected", "target", (r,), i32, "num_reqs")
        self.next_tokens = buf("verify.next_tokens", "target", (r,), i64, "num_reqs")
        self.accepted_tokens = buf("verify.accepted_tokens", "target", (r, k + 1), i64, "num_reqs")
        # the speculator's private InputBuffers and EAGLE state (research §3.1)
        self.eagle_input_ids = buf("eagle.input_ids", "draft_prefill", (t,), i32, "num_tokens")
        self.eagle_positions = buf("eagle.positions", "draft_prefill", (t,), i64, "num_tokens")
        self.eagle_qsl = buf("eagle.query_start_loc", "draft_prefill", (r + 1,), i32, "num_reqs+1")
        self.eagle_seq_lens = buf("eagle.seq_lens", "draft_prefill", (r,), i32, "num_reqs")
        self.eagle_hidden = buf(
            "eagle.hidden", "draft_prefill", (t, draft_hidden_size), dtype, "num_tokens"
        )
        self.last_token_indices = buf(
            "eagle.last_token_indices", "draft_prefill", (r,), i64, "num_reqs"
        )
        self.draft_tokens = buf(
            "eagle.draft_tokens", "draft_prefill", (r, max(k, 1)), i64, "num_reqs"
        )
        self.current_draft_step = buf("eagle.current_draft_step", "draft_decode", (1,), i64, "all")
        # SGLang's draft-decode graph runner has its own positions buffer; the padded rows
        # [raw_bs:bs] keep the last larger batch's values unless reset
        # (`reset_positions_on_padded_replay`)
        self.decode_positions = (
            buf("sglang.draft_positions", "draft_decode", (r,), i64, "num_reqs")
            if framework == "sglang"
            else self.eagle_positions
        )
