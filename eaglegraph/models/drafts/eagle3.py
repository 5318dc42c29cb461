"""EAGLE-3 draft: module, weight loader, random init and feed (research §4.3).

The target feeds the draft prefill its aux states (the outputs of the tapped layers,
concatenated), which the draft's fc folds to its own width.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from eaglegraph.errors import BadInput
from eaglegraph.models.drafts.base import BuildArgs, DraftArch, DraftBase, DraftStep, PlannedBuild
from eaglegraph.models.drafts.eagle_head import HeadParts, draft_layer_spec
from eaglegraph.models.layers import (
    Attention,
    DecoderLayer,
    ForwardContext,
    GatedMLP,
    LayerSpec,
    RMSNorm,
    VocabEmbedding,
    modules_of,
    new_param,
)
from eaglegraph.models.loading import Plan, detect_layer_spec, plan_head, plan_layer
from eaglegraph.models.target import TargetModel
from eaglegraph.models.vocab import head_logits
from eaglegraph.pair.facts import default_aux_layers
from eaglegraph.pair.kinds import DraftKind
from eaglegraph.pair.model import Pair
from eaglegraph.pair.tensors import CheckpointIndex


class Eagle3MidLayer(nn.Module):
    """EAGLE-3 layer 0: attention over concat(input_layernorm(emb), hidden_norm(h)), width 2H."""

    def __init__(
        self,
        spec: LayerSpec,
        norm_before_residual: bool,
        dtype: torch.dtype,
        device: torch.device,
    ) -> None:
        super().__init__()
        eps, hidden = spec.rms_norm_eps, spec.hidden_size
        self.norm_before_residual = norm_before_residual
        self.input_layernorm = RMSNorm(hidden, eps, dtype, device)
        self.hidden_norm = RMSNorm(hidden, eps, dtype, device)
        self.self_attn = Attention(spec, 2 * hidden, dtype, device)
        self.post_attention_layernorm = RMSNorm(hidden, eps, dtype, device)
        self.mlp = GatedMLP(spec, dtype, device)

    def forward(
        self, emb: torch.Tensor, h: torch.Tensor, ctx: ForwardContext, layer_index: int
    ) -> torch.Tensor:
        normed = self.hidden_norm(h)
        residual = normed if self.norm_before_residual else h
        x = torch.cat([self.input_layernorm(emb), normed], dim=-1)
        h = residual + self.self_attn(x, ctx, layer_index)
        return h + self.mlp(self.post_attention_layernorm(h))


class Eagle3Draft(DraftBase[DraftArch, TargetModel]):
    """EAGLE-3 head: fc over aux states (prefill), midlayer, extra layers, final norm, own head.

    Decode steps feed the draft's own previous `hidden_out` (width H), prefill the target's
    concatenated aux states (width num_aux·Ht); fc runs only when the width differs from H.
    """

    d2t: torch.Tensor  # a registered buffer (nn.Module's __getattr__ types it loosely)

    def __init__(
        self, arch: DraftArch, target: TargetModel, args: BuildArgs, parts: HeadParts | None = None
    ) -> None:
        super().__init__(arch, target, args)
        geometry, dtype, dev = args.geometry, args.dtype, args.device
        hidden, eps = geometry.hidden_size, geometry.rms_norm_eps
        parts = parts or HeadParts()
        own_embed, own_lm_head = parts.own_embed, parts.own_lm_head
        self.draft_vocab_size = arch.draft_vocab_size or target.vocab_size
        if not own_embed and target.hidden_size != hidden:
            raise BadInput(
                f"EAGLE-3 draft has no embed_tokens and its hidden_size {hidden} differs from "
                f"the target's {target.hidden_size}, so it cannot share the target embedding"
            )
        if not own_lm_head and self.draft_vocab_size != target.vocab_size:
            raise BadInput(
                f"EAGLE-3 draft has no lm_head but a draft vocab of {self.draft_vocab_size} "
                f"(target vocab {target.vocab_size})"
            )
        self.spec = parts.layer_spec(geometry)
        self.embed_tokens = (
            VocabEmbedding(target.vocab_size, hidden, dtype, dev) if own_embed else None
        )
        fc_in = arch.num_aux * arch.target_hidden_size
        use_bias = parts.has_fc_bias(arch)
        self.fc_weight = new_param((hidden, fc_in), dtype, dev) if arch.num_aux else None
        self.fc_bias = new_param((hidden,), dtype, dev) if arch.num_aux and use_bias else None
        self.fc_norm = (
            nn.ModuleList(
                RMSNorm(arch.target_hidden_size, eps, dtype, dev) for _ in range(arch.num_aux)
            )
            if arch.fc_norm
            else None
        )
        self.input_norm = RMSNorm(fc_in, eps, dtype, dev) if arch.norm_before_fc and fc_in else None
        self.midlayer = Eagle3MidLayer(self.spec, arch.norm_before_residual, dtype, dev)
        self.layers = nn.ModuleList(
            DecoderLayer(self.spec, dtype, dev) for _ in range(geometry.num_hidden_layers - 1)
        )
        self.norm = RMSNorm(hidden, eps, dtype, dev)
        self.lm_head = (
            new_param((self.draft_vocab_size, hidden), dtype, dev) if own_lm_head else None
        )
        self.register_buffer(
            "d2t",
            torch.zeros(self.draft_vocab_size, dtype=torch.int64, device=dev),
            persistent=False,
        )

    @property
    def embed(self) -> VocabEmbedding:
        return self.embed_tokens if self.embed_tokens is not None else self.target.embed_tokens

    @property
    def lm_head_weight(self) -> torch.Tensor:
        return self.lm_head if self.lm_head is not None else self.target.lm_head_weight

    def combine(self, aux: torch.Tensor) -> torch.Tensor:
        """Target aux states `[T, num_aux·Ht]` to the draft width H (norms, then fc)."""
        if self.fc_weight is None:
            raise ValueError(
                f"draft has no fc (num_aux 0) but got hidden width {aux.shape[-1]}, expected {self.hidden_size}"
            )
        if self.input_norm is not None:
            aux = self.input_norm(aux)
        if self.fc_norm is not None:
            chunks = aux.split(self.arch.target_hidden_size, dim=-1)
            aux = torch.cat([norm(c) for norm, c in zip(self.fc_norm, chunks, strict=True)], dim=-1)
        return F.linear(aux, self.fc_weight, self.fc_bias)

    def forward(self, step: DraftStep) -> tuple[torch.Tensor, torch.Tensor]:
        """(norm(h_out) for logits, h_out prenorm for the next draft step)."""
        emb, hidden_in, ctx = self.embed(step.input_ids), step.hidden_in, self.context(step)
        h = hidden_in if hidden_in.shape[-1] == self.hidden_size else self.combine(hidden_in)
        h = self.midlayer(emb, h, ctx, self.layer_offset)
        for i, layer in enumerate(self.layers, start=1):
            h = layer(h, ctx, self.layer_offset + i)
        return self.norm(h), h

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """`[T, Vd]` logits over the draft vocabulary, in the head (model) dtype."""
        return head_logits(hidden, self.lm_head_weight)

    def draft_to_target(self, ids: torch.Tensor) -> torch.Tensor:
        """Target ids of draft ids: `i + d2t[i]` (d2t is zero for an identity map)."""
        return ids + self.d2t[ids]

    def prefill_feature(self, hidden: torch.Tensor, aux: torch.Tensor | None) -> torch.Tensor:
        """EAGLE-3 consumes the target's concatenated aux states, folded by fc."""
        assert aux is not None, "EAGLE-3 prefill needs the target's aux states"
        return self.combine(aux)


class Eagle3Build(PlannedBuild[DraftArch, TargetModel, Eagle3Draft]):
    kind = DraftKind.EAGLE3

    def arch(self, pair: Pair, framework: str) -> DraftArch:
        facts, draft, target = pair.draft_facts, pair.draft, pair.target
        assert facts is not None and draft is not None and target is not None
        cfg = draft.config
        ids = facts.aux.layer_ids if facts.aux and facts.aux.layer_ids else None
        num_aux = 0 if facts.use_aux_hidden_state is False else (len(ids) if ids else 3)
        return DraftArch(
            DraftKind.EAGLE3,
            facts.target_hidden_size or target.geometry.hidden_size,
            num_aux=num_aux,
            draft_vocab_size=facts.draft_vocab_size,
            fc_bias=bool(facts.fc_bias_tensor) or bool(cfg.bool("bias", default=False)),
            norm_before_residual=bool(cfg.bool("norm_before_residual", default=False)),
            fc_norm=bool(cfg.bool("fc_norm", default=False)),
            norm_before_fc=bool(cfg.bool("norm_before_fc", default=False)),
        )

    def aux_layer_ids(self, pair: Pair, framework: str) -> tuple[int, ...]:
        """Entering-layer ids the target taps: vLLM uses explicit ids as given, SGLang adds 1."""
        facts, target = pair.draft_facts, pair.target
        if facts is None or target is None or facts.use_aux_hidden_state is False:
            return ()
        ids = facts.aux.layer_ids if facts.aux else None
        if not ids:
            return tuple(default_aux_layers(target.geometry.num_hidden_layers))
        if framework == "sglang":
            return tuple(i + 1 for i in ids)
        return tuple(ids)

    def fresh(self, arch: DraftArch, target: TargetModel, args: BuildArgs) -> Eagle3Draft:
        return Eagle3Draft(arch, target, args, HeadParts(own_lm_head=True))

    def random(
        self, arch: DraftArch, target: TargetModel, args: BuildArgs, gen: torch.Generator
    ) -> Eagle3Draft:
        """d2t maps the draft vocabulary onto a sorted random subset of the target's, as a
        real frequency-ranked table would (non-decreasing offsets, all ids valid)."""
        draft = super().random(arch, target, args, gen)
        vocab, vocab_draft, dev = target.vocab_size, draft.draft_vocab_size, args.device
        if vocab_draft < vocab:
            chosen = torch.randperm(vocab, generator=gen, device=dev)[:vocab_draft].sort().values
            draft.d2t.copy_(chosen - torch.arange(vocab_draft, device=dev))
        return draft

    def planned(
        self, plan: Plan, arch: DraftArch, target: TargetModel, args: BuildArgs
    ) -> Eagle3Draft:
        mid = ["layers.0.", "midlayer."]
        vocab_draft = arch.draft_vocab_size or target.vocab_size
        parts = HeadParts(
            spec=detect_layer_spec(draft_layer_spec(args.geometry), plan, mid),
            fc_bias=plan.has(["fc.bias"]),
            own_embed=plan.has(["embed_tokens.weight"]),
            own_lm_head=plan.has(["lm_head.weight"]) or vocab_draft != target.vocab_size,
        )
        draft = Eagle3Draft(arch, target, args, parts)
        if draft.embed_tokens is not None:
            plan.add(draft.embed_tokens.weight, ["embed_tokens.weight"])
        if draft.fc_weight is not None:
            plan.add(draft.fc_weight, ["fc.weight"])
        if draft.fc_bias is not None:
            plan.add(draft.fc_bias, ["fc.bias"])
        if draft.fc_norm is not None:
            for i, norm in enumerate(modules_of(draft.fc_norm, RMSNorm)):
                plan.add(norm.weight, [f"fc_norm.{i}.weight"])
        if draft.input_norm is not None:
            plan.add(draft.input_norm.weight, ["input_norm.weight"])
        plan_layer(plan, draft.midlayer, mid)
        for i, layer in enumerate(modules_of(draft.layers, DecoderLayer), start=1):
            plan_layer(plan, layer, [f"layers.{i}."])
        plan_head(plan, draft.norm, draft.lm_head)
        # d2t may be absent only when the draft vocabulary is the target's (identity map).
        plan.add(draft.d2t, ["d2t"], required=vocab_draft != target.vocab_size)
        plan.note(["t2d"], (target.vocab_size,))
        return draft

    def load(
        self, index: CheckpointIndex, arch: DraftArch, target: TargetModel, args: BuildArgs
    ) -> Eagle3Draft:
        draft = super().load(index, arch, target, args)
        _check_d2t(draft, index.folder)
        return draft


BUILD = Eagle3Build()


def _check_d2t(draft: Eagle3Draft, folder: Path) -> None:
    """Every draft id must map into the target vocabulary (one sync, at load time only)."""
    ids = torch.arange(draft.draft_vocab_size, device=draft.d2t.device)
    mapped = draft.draft_to_target(ids)
    low, high = int(mapped.min()), int(mapped.max())
    if low < 0 or high >= draft.vocab_size:
        raise BadInput(
            f"{folder}: d2t maps draft ids to [{low}, {high}], outside the target vocabulary "
            f"[0, {draft.vocab_size})"
        )
