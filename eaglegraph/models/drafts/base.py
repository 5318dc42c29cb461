"""What every draft module shares, and what a kind's `BUILD` must provide to the rig.

Drafts share the target's embedding or lm_head where the checkpoint does not carry its own;
shared modules are held by reference, not registered, so the draft's parameters are only the
draft's own weights. Draft attention layers report `layer_offset + i` to the attention
callback because the draft's KV-cache layers follow the target's.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, TypeVar, cast

import torch
from torch import nn

from eaglegraph.models.init import fill_random
from eaglegraph.models.layers import AttentionFn, ForwardContext
from eaglegraph.models.loading import Plan
from eaglegraph.models.rope import build_cos_sin_cache, cache_length
from eaglegraph.models.target import DecoderStack, TargetModel
from eaglegraph.pair.geometry import Geometry
from eaglegraph.pair.kinds import DraftKind

if TYPE_CHECKING:
    from eaglegraph.pair.model import Pair
    from eaglegraph.pair.tensors import CheckpointIndex


@dataclass(frozen=True)
class DraftArch:
    """What a draft needs beyond its Geometry; its kind's `BUILD.arch` derives it from facts.

    `num_aux` 0 means no fc (EAGLE-3 `use_aux_hidden_state: false`). `draft_vocab_size`
    None means the target vocabulary. `fc_norm` is SpecForge eagle3.1's per-aux RMSNorm,
    `norm_before_fc` speculators' `input_norm` over the whole concatenation.
    """

    kind: DraftKind
    target_hidden_size: int
    num_aux: int = 3
    draft_vocab_size: int | None = None
    fc_bias: bool = False
    norm_before_residual: bool = False
    fc_norm: bool = False
    norm_before_fc: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", DraftKind(self.kind))  # accept "eagle3" too


class DraftStep(NamedTuple):
    """What the rig hands one draft forward: the input ids, their positions, the hidden states
    fed in (the target's, or the draft's own from the step before) and the attention callable.
    One record, so a new draft kind does not spell the interface again."""

    input_ids: torch.Tensor
    positions: torch.Tensor
    hidden_in: torch.Tensor
    attention: AttentionFn


class Draft(Protocol):
    """The interface the rig drives, whatever the kind."""

    arch: DraftArch
    hidden_size: int
    vocab_size: int
    extra_tensors: tuple[str, ...]

    def __call__(self, step: DraftStep) -> tuple[torch.Tensor, torch.Tensor]:
        """(hidden its logits come from, hidden it hands to the next step)."""
        ...

    def prefill_feature(self, hidden: torch.Tensor, aux: torch.Tensor | None) -> torch.Tensor:
        """How the target feeds the draft prefill: from its final hidden and its aux taps."""
        ...

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor: ...

    def draft_to_target(self, ids: torch.Tensor) -> torch.Tensor: ...

    def eval(self) -> Any: ...


@dataclass(frozen=True)
class BuildArgs:
    """Everything a kind's module constructor needs besides the arch and the target."""

    geometry: Geometry
    dtype: torch.dtype
    device: torch.device
    layer_offset: int
    max_positions: int | None
    rope_extras: Mapping[str, Any] | None


@dataclass(frozen=True)
class Verified:
    """One request right after a dense target pass, where every kind's dense drafting starts.

    `tokens` is the accepted sequence followed by the target's next token (`valid + 1` ids);
    `hidden` and `aux` are the target's final hidden rows and tapped states of the `valid`
    accepted positions; `attention` is plain causal attention over a whole sequence.
    """

    tokens: list[int]
    hidden: torch.Tensor
    aux: torch.Tensor | None
    num_speculative_tokens: int
    attention: AttentionFn

    @property
    def valid(self) -> int:
        return len(self.tokens) - 1


def positions_of(
    ids: list[int], device: torch.device, start: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, positions start..) as int64 tensors on `device`."""
    n = len(ids)
    return (
        torch.tensor(ids, dtype=torch.int64, device=device),
        torch.arange(start, start + n, dtype=torch.int64, device=device),
    )


def autoregressive_drafts(draft: Draft, v: Verified) -> list[int]:
    """EAGLE-style drafting, densely: the draft reruns over the accepted sequence (token i+1
    with the target's feature at i), then extends itself K-1 times with its own tokens and
    recycled hidden states, recomputing every position each time (no cache)."""
    feature = draft.prefill_feature(v.hidden, v.aux)
    tokens, feats, out = v.tokens[1:], [feature], []
    for _ in range(v.num_speculative_tokens):
        ids, pos = positions_of(tokens, feature.device)
        logit_h, h_out = draft(DraftStep(ids, pos, torch.cat(feats, 0), v.attention))
        logits = draft.compute_logits(logit_h[-1:])
        token = int(draft.draft_to_target(logits.argmax(-1))[0])
        out.append(token)
        tokens = [*tokens, token]
        feats.append(h_out[-1:])
    return out


class DraftBuild(Protocol):
    """A kind's torch side (`models/drafts/<kind>.py` exports one as `BUILD`)."""

    kind: DraftKind
    # the kind can draft for an MLA (latent-attention) target
    mla_target: bool
    # KV slots a request reserves beyond the K lookahead slots (the engine's
    # num_lookahead_tokens minus K): a draft that writes more rows than it proposes tokens
    extra_lookahead_slots: int

    def arch(self, pair: Pair, framework: str) -> DraftArch:
        """The module's arch from the inspected pair's facts."""
        ...

    def aux_layer_ids(self, pair: Pair, framework: str) -> tuple[int, ...]:
        """Entering-layer ids of target states the draft consumes besides the final hidden."""
        ...

    def random(
        self, arch: DraftArch, target: TargetModel, args: BuildArgs, gen: torch.Generator
    ) -> Draft:
        """A module with seeded random weights (`--random-weights`)."""
        ...

    def load(
        self, index: CheckpointIndex, arch: DraftArch, target: TargetModel, args: BuildArgs
    ) -> Draft:
        """A module with the checkpoint's weights, every tensor checked against its header."""
        ...

    def dense_drafts(self, draft: Draft, verified: Verified) -> list[int]:
        """The K draft tokens of one request by plain dense recomputation (no paging, no
        buffers, no graphs): the reference the rig's step must reproduce."""
        ...


def _rope_cache(target: DecoderStack, args: BuildArgs) -> torch.Tensor:
    # vLLM raises a draft's max_position_embeddings to the target's serving length.
    g = args.geometry
    max_pos = max(g.max_position_embeddings, target.geometry.max_position_embeddings)
    rows = args.max_positions or max(cache_length(g.rope, max_pos), target.max_positions)
    return build_cos_sin_cache(g.rope, g.head_dim, max_pos, rows, args.device, args.rope_extras)


ArchT = TypeVar("ArchT")
TargetT = TypeVar("TargetT", bound=DecoderStack)


class DraftBase(nn.Module, Generic[ArchT, TargetT]):
    """Shared plumbing: geometry, shared target modules, rope cache, layer offset.

    `cache` is the rope cache when the kind builds its own (MTP); by default the draft's
    geometry at the target's serving length.
    """

    cos_sin_cache: torch.Tensor  # a registered buffer (nn.Module's __getattr__ types it loosely)

    def __init__(
        self, arch: ArchT, target: TargetT, args: BuildArgs, cache: torch.Tensor | None = None
    ) -> None:
        super().__init__()
        self.geometry = args.geometry
        self.arch = arch
        self.layer_offset = args.layer_offset
        self.hidden_size = args.geometry.hidden_size
        self.vocab_size = target.vocab_size
        self.extra_tensors: tuple[str, ...] = ()
        # A plain tuple keeps the target out of this module's parameters and state_dict.
        self._target = (target,)
        cache = _rope_cache(target, args) if cache is None else cache
        self.register_buffer("cos_sin_cache", cache, persistent=False)
        self.max_positions = cache.shape[0]

    @property
    def target(self) -> TargetT:
        return self._target[0]

    def context(self, step: DraftStep) -> ForwardContext:
        """What the draft's layers are called with for `step`: its positions over the draft's
        rope cache, its attention."""
        return ForwardContext(step.positions, self.cos_sin_cache, step.attention)


ModuleT = TypeVar("ModuleT", bound=DraftBase[Any, Any])


class BuildDefaults(ABC, Generic[ArchT, TargetT, ModuleT]):
    """What a kind's `BUILD` does unless it says otherwise: no aux taps, one KV layer per
    draft decoder layer, seeded weights over the module `fresh` builds, EAGLE-style drafting.
    A kind overrides only where it differs; it loads its checkpoint by `load` (or, through
    `PlannedBuild`, by naming each weight in a `Plan`)."""

    mla_target = False
    extra_lookahead_slots = 0

    def aux_layer_ids(self, pair: Pair, framework: str) -> tuple[int, ...]:
        return ()

    @abstractmethod
    def fresh(self, arch: ArchT, target: TargetT, args: BuildArgs) -> ModuleT:
        """The module with config defaults (its weights uninitialised)."""

    def random(
        self, arch: ArchT, target: TargetT, args: BuildArgs, gen: torch.Generator
    ) -> ModuleT:
        draft = self.fresh(arch, target, args)
        fill_random(draft, gen)
        return draft

    @abstractmethod
    def load(
        self, index: CheckpointIndex, arch: ArchT, target: TargetT, args: BuildArgs
    ) -> ModuleT:
        """The module with the checkpoint's weights, every tensor checked against its header."""

    def dense_drafts(self, draft: ModuleT, verified: Verified) -> list[int]:
        return autoregressive_drafts(cast(Draft, draft), verified)


class PlannedBuild(BuildDefaults[ArchT, TargetT, ModuleT]):
    """A build that loads by naming each weight of the module the checkpoint shapes in one
    `Plan` (EAGLE-1, EAGLE-3, DFlash); the plan checks every tensor against its header."""

    @abstractmethod
    def planned(self, plan: Plan, arch: ArchT, target: TargetT, args: BuildArgs) -> ModuleT:
        """The module as the checkpoint shapes it, its weights added to `plan`."""

    def load(
        self, index: CheckpointIndex, arch: ArchT, target: TargetT, args: BuildArgs
    ) -> ModuleT:
        plan = Plan(index)
        draft = self.planned(plan, arch, target, args)
        draft.extra_tensors = plan.run(args.device)
        return draft
