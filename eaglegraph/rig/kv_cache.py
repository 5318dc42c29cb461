"""Paged KV cache: per-layer block tensors and a host-side block allocator.

Block 0 is the reserved null block (vLLM and SGLang both keep one): padded rows of graphs point
there, so it is never a canary. Every other block is owned by at most one request; blocks
owned by nobody are what the probe poisons as canaries.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from eaglegraph.errors import BadInput

NULL_BLOCK = 0


@dataclass
class KVLayout:
    """One layer's cache. `latent`: an MLA layer's single cache of `[latent | rope]` rows,
    used as both key and value (the value is its latent prefix)."""

    num_blocks: int
    block_size: int
    num_kv_heads: int
    head_dim: int
    dtype: torch.dtype
    latent: bool = False

    def bytes_per_layer(self) -> int:
        elem = torch.empty((), dtype=self.dtype).element_size()
        copies = 1 if self.latent else 2
        return copies * self.num_blocks * self.block_size * self.num_kv_heads * self.head_dim * elem


def allocate_kv_caches(
    layouts: list[KVLayout], device: torch.device
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(k, v) per layer; a latent (MLA) layer's pair is one tensor twice."""
    caches = []
    for lay in layouts:
        shape = (lay.num_blocks, lay.block_size, lay.num_kv_heads, lay.head_dim)
        k = torch.zeros(shape, dtype=lay.dtype, device=device)
        caches.append((k, k if lay.latent else torch.zeros(shape, dtype=lay.dtype, device=device)))
    return caches


class BlockAllocator:
    """Free-list allocator; requests grow their block list as their sequences grow."""

    def __init__(self, num_blocks: int, block_size: int, max_blocks_per_req: int) -> None:
        if num_blocks < 2:
            raise BadInput("the KV cache needs at least 2 blocks (one is the null block)")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.max_blocks_per_req = max_blocks_per_req
        self._free = list(range(num_blocks - 1, NULL_BLOCK, -1))
        self.owner: dict[int, int] = {}
        # prefix-cache hits: the requests beyond the first that hold a block (vLLM's
        # KVCacheBlock.ref_cnt - 1); a block returns to the free list only at zero
        self.sharers: dict[int, int] = {}

    def blocks_for(self, num_tokens: int) -> int:
        return -(-num_tokens // self.block_size)

    def ensure(self, rid: int, blocks: list[int], num_tokens: int) -> list[int]:
        """Grow `blocks` to hold `num_tokens` tokens; returns the new blocks."""
        need = self.blocks_for(num_tokens)
        if need > self.max_blocks_per_req:
            raise BadInput(
                f"request needs {need} blocks but max_model_len allows "
                f"{self.max_blocks_per_req}; raise --max-model-len"
            )
        new = []
        while len(blocks) < need:
            if not self._free:
                raise BadInput("the KV cache is full; lower the workload or raise --num-blocks")
            block = self._free.pop()
            self.owner[block] = rid
            blocks.append(block)
            new.append(block)
        return new

    def share(self, blocks: list[int]) -> None:
        """One more request holds `blocks` (a prefix-cache hit on full blocks)."""
        for block in blocks:
            self.sharers[block] = self.sharers.get(block, 0) + 1

    def release(self, blocks: list[int]) -> None:
        for block in blocks:
            if self.sharers.get(block, 0):  # another request still reads it
                self.sharers[block] -= 1
                continue
            self.owner.pop(block, None)
            self._free.append(block)
        blocks.clear()

    def unowned_blocks(self) -> list[int]:
        return sorted(set(range(1, self.num_blocks)) - set(self.owner))
