"""The vocabulary split over tensor-parallel ranks, as vLLM and SGLang split it.

Both engines pad the vocabulary to a multiple of 64 rows (`known.parallel.VOCAB_PADDING`;
vllm/model_executor/layers/vocab_parallel_embedding.py::pad_vocab_size, the same in SGLang's
srt/layers/vocab_parallel_embedding.py), then give each rank `padded / tp` consecutive rows
(`VocabParallelEmbedding.__init__`, `divide`; the padding rows are zeros, `weight_loader`):
- the embedding (`VocabParallelEmbedding.forward`): each rank looks up the ids of its rows,
  maps every other id to its row 0 (`get_masked_input_and_mask`), zeroes those rows and
  all-reduces, so every rank ends with the whole embedding;
- the LM head (`ParallelLMHead`, a vocab-parallel embedding whose weight the logits processor
  multiplies): each rank computes the logits of its rows, then the logits are all-gathered
  along the vocabulary and the padding cut off (vLLM
  logits_processor.py::LogitsProcessor._get_logits and `_gather_logits`: `use_all_gather` is
  True on every platform but TPU-like ones, `platforms/interface.py::use_all_gather`; SGLang
  logits_processor.py::LogitsProcessor, its logits gatherer). vLLM's drafter takes its greedy
  tokens from these gathered logits (`llm_base_proposer.py::_greedy_sample`) unless
  `use_local_argmax_reduction` (default False, `config/speculative.py`) is set.
A tied head is the embedding's weight, split the same way; a draft that shares the target's
embedding or head shares the sharded module.

Ids outside the whole vocabulary keep the rig's NaN rows on every rank (the gather kernel's
poison, `kernels.embedding`), so a stale id is still seen at TP > 1; the engines mask them to
zero rows there, and SGLang checks them first (`VocabParallelEmbedding.forward`,
`maybe_detect_oob`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from eaglegraph.errors import BadInput
from eaglegraph.known.parallel import VOCAB_PADDING
from eaglegraph.models import collectives, ops
from eaglegraph.models.layers import VocabEmbedding


@dataclass(frozen=True)
class VocabShard:
    """Rank `rank` of `size`'s rows of a `vocab`-row table padded to `padded` rows."""

    vocab: int
    padded: int
    rank: int
    size: int

    @property
    def rows(self) -> int:
        """Rows one rank holds (padding included): the same on every rank."""
        return self.padded // self.size

    @property
    def start(self) -> int:
        return self.rank * self.rows

    @property
    def real_rows(self) -> int:
        """This rank's rows that are vocabulary, not padding."""
        return max(0, min(self.start + self.rows, self.vocab) - self.start)


def padded_vocab(vocab: int) -> int:
    return -(-vocab // VOCAB_PADDING) * VOCAB_PADDING


def vocab_shard(vocab: int, rank: int, size: int) -> VocabShard:
    padded = padded_vocab(vocab)
    if padded % size:
        raise BadInput(
            f"the tensor-parallel size {size} does not divide the vocabulary padded to "
            f"{padded} rows"
        )
    return VocabShard(vocab, padded, rank, size)


def shard_rows(weight: Tensor, shard: VocabShard) -> nn.Parameter:
    """This rank's rows of `weight` (`[vocab, H]`), padded with zero rows, tagged with its
    shard so `head_logits` knows to gather."""
    rows = torch.zeros((shard.rows, weight.shape[1]), dtype=weight.dtype, device=weight.device)
    rows[: shard.real_rows] = weight[shard.start : shard.start + shard.real_rows]
    param = nn.Parameter(rows, requires_grad=False)
    param.vocab_shard = shard  # type: ignore[attr-defined]  # read by head_logits
    return param


def weight_shard(weight: Tensor) -> VocabShard | None:
    """The shard a head or embedding weight holds (None: the whole vocabulary)."""
    return getattr(weight, "vocab_shard", None)


class VocabParallelEmbedding(VocabEmbedding):
    """A `VocabEmbedding` holding one rank's rows: masked lookup, zeroed rows, all-reduce."""

    shard: VocabShard

    def forward(self, ids: Tensor) -> Tensor:
        s = self.shard
        local = ids - s.start
        mine = (local >= 0) & (local < s.real_rows)
        outside = (ids < 0) | (ids >= s.vocab)  # poisoned on every rank: NaN after the sum
        local = torch.where(mine, local, torch.where(outside, -1, 0))
        out = torch.empty(
            (ids.shape[0], self.weight.shape[1]), dtype=self.weight.dtype, device=self.weight.device
        )
        ops.embedding(self.weight, local, out)
        out.masked_fill_((~mine & ~outside).unsqueeze(-1), 0)
        torch.ops.eaglegraph.tp_all_reduce(out)  # registered by `collectives`
        return out


def shard_embedding(module: VocabEmbedding, rank: int, size: int) -> None:
    """Keep rank `rank`'s rows of `module` and make it a `VocabParallelEmbedding` in place:
    the same object, so every draft that holds the target's embedding holds the shard."""
    shard = vocab_shard(module.weight.shape[0], rank, size)
    module.weight = shard_rows(module.weight, shard)
    module.__class__ = VocabParallelEmbedding
    assert isinstance(module, VocabParallelEmbedding)
    module.shard = shard


def head_logits(hidden: Tensor, weight: Tensor) -> Tensor:
    """`hidden @ weight.T`: the logits over the whole vocabulary, gathered from every rank's
    rows when `weight` is a vocab-parallel shard (padding cut off)."""
    logits = F.linear(hidden, weight)
    shard = weight_shard(weight)
    if shard is None:
        return logits
    full = collectives.tp_all_gather(logits, shard.size)
    return full if shard.padded == shard.vocab else full[..., : shard.vocab].contiguous()
