"""Load MLA targets and MTP drafts from safetensors, and build them with seeded random weights.

Names are DeepSeek's (`model.layers.{i}.self_attn.q_a_proj`, `kv_a_proj_with_mqa`,
`kv_b_proj`, `mlp.experts.{e}.*`, `mlp.gate.e_score_correction_bias`) and, for MTP module j
of a target with L layers, `model.layers.{L+j}.{enorm,hnorm,eh_proj,shared_head.norm,
shared_head.head,embed_tokens}` beside the block's own names. The module's `embed_tokens` and
`shared_head.head` are copies of the target's: they are shape-checked and shared, as vLLM
shares them. Qwen-style drafts name the same parts `mtp.pre_fc_norm_embedding`,
`mtp.pre_fc_norm_hidden`, `mtp.fc`, `mtp.layers.{j}.*`, `mtp.norm` and `mtp.lm_head` (or the
target's head when `share_lm_head`). Checkpoints store the rope dims interleaved; they are
permuted after loading (see `models.mla`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from eaglegraph.models.drafts.base import BuildArgs
from eaglegraph.models.layers import GatedMLP, modules_of
from eaglegraph.models.loading import (
    Plan,
    _plan_mlp,
    folder_rope_extras,
    open_index,
    plan_head,
    resolve_dtype,
)
from eaglegraph.models.mla import MLAAttention, MLADecoderLayer, MLATarget
from eaglegraph.models.moe import RoutedMoE
from eaglegraph.models.mtp import MTPArch, MTPDraft, MTPModule, StandardBlock, Target
from eaglegraph.pair.geometry import Geometry
from eaglegraph.pair.mla import MLADims, MoEDims
from eaglegraph.pair.tensors import CheckpointIndex


def deinterleave_rope_(attn: MLAAttention) -> None:
    """Rope rows from interleaved pairs (x0, x1), (x2, x3)… to rotate-half order."""
    m, nh = attn.mla, attn.num_heads
    rope, half, nope = m.qk_rope_head_dim, m.qk_rope_head_dim // 2, m.qk_nope_head_dim
    with torch.no_grad():
        q = attn.q_b_weight.view(nh, m.qk_head_dim, -1)
        part = q[:, nope:].reshape(nh, half, 2, -1).transpose(1, 2).reshape(nh, rope, -1)
        q[:, nope:] = part.clone()
        kv = attn.kv_a_weight
        part = kv[m.kv_lora_rank :].reshape(half, 2, -1).transpose(0, 1).reshape(rope, -1)
        kv[m.kv_lora_rank :] = part.clone()


def _plan_moe(plan: Plan, moe: RoutedMoE, prefix: str) -> None:
    inter = moe.moe.moe_intermediate_size
    plan.add(moe.gate_weight, [f"{prefix}mlp.gate.weight"])
    plan.add(moe.e_score_correction_bias, [f"{prefix}mlp.gate.e_score_correction_bias"], False)
    for e in range(moe.moe.n_routed_experts):
        p = f"{prefix}mlp.experts.{e}."
        plan.add(moe.gate_up[e, :inter], [p + "gate_proj.weight"])
        plan.add(moe.gate_up[e, inter:], [p + "up_proj.weight"])
        plan.add(moe.down[e], [p + "down_proj.weight"])
    if moe.shared is not None:
        shared, p = moe.shared, f"{prefix}mlp.shared_experts."
        width = shared.down_weight.shape[1]
        plan.add(shared.gate_up_weight[:width], [p + "gate_proj.weight"])
        plan.add(shared.gate_up_weight[width:], [p + "up_proj.weight"])
        plan.add(shared.down_weight, [p + "down_proj.weight"])


def _plan_mla_layer(plan: Plan, layer: MLADecoderLayer, prefix: str) -> None:
    a, s = layer.self_attn, f"{prefix}self_attn."
    plan.add(layer.input_layernorm.weight, [prefix + "input_layernorm.weight"])
    plan.add(layer.post_attention_layernorm.weight, [prefix + "post_attention_layernorm.weight"])
    if a.q_a_weight is not None and a.q_a_norm is not None:
        plan.add(a.q_a_weight, [s + "q_a_proj.weight"])
        plan.add(a.q_a_norm.weight, [s + "q_a_layernorm.weight"])
        plan.add(a.q_b_weight, [s + "q_b_proj.weight"])
    else:
        plan.add(a.q_b_weight, [s + "q_proj.weight"])
    plan.add(a.kv_a_weight, [s + "kv_a_proj_with_mqa.weight"])
    plan.add(a.kv_a_norm.weight, [s + "kv_a_layernorm.weight"])
    plan.add(a.kv_b_weight, [s + "kv_b_proj.weight"])
    plan.add(a.o_weight, [s + "o_proj.weight"])
    if isinstance(layer.mlp, RoutedMoE):
        _plan_moe(plan, layer.mlp, prefix)
    else:
        assert isinstance(layer.mlp, GatedMLP)
        _plan_mlp(plan, layer.mlp, [prefix])


def load_mla_target(
    folder: Path | str,
    geometry: Geometry,
    mla: MLADims,
    moe: MoEDims | None,
    dtype: torch.dtype | str,
    device: torch.device | str,
    *,
    rope_interleave: bool = True,
    max_positions: int | None = None,
    rope_extras: Mapping[str, Any] | None = None,
) -> MLATarget:
    """A DeepSeek-style target; MTP layers stay in `extra_tensors` for the draft loader."""
    folder = Path(folder)
    index = open_index(folder)
    plan = Plan(index)
    model = MLATarget(
        geometry,
        mla,
        moe,
        resolve_dtype(dtype),
        torch.device(device),
        max_positions=max_positions,
        rope_extras=folder_rope_extras(folder) if rope_extras is None else rope_extras,
    )
    plan.add(model.embed_tokens.weight, ["model.embed_tokens.weight"])
    for i, layer in enumerate(model.layers):
        _plan_mla_layer(plan, layer, f"model.layers.{i}.")  # type: ignore[arg-type]
    plan_head(plan, model.norm, model.lm_head, "model.")
    model.extra_tensors = plan.run(torch.device(device))
    if rope_interleave:
        for layer in model.layers:
            deinterleave_rope_(layer.self_attn)  # type: ignore[arg-type]
    return model


def _plan_standard_block(plan: Plan, block: StandardBlock, prefix: str) -> None:
    a, s = block.self_attn, block.self_attn.spec
    q_rows = s.q_width * (2 if a.gate else 1)
    p = f"{prefix}self_attn."
    plan.add(a.qkv_weight[:q_rows], [p + "q_proj.weight"])
    plan.add(a.qkv_weight[q_rows : q_rows + s.kv_width], [p + "k_proj.weight"])
    plan.add(a.qkv_weight[q_rows + s.kv_width :], [p + "v_proj.weight"])
    plan.add(a.o_weight, [p + "o_proj.weight"])
    plan.add(a.q_norm.weight, [p + "q_norm.weight"])
    plan.add(a.k_norm.weight, [p + "k_norm.weight"])
    plan.add(block.input_layernorm.weight, [prefix + "input_layernorm.weight"])
    plan.add(block.post_attention_layernorm.weight, [prefix + "post_attention_layernorm.weight"])
    _plan_mlp(plan, block.mlp, [prefix])


def mtp_module_names(style: str, num_target_layers: int, index: int) -> dict[str, str]:
    """Checkpoint names of module `index`'s parts (prefix for the block)."""
    if style == "deepseek":
        p = f"model.layers.{num_target_layers + index}."
        return {
            "enorm": p + "enorm.weight",
            "hnorm": p + "hnorm.weight",
            "eh_proj": p + "eh_proj.weight",
            "shared_norm": p + "shared_head.norm.weight",
            "head": p + "shared_head.head.weight",
            "embed": p + "embed_tokens.weight",
            "block": p,
        }
    p = "mtp."
    return {
        "enorm": p + "pre_fc_norm_embedding.weight",
        "hnorm": p + "pre_fc_norm_hidden.weight",
        "eh_proj": p + "fc.weight",
        "shared_norm": p + "norm.weight",
        "head": p + "lm_head.weight",
        "embed": "embed_tokens.weight",
        "block": f"{p}layers.{index}.",
    }


def load_mtp_draft(
    index: CheckpointIndex, arch: MTPArch, target: Target, args: BuildArgs
) -> MTPDraft:
    """MTP modules from `index` (the target's own folder for DeepSeek-style MTP); the modules
    follow the target's layers and take the folder's rope keys, whatever `args` says."""
    plan = Plan(index)
    dev = args.device
    rope = folder_rope_extras(index.folder)
    args = replace(args, layer_offset=target.num_layers, rope_extras=rope)
    draft = MTPDraft(arch, target, args)
    geometry = args.geometry
    shape = (target.vocab_size, geometry.hidden_size)
    for i, module in enumerate(modules_of(draft.modules_, MTPModule)):
        names = mtp_module_names(arch.style, target.num_layers, i)
        plan.add(module.enorm.weight, [names["enorm"]])
        plan.add(module.hnorm.weight, [names["hnorm"]])
        plan.add(module.eh_proj, [names["eh_proj"]])
        plan.add(module.shared_norm.weight, [names["shared_norm"]])
        if module.head is not None:
            plan.add(module.head, [names["head"]])
        else:
            plan.note([names["head"]], shape)
        plan.note([names["embed"]], shape)
        if isinstance(module.block, MLADecoderLayer):
            _plan_mla_layer(plan, module.block, names["block"])
        else:
            _plan_standard_block(plan, module.block, names["block"])  # type: ignore[arg-type]
    unused = plan.run(dev)
    if arch.style == "deepseek":
        # the target's own tensors are the target loader's business
        unused = tuple(n for n in unused if _is_mtp_name(n, target.num_layers))
        if arch.rope_interleave:
            for module in modules_of(draft.modules_, MTPModule):
                deinterleave_rope_(module.block.self_attn)  # type: ignore[arg-type]
    draft.extra_tensors = unused
    return draft


def _is_mtp_name(name: str, num_layers: int) -> bool:
    parts = name.split(".")
    return (
        len(parts) > 2
        and parts[1] == "layers"
        and parts[2].isdigit()
        and (int(parts[2]) >= num_layers)
    )
