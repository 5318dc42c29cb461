"""Bytes per weight of a quantized checkpoint, from its config (no weights read).

A quantized checkpoint stores its projection matrices packed (FP8, FP4, int4) with scales
beside them, and everything else — embeddings, norms, routers, often the lm_head and
sometimes attention — in the model dtype. The spellings read here are the public ones:

- `quantization_config.quant_method` `fp8` with or without `weight_block_size` (DeepSeek-V3:
  FP8 E4M3 weights, one fp32 `weight_scale_inv` per 128×128 block);
- `modelopt` (or a `hf_quant_config.json` next to the config) with `quant_algo` FP8 / NVFP4
  (FP4 values two to a byte, one FP8 scale per 16, `exclude_modules`);
- `mxfp4` (gpt-oss: routed experts only, one E8M0 scale per 32, `modules_to_not_convert`);
- `awq` / `gptq` int4 with `group_size` (fp16 scale and packed zero point per group);
- `compressed-tensors` `config_groups.*.weights` (num_bits, type, group_size, `ignore`).

When the checkpoint's safetensors headers are present their per-tensor dtypes win: these
rules only size a config-only folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eaglegraph.errors import BadInput
from eaglegraph.pair.config import Config
from eaglegraph.serial import read_json_file

HF_QUANT_CONFIG = "hf_quant_config.json"

# the weight groups a rule may cover (sizing splits a model's parameters into these)
EMBED = "embed"  # embeddings and lm_head
ATTENTION = "attention"  # attention / linear-attention / mamba projections
MLP = "mlp"  # dense and shared-expert MLP matrices
EXPERTS = "experts"  # routed experts
OTHER = "other"  # norms, biases, routers, convolutions, state parameters
VISION = "vision"  # a multimodal wrapper's vision tower and projector
GROUPS = (EMBED, ATTENTION, MLP, EXPERTS, OTHER, VISION)


@dataclass(frozen=True)
class Quantization:
    """How many bytes one parameter of each group takes; groups absent use the model dtype."""

    method: str
    description: str
    bytes_per_param: dict[str, float] = field(default_factory=dict)
    source: str = "quantization_config"

    def covers(self, group: str) -> bool:
        return group in self.bytes_per_param


def _ignored(groups: tuple[str, ...], ignore: list[str]) -> tuple[str, ...]:
    """The groups left quantized once `ignore` / `exclude_modules` patterns are applied (a
    pattern naming a whole attention block or MLP takes its group out; lm_head, routers and
    gates are never quantized here anyway)."""
    keep = list(groups)
    for entry in (e.lower().rstrip("*.") for e in ignore):
        if entry.endswith(("self_attn", "attn", "attention", "mixer", "linear_attn")):
            keep = [g for g in keep if g != ATTENTION]
        elif entry.endswith("shared_expert"):
            keep = [g for g in keep if g != MLP]
        elif entry.endswith(".mlp"):
            keep = [g for g in keep if g not in (MLP, EXPERTS)]
    return tuple(keep)


def _str_list(value: Any) -> list[str]:
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _rule(groups: tuple[str, ...], per_param: float) -> dict[str, float]:
    return {g: per_param for g in groups}


_LINEAR = (ATTENTION, MLP, EXPERTS)


def _fp8(q: Config) -> Quantization:
    block = q.int_list("weight_block_size")
    ignore = _str_list(q.raw("ignored_layers")) + _str_list(q.raw("modules_to_not_convert"))
    groups = _ignored(_LINEAR, ignore)
    if block:
        if len(block) != 2 or min(block) < 1:
            raise BadInput(f"{q.source}: 'weight_block_size' must be two positive integers")
        per = 1 + 4 / (block[0] * block[1])  # fp32 scale per block
        return Quantization("fp8", f"FP8 block {block[0]}×{block[1]}", _rule(groups, per))
    return Quantization("fp8", "FP8 per-tensor", _rule(groups, 1.0))


def _modelopt(q: Config, source: str) -> Quantization:
    algo = (q.str("quant_algo", default="") or "").upper()
    ignore = _str_list(q.raw("exclude_modules")) + _str_list(q.raw("ignore"))
    groups = _ignored(_LINEAR, ignore)
    if "FP4" in algo:
        group = q.int("group_size", default=16, minimum=1)
        per = 0.5 + 1 / group  # FP8 scale per group of 16
        return Quantization(
            "modelopt", f"ModelOpt {algo} (group {group})", _rule(groups, per), source
        )
    if "FP8" in algo:
        return Quantization("modelopt", f"ModelOpt {algo}", _rule(groups, 1.0), source)
    raise BadInput(f"{source}: unsupported ModelOpt quant_algo {algo or '(none)'!r}")


def _int_groups(q: Config, method: str) -> Quantization:
    bits = q.int("bits", default=None, minimum=1) or q.int("w_bit", default=4, minimum=1)
    group = q.int("group_size", default=None, minimum=-1)
    if group is None:
        group = q.int("q_group_size", default=128, minimum=-1)
    ignore = _str_list(q.raw("modules_to_not_convert"))
    groups = _ignored(_LINEAR, ignore)
    # an fp16 scale and a packed zero point per group (-1: one group per row, negligible)
    per = bits / 8 + ((2 + bits / 8) / group if group > 0 else 0)
    label = f"{method.upper()} int{bits}" + (f", group {group}" if group > 0 else "")
    return Quantization(method, label, _rule(groups, per))


def _compressed(q: Config) -> Quantization:
    groups_cfg = q.dict("config_groups") or {}
    weights = None
    for spec in groups_cfg.values():
        if isinstance(spec, dict) and isinstance(spec.get("weights"), dict):
            weights = Config(spec["weights"], f"{q.source}:config_groups")
            break
    if weights is None:
        raise BadInput(f"{q.source}: compressed-tensors config has no config_groups weights")
    bits = weights.int("num_bits", minimum=1)
    kind = weights.str("type", default="int")
    group = weights.int("group_size", default=None, minimum=1)
    groups = _ignored(_LINEAR, _str_list(q.raw("ignore")))
    if kind == "float" and bits == 4:
        per = 0.5 + 1 / (group or 16)
        label = "compressed-tensors NVFP4"
    elif group:
        zero = 0 if weights.bool("symmetric", default=True) else bits / 8
        per = bits / 8 + (2 + zero) / group
        label = f"compressed-tensors {kind}{bits}, group {group}"
    else:
        per = bits / 8
        label = f"compressed-tensors {kind}{bits}"
    return Quantization("compressed-tensors", label, _rule(groups, per))


def _mxfp4(q: Config) -> Quantization:
    ignore = _str_list(q.raw("modules_to_not_convert"))
    # gpt-oss quantizes the routed experts only (attention, router, embeddings stay bf16)
    groups = tuple(g for g in _ignored(_LINEAR, ignore) if g == EXPERTS or not ignore)
    return Quantization("mxfp4", "MXFP4 (group 32, E8M0 scales)", _rule(groups, 0.5 + 1 / 32))


def read_quantization(cfg: Config, folder: Path | None = None) -> Quantization | None:
    """The checkpoint's quantization, from `quantization_config` (also a multimodal wrapper's
    `text_config`) or a ModelOpt `hf_quant_config.json`; None for an unquantized model."""
    q = cfg.sub("quantization_config")
    if q is None:
        text = cfg.sub("text_config")
        q = text.sub("quantization_config") if text is not None else None
    if q is None and folder is not None and (folder / HF_QUANT_CONFIG).is_file():
        data = read_json_file(folder / HF_QUANT_CONFIG, what="ModelOpt quantization config")
        inner = data.get("quantization") if isinstance(data, dict) else None
        if not isinstance(inner, dict):
            raise BadInput(f"{folder / HF_QUANT_CONFIG}: expected a 'quantization' object")
        return _modelopt(Config(inner, str(folder / HF_QUANT_CONFIG)), HF_QUANT_CONFIG)
    if q is None:
        return None
    method = (q.str("quant_method", default="") or "").lower()
    if method == "fp8":
        return _fp8(q)
    if method in ("modelopt", "modelopt_fp4"):
        return _modelopt(q, "quantization_config")
    if method in ("awq", "gptq", "auto-round"):
        return _int_groups(q, method)
    if method == "compressed-tensors":
        return _compressed(q)
    if method == "mxfp4":
        return _mxfp4(q)
    return Quantization(method or "unknown", f"{method or 'unknown'} (not sized: model dtype)")
