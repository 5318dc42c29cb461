"""Load targets and EAGLE drafts from safetensors, in every naming variant seen in the wild.

Every tensor is checked against the geometry from its header before any data is read, so a
wrong file fails with one line naming the tensor, the expected and the found shape. Data is
then read tensor by tensor with `safe_open` straight onto the device and copied into the
model's (fused) parameters, so peak memory stays near the model's own size.

Naming variants (research §1.2, §2.1–2.2, §4): an optional `model.` prefix on every name
(NeMo; lm_head stays bare), `midlayer.` or `layers.0.` for the EAGLE-3 layer, optional
`embed_tokens` / `lm_head` (shared with the target when absent), optional `fc.bias`, optional
`d2t` / `t2d`. Optional biases and q/k norms follow what the checkpoint holds, because
configs name them inconsistently (`bias`, `attention_bias`, `qkv_bias`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import torch
from safetensors import safe_open

from eaglegraph.errors import BadInput
from eaglegraph.models.layers import (
    Attention,
    DecoderLayer,
    GatedMLP,
    LayerSpec,
    RMSNorm,
    modules_of,
)
from eaglegraph.models.rope import rope_extras_from_config
from eaglegraph.models.target import TargetModel, layer_spec, target_family
from eaglegraph.pair.config import Config
from eaglegraph.pair.geometry import Geometry
from eaglegraph.pair.tensors import CheckpointIndex, TensorInfo, read_checkpoint

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
_FLOAT_DTYPES = {"F16", "BF16", "F32", "F64"}
_INT_DTYPES = {"I64", "I32", "I16", "I8", "U8", "U16", "U32", "U64"}
_SHOW_MISSING = 5


def resolve_dtype(dtype: torch.dtype | str) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        if dtype not in DTYPES.values():
            raise BadInput(f"unsupported model dtype {dtype} (use bfloat16, float16 or float32)")
        return dtype
    name = dtype.removeprefix("torch.").lower()
    name = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32"}.get(
        name, name
    )
    if name not in DTYPES:
        raise BadInput(f"unsupported model dtype {dtype!r} (use bfloat16, float16 or float32)")
    return DTYPES[name]


def _variants(names: Sequence[str]) -> list[str]:
    """Each spelling, then the same with `model.` added or removed (NeMo-style exports)."""
    out: list[str] = []
    for name in names:
        other = name.removeprefix("model.") if name.startswith("model.") else f"model.{name}"
        for candidate in (name, other):
            if candidate not in out:
                out.append(candidate)
    return out


class Plan:
    """Tensor-to-parameter copies, validated from headers, executed only if all are valid."""

    def __init__(self, index: CheckpointIndex) -> None:
        self.index = index
        self.copies: list[tuple[torch.Tensor, TensorInfo]] = []
        self.missing: list[str] = []
        self.used: set[str] = set()

    def find(self, names: Sequence[str]) -> TensorInfo | None:
        return self.index.find(*_variants(names))

    def has(self, names: Sequence[str]) -> bool:
        return self.find(names) is not None

    def _check_shape(self, info: TensorInfo, shape: tuple[int, ...]) -> None:
        if info.shape != shape:
            raise BadInput(
                f"{self.index.folder}: tensor {info.name!r} has shape {list(info.shape)}, "
                f"expected {list(shape)} from the config"
            )

    def _check(self, info: TensorInfo, shape: tuple[int, ...], floating: bool) -> None:
        self._check_shape(info, shape)
        allowed = _FLOAT_DTYPES if floating else _INT_DTYPES
        if info.dtype not in allowed:
            kind = "a float" if floating else "an integer"
            raise BadInput(
                f"{self.index.folder}: tensor {info.name!r} has dtype {info.dtype}, expected {kind} "
                "type (quantized checkpoints are not supported)"
            )

    def add(self, dst: torch.Tensor, names: Sequence[str], required: bool = True) -> None:
        info = self.find(names)
        if info is None:
            if required:
                self.missing.append(names[0])
            return
        self._check(info, tuple(dst.shape), dst.dtype.is_floating_point)
        self.copies.append((dst, info))
        self.used.add(info.name)

    def note(self, names: Sequence[str], shape: tuple[int, ...]) -> None:
        """A known tensor this model does not use (shared copy, t2d): check its shape only."""
        info = self.find(names)
        if info is not None:
            self._check_shape(info, shape)
            self.used.add(info.name)

    def run(self, device: torch.device) -> tuple[str, ...]:
        """Copy every planned tensor; returns the names of tensors nothing used."""
        if self.missing:
            more = len(self.missing) - _SHOW_MISSING
            shown = ", ".join(self.missing[:_SHOW_MISSING]) + (
                f" (and {more} more)" if more > 0 else ""
            )
            raise BadInput(
                f"{self.index.folder}: missing {len(self.missing)} required tensor(s): {shown}"
            )
        by_file: dict[str, list[tuple[torch.Tensor, TensorInfo]]] = {}
        for dst, info in self.copies:
            by_file.setdefault(info.file, []).append((dst, info))
        target = _safetensors_device(device)
        with torch.no_grad():
            for file, items in by_file.items():
                with safe_open(str(self.index.folder / file), framework="pt", device=target) as fh:
                    for dst, info in items:
                        dst.copy_(fh.get_tensor(info.name))
        return tuple(sorted(set(self.index.tensors) - self.used))


def _safetensors_device(device: torch.device) -> str:
    """safe_open wants an explicit accelerator index; 'cuda' means the current device."""
    if device.type == "cpu":
        return "cpu"
    if device.index is None and device.type == "cuda":
        return f"cuda:{torch.cuda.current_device()}"
    return str(device)


def open_index(folder: Path) -> CheckpointIndex:
    index = read_checkpoint(folder)
    if index.format == "bin":
        raise BadInput(
            f"{folder}: only pytorch_model.bin weights found; convert them to safetensors"
        )
    if not index.has_weights:
        raise BadInput(f"{folder}: no safetensors weights found (use --random-weights)")
    return index


def folder_rope_extras(folder: Path) -> dict[str, Any]:
    path = folder / "config.json"
    return rope_extras_from_config(Config.read(path)) if path.exists() else {}


def detect_layer_spec(base: LayerSpec, plan: Plan, prefixes: Sequence[str]) -> LayerSpec:
    """Optional biases and q/k norm as the checkpoint's first layer holds them."""

    def present(suffix: str) -> bool:
        return plan.has([p + suffix for p in prefixes])

    return replace(
        base,
        qkv_bias=present("self_attn.q_proj.bias"),
        o_bias=present("self_attn.o_proj.bias"),
        qk_norm=present("self_attn.q_norm.weight"),
        mlp_bias=present("mlp.gate_proj.bias"),
    )


def _plan_attention(plan: Plan, attn: Attention, prefixes: Sequence[str]) -> None:
    s = attn.spec
    q, kv = s.q_width, s.kv_width
    rows = {"q_proj": slice(0, q), "k_proj": slice(q, q + kv), "v_proj": slice(q + kv, q + 2 * kv)}

    def names(suffix: str) -> list[str]:
        return [f"{p}self_attn.{suffix}" for p in prefixes]

    for proj, part in rows.items():
        plan.add(attn.qkv_weight[part], names(f"{proj}.weight"))
        if attn.qkv_bias is not None:
            plan.add(attn.qkv_bias[part], names(f"{proj}.bias"))
    plan.add(attn.o_weight, names("o_proj.weight"))
    if attn.o_bias is not None:
        plan.add(attn.o_bias, names("o_proj.bias"))
    if attn.q_norm is not None and attn.k_norm is not None:
        plan.add(attn.q_norm.weight, names("q_norm.weight"))
        plan.add(attn.k_norm.weight, names("k_norm.weight"))


def _plan_mlp(plan: Plan, mlp: GatedMLP, prefixes: Sequence[str]) -> None:
    inter = mlp.down_weight.shape[1]

    def names(suffix: str) -> list[str]:
        return [f"{p}mlp.{suffix}" for p in prefixes]

    plan.add(mlp.gate_up_weight[:inter], names("gate_proj.weight"))
    plan.add(mlp.gate_up_weight[inter:], names("up_proj.weight"))
    plan.add(mlp.down_weight, names("down_proj.weight"))
    if mlp.gate_up_bias is not None and mlp.down_bias is not None:
        plan.add(mlp.gate_up_bias[:inter], names("gate_proj.bias"))
        plan.add(mlp.gate_up_bias[inter:], names("up_proj.bias"))
        plan.add(mlp.down_bias, names("down_proj.bias"))


class PlannedLayer(Protocol):
    """What `plan_layer` reads of a Llama-shaped layer (a `DecoderLayer`, EAGLE-3's midlayer)."""

    @property
    def input_layernorm(self) -> RMSNorm | None: ...
    @property
    def self_attn(self) -> Attention: ...
    @property
    def post_attention_layernorm(self) -> RMSNorm: ...
    @property
    def mlp(self) -> GatedMLP: ...


def plan_head(plan: Plan, norm: RMSNorm, lm_head: torch.Tensor | None, prefix: str = "") -> None:
    """The final norm (`{prefix}norm.weight`) and the lm_head where the model has its own."""
    plan.add(norm.weight, [f"{prefix}norm.weight"])
    if lm_head is not None:
        plan.add(lm_head, ["lm_head.weight"])


def plan_layer(plan: Plan, layer: PlannedLayer, prefixes: Sequence[str]) -> None:
    if layer.input_layernorm is not None:
        plan.add(layer.input_layernorm.weight, [p + "input_layernorm.weight" for p in prefixes])
    hidden_norm = getattr(layer, "hidden_norm", None)  # EAGLE-3's midlayer norms h apart
    if hidden_norm is not None:
        plan.add(hidden_norm.weight, [p + "hidden_norm.weight" for p in prefixes])
    _plan_attention(plan, layer.self_attn, prefixes)
    plan.add(
        layer.post_attention_layernorm.weight,
        [p + "post_attention_layernorm.weight" for p in prefixes],
    )
    _plan_mlp(plan, layer.mlp, prefixes)


def load_target(
    folder: Path | str,
    geometry: Geometry,
    dtype: torch.dtype | str,
    device: torch.device | str,
    *,
    max_positions: int | None = None,
    rope_extras: Mapping[str, Any] | None = None,
) -> TargetModel:
    """A target from its folder. `model.extra_tensors` lists tensors that were not used."""
    folder = Path(folder)
    dev = torch.device(device)
    index = open_index(folder)
    plan = Plan(index)
    spec = detect_layer_spec(
        layer_spec(geometry, target_family(geometry)), plan, ["model.layers.0."]
    )
    model = TargetModel(
        geometry,
        resolve_dtype(dtype),
        dev,
        spec=spec,
        max_positions=max_positions,
        rope_extras=folder_rope_extras(folder) if rope_extras is None else rope_extras,
    )
    shape = (geometry.vocab_size, geometry.hidden_size)
    plan.add(model.embed_tokens.weight, ["model.embed_tokens.weight"])
    for i, layer in enumerate(modules_of(model.layers, DecoderLayer)):
        plan_layer(plan, layer, [f"model.layers.{i}."])
    plan_head(plan, model.norm, model.lm_head, "model.")
    if model.lm_head is None:
        # Tied: vLLM skips a stored lm_head copy and uses the embedding.
        plan.note(["lm_head.weight"], shape)
    model.extra_tensors = plan.run(dev)
    return model
