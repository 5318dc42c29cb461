"""Where MTP and DFlash drafts keep their weights, and what their configs say about them.

MTP comes in two shapes (research eagle-formats.md §3): modules inside the target checkpoint
(DeepSeek-V3/R1/V3.2 and GLM at `model.layers.{L+i}`, Qwen3-Next/3.5 under `mtp.`, MiniMax-M2
at `model.layers.{L+i}` and M3 under `model.mtp.layers.{i}`, MiMo under `model.mtp_layers.{i}`,
DeepSeek-V4 under `mtp.`) and separate draft folders (SpecForge
`Qwen3_5MTPDraftModel`: a one-layer Qwen3 config with `mtp_config`, weights under `mtp.`).
DFlash drafts are block drafters: `dflash_config` names the target layers they read and the
mask token that fills the block. Every verdict carries the evidence it rests on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from eaglegraph.known.mtp import unrun_mtp
from eaglegraph.pair.config import Config
from eaglegraph.pair.mla import MLADims, mla_dims
from eaglegraph.pair.tensors import CheckpointIndex

MTP_COUNT_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules")
_LAYER = re.compile(r"^model\.layers\.(\d+)\.")


@dataclass
class MTPLayout:
    """An MTP draft's layout: in the target (`in_target`) or its own folder."""

    style: str  # deepseek | qwen-next | minimax | mtp-prefix | specforge-qwen
    in_target: bool
    modules: int | None
    count_key: str | None
    prefix: str | None  # where module 0 lives, e.g. "model.layers.61."
    eh_proj_shape: list[int] | None
    attention: str  # "mla" | "standard"
    mla: MLADims | None
    share_lm_head: bool | None = None
    evidence: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class DFlashLayout:
    """A DFlash block drafter's facts from its config and headers."""

    block_size: int | None
    target_layer_ids: list[int] | None
    mask_token_id: int | None
    num_target_layers: int | None
    num_layers: int
    fc_in: int | None
    non_causal: bool
    evidence: list[str] = field(default_factory=list)


def _text(cfg: Config) -> Config:
    return cfg.sub("text_config") or cfg


def mtp_count(cfg: Config) -> tuple[int, str | None]:
    """Declared MTP modules (top level or `text_config`) and the key that declares them."""
    for source in (cfg, cfg.sub("text_config")):
        if source is None:
            continue
        for key in MTP_COUNT_KEYS:
            value = source.int(key, default=0, minimum=0)
            if value > 0:
                return value, key
    return 0, None


def _shape(index: CheckpointIndex | None, *names: str) -> list[int] | None:
    info = index.find(*names) if index is not None else None
    return list(info.shape) if info is not None else None


def in_target_mtp(cfg: Config, index: CheckpointIndex | None) -> MTPLayout | None:
    """MTP modules inside a target folder, or None when it has neither the key nor weights."""
    count, key = mtp_count(cfg)
    layers = _text(cfg).int("num_hidden_layers", default=None, minimum=None)
    names = list(index.tensors) if index is not None else []
    deep = [n for n in names if (m := _LAYER.match(n)) and isinstance(layers, int)
            and int(m.group(1)) >= layers]  # fmt: skip
    qwen = [n for n in names if n.startswith("mtp.")]
    minimax = [n for n in names if n.startswith("model.mtp.")]
    mimo = [n for n in names if n.startswith("model.mtp_layers.")]
    if not count and not (deep or qwen or minimax or mimo):
        return None
    evidence = [f"config {key} = {count}"] if count else []
    mla = mla_dims(cfg)
    attention = "mla" if mla is not None else "standard"
    if qwen or key == "mtp_num_hidden_layers":
        prefix, style = "mtp.", "qwen-next"
        eh = _shape(index, "mtp.fc.weight")
        if qwen:
            evidence.append(f"{len(qwen)} 'mtp.' tensors, e.g. {qwen[0]!r}")
    elif mimo or _text(cfg).str("model_type", default="") == "mimo":
        # MiMo: model.mtp_layers.{i} (token/hidden layernorms, input_proj, one Qwen2 layer)
        prefix, style = "model.mtp_layers.0.", "mimo"
        eh = _shape(index, prefix + "input_proj.weight")
        if mimo:
            evidence.append(f"{len(mimo)} 'model.mtp_layers.' tensors, e.g. {mimo[0]!r}")
    elif minimax or key == "num_mtp_modules":
        # MiniMax-M2 appends its modules past the stack (model.layers.{L+i}); M3 nests them
        m2 = not minimax and _text(cfg).str("model_type", default="") == "minimax_m2"
        prefix = f"model.layers.{layers}." if m2 else "model.mtp.layers.0."
        style = "minimax"
        eh = _shape(index, prefix + "eh_proj.weight")
        if minimax:
            evidence.append(f"{len(minimax)} 'model.mtp.' tensors, e.g. {minimax[0]!r}")
        elif deep:
            evidence.append(f"{len(deep)} tensors past layer {layers - 1}, e.g. {deep[0]!r}")
    else:
        prefix, style = f"model.layers.{layers}.", "deepseek"
        eh = _shape(index, prefix + "eh_proj.weight")
        if deep:
            evidence.append(f"{len(deep)} tensors past layer {layers - 1}, e.g. {deep[0]!r}")
    layout = MTPLayout(style, True, count or None, key, prefix, eh, attention, mla,
                       evidence=evidence)  # fmt: skip
    if eh is not None:
        proj = {"qwen-next": "fc", "mimo": "input_proj"}.get(style, "eh_proj")
        layout.evidence.append(f"{proj} {eh}")
    if count and not (deep or qwen or minimax or mimo) and index is not None and index.has_weights:
        layout.notes.append("config declares MTP layers but the weights have none (stripped?)")
    hidden = _text(cfg).int("hidden_size", default=None, minimum=None)
    if eh is not None and isinstance(hidden, int) and eh != [hidden, 2 * hidden]:
        layout.notes.append(f"eh_proj {eh} is not [hidden, 2·hidden] = [{hidden}, {2 * hidden}]")
    if mla is not None and _text(cfg).raw("head_dim") not in (None, mla.qk_head_dim):
        layout.notes.append(
            f"head_dim {_text(cfg).raw('head_dim')} is not the attention's: MLA uses "
            f"qk {mla.qk_head_dim} (nope {mla.qk_nope_head_dim} + rope "
            f"{mla.qk_rope_head_dim}), v {mla.v_head_dim}, cache row {mla.cache_width}"
        )
    return layout


def not_built_reason(layout: MTPLayout, cfg: Config) -> str | None:
    """Why the rig does not build this MTP layout (one line), or None when it does: it builds
    DeepSeek-style MLA modules in the target's checkpoint and separate standard-attention
    drafts."""
    if layout.in_target and layout.style == "deepseek" and layout.attention == "mla":
        return None
    if not layout.in_target and layout.attention == "standard":
        return None
    text = _text(cfg)
    types = text.str_list("layer_types") if text.has("layer_types") else []
    linear = sum(t == "linear_attention" for t in types)
    if linear:
        return (
            f"not built: the target has {linear} linear-attention (Gated DeltaNet) layers of "
            f"{len(types)} (layer_types), which the rig cannot run, so nothing feeds the module"
        )
    engines = unrun_mtp(text.str("model_type", default=""))
    if engines is not None:
        return f"not built: {engines}"
    where = layout.prefix or "?"
    return (
        f"not built: the rig builds MLA modules at model.layers.{{L+i}} and separate "
        f"standard-attention drafts, not {layout.attention}-attention modules at {where}*"
    )


def separate_mtp_draft(cfg: Config, names: set[str]) -> MTPLayout | None:
    """A separate MTP draft folder (SpecForge Qwen3.5 style), or None."""
    archs = cfg.str_list("architectures")
    evidence: list[str] = []
    for arch in archs:
        if "MTP" in arch and "Eagle" not in arch:
            evidence.append(f"architecture {arch!r} names an MTP draft")
    mtp_cfg = cfg.sub("mtp_config")
    if mtp_cfg is not None:
        evidence.append("config has 'mtp_config' (SpecForge MTP draft)")
    if "mtp.fc.weight" in names:
        evidence.append("tensor 'mtp.fc.weight' (MTP fusion projection)")
    if not evidence:
        return None
    share = mtp_cfg.bool("share_lm_head", default=True) if mtp_cfg is not None else None
    modules = cfg.int("num_hidden_layers", default=1, minimum=1)
    return MTPLayout(
        "specforge-qwen", False, modules, "num_hidden_layers", "mtp.", None,
        "mla" if mla_dims(cfg) is not None else "standard", mla_dims(cfg),
        share_lm_head=share, evidence=evidence,
    )  # fmt: skip


def dflash_layout(cfg: Config, index: CheckpointIndex | None) -> DFlashLayout:
    """DFlash facts: block size, target taps (output-of-layer ids), mask token, fc width."""
    dcfg = cfg.sub("dflash_config")
    ids = dcfg.int_list("target_layer_ids") if dcfg is not None else None
    if ids is None:
        ids = cfg.int_list("target_layer_ids")
    mask = dcfg.int("mask_token_id", default=None, minimum=0) if dcfg is not None else None
    causal = dcfg.raw("causal") if dcfg is not None else None
    fc = _shape(index, "fc.weight", "model.fc.weight")
    evidence = []
    if dcfg is not None:
        evidence.append("config has 'dflash_config'")
    if ids is not None:
        evidence.append(f"target_layer_ids {ids} (outputs of those target layers)")
    return DFlashLayout(
        block_size=cfg.int("block_size", default=None, minimum=1),
        target_layer_ids=ids,
        mask_token_id=mask,
        num_target_layers=cfg.int("num_target_layers", default=None, minimum=1),
        num_layers=cfg.int("num_hidden_layers", default=1, minimum=1),
        fc_in=fc[1] if fc is not None and len(fc) == 2 else None,
        non_causal=not bool(causal) if causal is not None else True,
        evidence=evidence,
    )
