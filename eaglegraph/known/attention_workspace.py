"""Scratch that an engine's attention kernel allocates per call, and so inside a captured graph.

vLLM's FlashAttention backend on Hopper runs FlashAttention 3 with an ahead-of-time scheduler
(`get_flash_attn_version() == 3`, SM9x). When the cudagraph mode has FULL graphs, its metadata
builder caps the split-KV count at `attention_config.flash_attn_max_num_splits_for_cuda_graph`
(32) for every batch of at most `max_cudagraph_capture_size` tokens "so that large enough
intermediate buffers are pre-allocated during capture" (`FlashAttentionMetadataBuilder.build`).
FA3's `mha_fwd` (vllm-project/flash-attention `hopper/flash_api.cpp`) then allocates, on every
call, `softmax_lse [heads, tokens]` and, with more than one split, `out_accum [splits, heads,
tokens, head_dim_v]` and `softmax_lse_accum [splits, heads, tokens]`, all fp32; they die when
the call returns. It turns splitting off for batches of more than 992 requests
(PREPARE_VARLEN_MAX_BATCHES_1CTA). Inside a FULL graph these come from the graph's pool: for
Llama-3.1-8B at 498 tokens, 32 × 32 × 498 × 128 × 4 B = 249 MiB per call, the largest block
in the pool, which is what lets a shared pool absorb a draft's full-vocabulary logits.
The same rule holds from vLLM 0.20 to 0.33. Not modelled: FA2 (SM8x: no split cap), FlashMLA
and the MLA backends, FlashInfer (its workspace is one persistent buffer outside the pools),
and SGLang (its FA3 backend leaves num_splits to FA3's heuristic).
"""

from __future__ import annotations

from dataclasses import dataclass

SOURCE = (
    "vllm/v1/attention/backends/flash_attn.py::FlashAttentionMetadataBuilder.build "
    "(max_num_splits under FULL graphs); vllm/config/attention.py "
    "(flash_attn_max_num_splits_for_cuda_graph = 32); vllm-project/flash-attention "
    "hopper/flash_api.cpp::mha_fwd (softmax_lse, out_accum, softmax_lse_accum)"
)
MAX_SPLITS_FOR_CUDA_GRAPH = 32
MAX_SPLIT_BATCH = 992  # FA3 disables split-KV for larger varlen batches


@dataclass(frozen=True)
class SplitKvScratch:
    """FA3's per-call fp32 scratch as vLLM configures it for one plan."""

    max_splits: int  # the builder's cap when FULL graphs exist, else 0 (FA3's heuristic)
    max_tokens: int  # the largest capture size: bigger batches get no cap
    source: str = SOURCE

    def splits(self, num_reqs: int, num_tokens: int) -> int:
        """The split count a batch's metadata carries (0: FA3 decides, outside every graph)."""
        if self.max_splits <= 1 or num_tokens > self.max_tokens or num_reqs > MAX_SPLIT_BATCH:
            return 0
        return self.max_splits

    @staticmethod
    def shapes(
        splits: int, num_heads: int, num_tokens: int, head_dim_v: int
    ) -> list[tuple[int, ...]]:
        """The fp32 tensors one call allocates, in FA3's order."""
        out: list[tuple[int, ...]] = [(num_heads, num_tokens)]
        if splits > 1:
            out += [(splits, num_heads, num_tokens, head_dim_v), (splits, num_heads, num_tokens)]
        return out


def split_kv_scratch(
    framework: str,
    attention_backend: str,
    sm_major: int,
    has_full_graphs: bool,
    max_capture_size: int,
) -> SplitKvScratch | None:
    """The scratch model for a plan, or None where the engine's kernel is not FA3."""
    if framework != "vllm" or attention_backend != "flash_attn" or sm_major != 9:
        return None
    cap = MAX_SPLITS_FOR_CUDA_GRAPH if has_full_graphs else 0
    return SplitKvScratch(cap, max_capture_size)
