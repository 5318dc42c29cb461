"""Attention metadata in the two styles the probe cares about, and the paged-attention callback.

flash-attn style: metadata holds views of the caller's query_start_loc, seq_lens and block
table; kernels process only tokens up to query_start_loc[num_reqs], so padded tokens are never
read. FlashInfer style: the builder owns persistent CSR buffers (kv_indptr, kv_indices,
last_page_len), written only for [0, num_reqs]; its decode path takes the batch size from
num_tokens and assumes one token per request — which is why a PIECEWISE draft decode (tokens
padded, requests not) reads stale kv_indptr rows (hazard `piecewise-draft-decode`).

The callback (`AttentionRuntime`) is what models call at every attention layer: it writes the
layer's KV by slot mapping and runs the kernel for whatever metadata is current. It is also the
split point of segmented (PIECEWISE/BREAKABLE) graphs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

import torch

from eaglegraph.kernels.attention import (
    PagedMeta,
    block_table_meta,
    build_csr_page_indices,
    csr_decode_meta,
    csr_meta,
    default_scale,
    paged_attention,
)
from eaglegraph.kernels.guard import Guard, GuardLog
from eaglegraph.kernels.kv_cache import write_kv
from eaglegraph.kernels.mla import mla_attention
from eaglegraph.known.attention_workspace import SplitKvScratch
from eaglegraph.models.mla import absorbed_attention
from eaglegraph.rig.buffers import BufferRegistry


@dataclass
class BatchTensors:
    """The batch as flash-attn and Triton kernels read it: the part of the common metadata that
    their metadata passes on unchanged."""

    query_start_loc: torch.Tensor
    seq_lens: torch.Tensor
    block_table: torch.Tensor
    num_reqs: int
    num_tokens: int
    max_query_len: int

    def batch_tensors(self) -> dict[str, Any]:
        """These fields by name, to build another `BatchTensors` from this one."""
        return {f.name: getattr(self, f.name) for f in fields(BatchTensors)}


@dataclass
class CommonMetadata(BatchTensors):
    """What every builder starts from (vLLM's CommonAttentionMetadata, reduced)."""

    seq_lens_cpu: list[int]
    owner: str


@dataclass
class FlashAttnMetadata(BatchTensors):
    guard_ids: dict[str, int] = field(default_factory=dict)
    style: str = "flash_attn"
    # FA3's split-KV cap for this batch (known.attention_workspace); None: not FA3, no scratch
    fa3_splits: int | None = None

    @cached_property
    def paged(self) -> PagedMeta:
        """The kernels' view of the batch, checked once and read by every layer."""
        return block_table_meta(
            self.query_start_loc, self.seq_lens, self.block_table, self.num_reqs
        )


@dataclass
class FlashInferMetadata:
    qo_indptr: torch.Tensor
    kv_indptr: torch.Tensor
    kv_indices: torch.Tensor
    last_page_len: torch.Tensor
    num_reqs: int
    num_tokens: int
    max_query_len: int
    decode: bool
    guard_ids: dict[str, int] = field(default_factory=dict)
    style: str = "flashinfer"

    @cached_property
    def paged(self) -> PagedMeta:
        """The kernels' view of the batch, checked once and read by every layer: a decode is
        one row per (padded) token, the batch size FlashInfer's decode takes."""
        if self.decode:
            return csr_decode_meta(
                self.kv_indptr, self.kv_indices, self.last_page_len, self.num_tokens
            )
        return csr_meta(
            self.qo_indptr, self.kv_indptr, self.kv_indices, self.last_page_len, self.num_reqs
        )


Metadata = FlashAttnMetadata | FlashInferMetadata


class FlashAttnBuilder:
    """Holds no buffers of its own: a graph records the caller's buffers directly.

    `scratch` is FA3's per-call split-KV scratch as vLLM configures it for the plan: the
    builder stamps each batch's split cap on its metadata, as vLLM's builder does."""

    def __init__(
        self, registry: BufferRegistry, owner: str, scratch: SplitKvScratch | None = None
    ) -> None:
        self.registry = registry
        self.owner = owner
        self.scratch = scratch

    def build(self, common: CommonMetadata) -> FlashAttnMetadata:
        ids = self.registry.ids(
            query_start_loc=f"{common.owner}.query_start_loc",
            seq_lens=f"{common.owner}.seq_lens",
            block_table="block_table",
        )
        return FlashAttnMetadata(
            **common.batch_tensors(),
            guard_ids=ids,
            fa3_splits=(
                None
                if self.scratch is None
                else self.scratch.splits(common.num_reqs, common.num_tokens)
            ),
        )


class FlashInferBuilder:
    """Owns persistent CSR buffers; writes indptr only for [0, num_reqs] (as FlashInfer's does)."""

    def __init__(
        self,
        registry: BufferRegistry,
        owner: str,
        max_num_reqs: int,
        max_pages: int,
        block_size: int,
        device: torch.device,
        max_rows: int | None = None,
    ) -> None:
        """`max_rows`: the largest batch a decode plan may take (vLLM sizes its CUDA-graph
        decode wrappers up to (1+K)·max_num_seqs rows), so CSR buffers have room for it."""
        self.owner = owner
        rows = max(max_num_reqs, max_rows or 0)
        self.block_size = block_size
        phase = "target" if owner == "target" else "draft_decode"
        self.kv_indptr = registry.register(
            f"{owner}.kv_indptr",
            phase,
            torch.zeros(rows + 1, dtype=torch.int32, device=device),
            "num_reqs+1",
        )
        self.kv_indices = registry.register(
            f"{owner}.kv_indices",
            phase,
            torch.zeros(max_pages, dtype=torch.int32, device=device),
            "num_pages",
        )
        self.last_page_len = registry.register(
            f"{owner}.last_page_len",
            phase,
            torch.zeros(rows, dtype=torch.int32, device=device),
            "num_reqs",
        )
        self.ids = registry.ids(
            kv_indptr=f"{owner}.kv_indptr",
            kv_indices=f"{owner}.kv_indices",
            last_page_len=f"{owner}.last_page_len",
            qo_indptr=f"{registry_owner(owner)}.query_start_loc",
            block_table="block_table",
        )
        self.last_num_pages = 0

    def csr(self, seq_lens: list[int]) -> tuple[list[int], list[int]]:
        bs = self.block_size
        indptr, last = [0], []
        for n in seq_lens:
            pages = -(-n // bs)
            indptr.append(indptr[-1] + pages)
            last.append(0 if n == 0 else (n % bs or bs))
        return indptr, last

    def build(self, common: CommonMetadata, guard: Guard | None = None) -> FlashInferMetadata:
        indptr, last = self.csr(common.seq_lens_cpu[: common.num_reqs])
        n = common.num_reqs
        dev = self.kv_indptr.device
        self.kv_indptr[: n + 1].copy_(
            torch.tensor(indptr, dtype=torch.int32), non_blocking=dev.type == "cuda"
        )
        if n:
            self.last_page_len[:n].copy_(
                torch.tensor(last, dtype=torch.int32), non_blocking=dev.type == "cuda"
            )
        self.last_num_pages = indptr[-1]
        if indptr[-1] > self.kv_indices.shape[0]:
            raise RuntimeError(
                f"{indptr[-1]} pages exceed the kv_indices capacity {self.kv_indices.shape[0]}"
            )
        build_csr_page_indices(self.kv_indices, common.block_table, self.kv_indptr, n, guard)
        return FlashInferMetadata(
            qo_indptr=common.query_start_loc,
            kv_indptr=self.kv_indptr,
            kv_indices=self.kv_indices,
            last_page_len=self.last_page_len,
            num_reqs=n,
            num_tokens=common.num_tokens,
            max_query_len=common.max_query_len,
            decode=common.max_query_len <= 1,
            guard_ids=self.ids,
        )


def registry_owner(owner: str) -> str:
    """Builders named 'target'/'draft' read the query_start_loc of that input-buffer owner."""
    return "target" if owner == "target" else "eagle"


BreakHook = Callable[[int, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], None]


class AttentionRuntime:
    """The models' attention callback: KV write + paged attention for the current metadata."""

    def __init__(
        self,
        kv_caches: list[tuple[torch.Tensor, torch.Tensor]],
        slot_mapping: torch.Tensor,
        head_dims: list[int],
        registry: BufferRegistry,
        guard_log: GuardLog | None = None,
    ) -> None:
        self.kv_caches = kv_caches
        self.slot_mapping = slot_mapping
        self.scales = [default_scale(d) for d in head_dims]
        self.guard_log = guard_log
        self.metadata: Metadata | None = None
        self.break_hook: BreakHook | None = None
        # vLLM captures PIECEWISE pieces with skip_attn: attention is not run during capture
        self.skip = False
        self._slot_ids = registry.ids(slot_mapping="slot_mapping")
        # draft layers whose queries attend their request's whole KV (DFlash blocks)
        self.non_causal: frozenset[int] = frozenset()

    def guard(self, ids: dict[str, int]) -> Guard | None:
        return Guard(self.guard_log, ids) if self.guard_log is not None else None

    def __call__(
        self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor
    ) -> None:
        if self.break_hook is not None:
            self.break_hook(layer, q, k, v, out)
        else:
            self.run(layer, q, k, v, out)

    def run(
        self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor
    ) -> None:
        if self.skip:
            return
        md = self.metadata
        if md is None:
            raise RuntimeError("attention called without metadata")
        k_cache, v_cache = self.kv_caches[layer]
        if v_cache is k_cache:  # MLA: one latent cache, value = latent prefix of the key row
            absorbed_attention(self._latent_core, layer, q, k, v, out)
            return
        write_kv(k, v, k_cache, v_cache, self.slot_mapping, q.shape[0], self.guard(self._slot_ids))
        guard = self.guard(md.guard_ids)
        # FA3's scratch lives for the call, as FA3's does; FlashInfer allocates none
        scratch = _fa3_scratch(md.fa3_splits, q, v) if isinstance(md, FlashAttnMetadata) else []
        paged_attention(
            q,
            k_cache,
            v_cache,
            out,
            md.paged,
            max_query_len=md.max_query_len,
            scale=self.scales[layer],
            guard=guard,
            causal=layer not in self.non_causal,
        )
        del scratch

    def _latent_core(
        self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor
    ) -> None:
        """MLA's multi-query core: write the `[latent | rope]` row, then attention over the
        latent cache in the metadata's style (softmax scale 1/sqrt(row width): the model folds
        its own into q). The up-projections around it are `absorbed_attention`'s."""
        md = self.metadata
        assert md is not None
        cache = self.kv_caches[layer][0]
        write_kv(k, k, cache, cache, self.slot_mapping, q.shape[0], self.guard(self._slot_ids))
        guard = self.guard(md.guard_ids)
        mla_attention(q, cache, out, md.paged, max_query_len=md.max_query_len, guard=guard)


def _fa3_scratch(splits: int | None, q: torch.Tensor, v: torch.Tensor) -> list[torch.Tensor]:
    """What FA3's `mha_fwd` allocates for one call (fp32, dead when it returns): the Triton
    kernel does not need it, but inside a FULL graph it occupies the pool as the engine's does."""
    if splits is None:
        return []
    shapes = SplitKvScratch.shapes(splits, q.shape[1], q.shape[0], v.shape[-1])
    return [torch.empty(s, dtype=torch.float32, device=q.device) for s in shapes]


def describe(md: Any) -> str:
    if md is None:
        return "none"
    return f"{md.style}(reqs={md.num_reqs}, tokens={md.num_tokens}, max_q={md.max_query_len})"
