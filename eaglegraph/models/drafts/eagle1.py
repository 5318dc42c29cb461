"""EAGLE-1/2 draft: module, weight loader, random init and feed (research §4.2)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from eaglegraph.errors import BadInput
from eaglegraph.models.drafts.base import BuildArgs, DraftArch, DraftBase, DraftStep, PlannedBuild
from eaglegraph.models.drafts.eagle_head import HeadParts, draft_layer_spec
from eaglegraph.models.layers import DecoderLayer, modules_of, new_param
from eaglegraph.models.loading import Plan, detect_layer_spec, plan_layer
from eaglegraph.models.target import TargetModel
from eaglegraph.pair.kinds import DraftKind
from eaglegraph.pair.model import Pair


class Eagle1Draft(DraftBase[DraftArch, TargetModel]):
    """fc over concat(embedding, target final-normed hidden), decoder layer(s), no final norm.

    Layer 0 has no input norm; logits come from the target's lm_head; the embedding is the
    target's (vLLM skips a checkpoint's `embed_tokens` for EAGLE-1).
    """

    def __init__(
        self, arch: DraftArch, target: TargetModel, args: BuildArgs, parts: HeadParts | None = None
    ) -> None:
        super().__init__(arch, target, args)
        geometry, dtype, dev = args.geometry, args.dtype, args.device
        hidden = geometry.hidden_size
        if target.hidden_size != hidden:
            raise BadInput(
                f"EAGLE-1 draft hidden_size {hidden} differs from the target's {target.hidden_size}"
            )
        parts = parts or HeadParts()
        self.spec = parts.layer_spec(geometry)
        use_bias = parts.has_fc_bias(arch)
        self.fc_weight = new_param((hidden, 2 * hidden), dtype, dev)
        self.fc_bias = new_param((hidden,), dtype, dev) if use_bias else None
        self.layers = nn.ModuleList(
            DecoderLayer(self.spec, dtype, dev, input_norm=i > 0)
            for i in range(geometry.num_hidden_layers)
        )

    def forward(self, step: DraftStep) -> tuple[torch.Tensor, torch.Tensor]:
        """(hidden for logits, hidden for the next step): the same tensor for EAGLE-1."""
        emb = self.target.embed_tokens(step.input_ids)
        h = F.linear(torch.cat([emb, step.hidden_in], dim=-1), self.fc_weight, self.fc_bias)
        ctx = self.context(step)
        for i, layer in enumerate(self.layers):
            h = layer(h, ctx, self.layer_offset + i)
        return h, h

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.target.compute_logits(hidden)

    def draft_to_target(self, ids: torch.Tensor) -> torch.Tensor:
        """EAGLE-1 drafts over the target vocabulary: the identity."""
        return ids

    def prefill_feature(self, hidden: torch.Tensor, aux: torch.Tensor | None) -> torch.Tensor:
        """EAGLE-1 consumes the target's final (normed) hidden state as is."""
        return hidden


class Eagle1Build(PlannedBuild[DraftArch, TargetModel, Eagle1Draft]):
    kind = DraftKind.EAGLE1

    def arch(self, pair: Pair, framework: str) -> DraftArch:
        facts, target = pair.draft_facts, pair.target
        assert facts is not None and target is not None
        bias = facts.fc_bias_tensor if facts.fc_bias_tensor is not None else bool(facts.config_bias)
        return DraftArch(DraftKind.EAGLE1, target.geometry.hidden_size, fc_bias=bias)

    def fresh(self, arch: DraftArch, target: TargetModel, args: BuildArgs) -> Eagle1Draft:
        return Eagle1Draft(arch, target, args)

    def planned(
        self, plan: Plan, arch: DraftArch, target: TargetModel, args: BuildArgs
    ) -> Eagle1Draft:
        spec = detect_layer_spec(draft_layer_spec(args.geometry), plan, ["layers.0."])
        draft = Eagle1Draft(arch, target, args, HeadParts(spec, plan.has(["fc.bias"])))
        plan.add(draft.fc_weight, ["fc.weight"])
        if draft.fc_bias is not None:
            plan.add(draft.fc_bias, ["fc.bias"])
        for i, layer in enumerate(modules_of(draft.layers, DecoderLayer)):
            plan_layer(plan, layer, [f"layers.{i}."])
        # vLLM shares the target embedding for EAGLE-1 and skips a stored copy.
        plan.note(["embed_tokens.weight"], (target.vocab_size, args.geometry.hidden_size))
        return draft


BUILD = Eagle1Build()
