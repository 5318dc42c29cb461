"""EAGLE-1/2 draft: module, weight loader, random init and feed (research §4.2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from eaglegraph.errors import BadInput
from eaglegraph.models.drafts.base import (
    BuildArgs,
    Draft,
    DraftArch,
    DraftBase,
    Verified,
    autoregressive_drafts,
    draft_layer_spec,
    stacked_kv_layers,
)
from eaglegraph.models.drafts.style import SpeculatorStyle
from eaglegraph.models.init import fill_random
from eaglegraph.models.layers import AttentionFn, DecoderLayer, LayerSpec, modules_of, new_param
from eaglegraph.models.loading import Plan, detect_layer_spec, plan_layer
from eaglegraph.models.target import TargetModel
from eaglegraph.pair.geometry import Geometry
from eaglegraph.pair.kinds import DraftKind
from eaglegraph.pair.model import Pair
from eaglegraph.pair.tensors import CheckpointIndex


class Eagle1Draft(DraftBase):
    """fc over concat(embedding, target final-normed hidden), decoder layer(s), no final norm.

    Layer 0 has no input norm; logits come from the target's lm_head; the embedding is the
    target's (vLLM skips a checkpoint's `embed_tokens` for EAGLE-1).
    """

    def __init__(
        self,
        geometry: Geometry,
        arch: DraftArch,
        target: TargetModel,
        *,
        layer_offset: int,
        dtype: torch.dtype,
        device: torch.device | str,
        spec: LayerSpec | None = None,
        fc_bias: bool | None = None,
        max_positions: int | None = None,
        rope_extras: Mapping[str, Any] | None = None,
    ) -> None:
        dev = torch.device(device)
        super().__init__(geometry, arch, target, layer_offset, dev, max_positions, rope_extras)
        hidden = geometry.hidden_size
        if target.hidden_size != hidden:
            raise BadInput(
                f"EAGLE-1 draft hidden_size {hidden} differs from the target's {target.hidden_size}"
            )
        self.spec = spec or draft_layer_spec(geometry)
        use_bias = arch.fc_bias if fc_bias is None else fc_bias
        self.fc_weight = new_param((hidden, 2 * hidden), dtype, dev)
        self.fc_bias = new_param((hidden,), dtype, dev) if use_bias else None
        self.layers = nn.ModuleList(
            DecoderLayer(self.spec, dtype, dev, input_norm=i > 0)
            for i in range(geometry.num_hidden_layers)
        )
        self.vocab_size = target.vocab_size

    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        hidden_in: torch.Tensor,
        attention: AttentionFn,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(hidden for logits, hidden for the next step): the same tensor for EAGLE-1."""
        emb = self.target.embed_tokens(input_ids)
        h = F.linear(torch.cat([emb, hidden_in], dim=-1), self.fc_weight, self.fc_bias)
        for i, layer in enumerate(self.layers):
            h = layer(h, positions, self.cos_sin_cache, attention, self.layer_offset + i)
        return h, h

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.target.compute_logits(hidden)

    def draft_to_target(self, ids: torch.Tensor) -> torch.Tensor:
        """EAGLE-1 drafts over the target vocabulary: the identity."""
        return ids

    def prefill_feature(self, hidden: torch.Tensor, aux: torch.Tensor | None) -> torch.Tensor:
        """EAGLE-1 consumes the target's final (normed) hidden state as is."""
        return hidden


class Eagle1Build:
    kind = DraftKind.EAGLE1
    module = Eagle1Draft
    mla_target = False
    extra_lookahead_slots = 0

    def arch(self, pair: Pair, framework: str) -> DraftArch:
        facts, target = pair.draft_facts, pair.target
        assert facts is not None and target is not None
        bias = facts.fc_bias_tensor if facts.fc_bias_tensor is not None else bool(facts.config_bias)
        return DraftArch(DraftKind.EAGLE1, target.geometry.hidden_size, fc_bias=bias)

    def aux_layer_ids(self, pair: Pair, framework: str) -> tuple[int, ...]:
        return ()

    def kv_layers(self, pair: Pair, framework: str) -> list[tuple[int, int]]:
        return stacked_kv_layers(pair)

    def random(
        self, arch: DraftArch, target: TargetModel, args: BuildArgs, gen: torch.Generator
    ) -> Eagle1Draft:
        draft = Eagle1Draft(
            args.geometry,
            arch,
            target,
            **args.module_kwargs(),
        )
        fill_random(draft, gen)
        return draft

    def load(
        self, index: CheckpointIndex, arch: DraftArch, target: TargetModel, args: BuildArgs
    ) -> Eagle1Draft:
        plan = Plan(index)
        draft = Eagle1Draft(
            args.geometry,
            arch,
            target,
            **args.module_kwargs(),
            spec=detect_layer_spec(draft_layer_spec(args.geometry), plan, ["layers.0."]),
            fc_bias=plan.has(["fc.bias"]),
        )
        plan.add(draft.fc_weight, ["fc.weight"])
        if draft.fc_bias is not None:
            plan.add(draft.fc_bias, ["fc.bias"])
        for i, layer in enumerate(modules_of(draft.layers, DecoderLayer)):
            plan_layer(plan, layer, [f"layers.{i}."])
        # vLLM shares the target embedding for EAGLE-1 and skips a stored copy.
        plan.note(["embed_tokens.weight"], (target.vocab_size, args.geometry.hidden_size))
        draft.extra_tensors = plan.run(args.device)
        return draft

    def speculator(
        self, pair: Pair, num_speculative_tokens: int, framework: str
    ) -> SpeculatorStyle:
        return SpeculatorStyle.EAGLE

    def dense_drafts(self, draft: Draft, verified: Verified) -> list[int]:
        return autoregressive_drafts(draft, verified)


BUILD = Eagle1Build()
