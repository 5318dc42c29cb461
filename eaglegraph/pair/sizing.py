"""A model's parameters, weight bytes, KV and state per layer kind, from config alone.

What `inspect` reports before any weight is read: every figure is built per layer from the
layer plan (`pair.layer_kinds`), split into weight groups (`pair.quantization`) so a quantized
checkpoint is sized by its own rule, and says where it came from. The dtype unquantized weights
take is the engine's `dtype=auto` (`known.load_dtype`), not the config's fp32.
"""

from __future__ import annotations

from pathlib import Path

from eaglegraph.known.load_dtype import auto_dtype, auto_dtype_source
from eaglegraph.pair.config import Config
from eaglegraph.pair.geometry import DTYPE_BYTES, Geometry
from eaglegraph.pair.layer_kinds import (
    ATTENTION_KINDS,
    DENSE,
    FULL,
    LINEAR,
    MAMBA,
    MOE,
    SLIDING,
    LayerPlan,
    expert_count,
    layer_plan,
    text_config,
)
from eaglegraph.pair.mla import mla_attention_params, mla_dims
from eaglegraph.pair.quantization import (
    ATTENTION,
    EMBED,
    EXPERTS,
    GROUPS,
    MLP,
    OTHER,
    VISION,
    Quantization,
    read_quantization,
)
from eaglegraph.results.sizing import SizingFacts

QK_NORM_TYPES = ("qwen3", "qwen3_moe", "qwen3_next", "gemma3", "gemma3_text", "glm4_moe")


class _Tally:
    """Parameters per weight group."""

    def __init__(self) -> None:
        self.groups = dict.fromkeys(GROUPS, 0)

    def add(self, group: str, n: int) -> None:
        self.groups[group] += int(n)

    @property
    def total(self) -> int:
        return sum(self.groups.values())


def _attention(t: _Tally, g: Geometry, src: Config) -> None:
    q_rows = g.q_width * (2 if src.bool("attn_output_gate", default=False) else 1)
    t.add(ATTENTION, g.hidden_size * (q_rows + 2 * g.kv_width) + g.q_width * g.hidden_size)
    if g.attention_bias:
        t.add(OTHER, g.q_width + 2 * g.kv_width)
    if g.model_type in QK_NORM_TYPES or src.bool("use_qk_norm", default=False):
        t.add(OTHER, 2 * g.head_dim)
    if src.has("sliding_window") and g.model_type == "gpt_oss":
        t.add(OTHER, g.num_attention_heads)  # attention sinks


def _gdn(src: Config, h: int) -> tuple[int, int, int, int]:
    """Gated DeltaNet widths: key heads×dim, value heads×dim, value heads, conv kernel."""
    nk = src.int("linear_num_key_heads", minimum=1)
    nv = src.int("linear_num_value_heads", minimum=1)
    dk = src.int("linear_key_head_dim", minimum=1)
    dv = src.int("linear_value_head_dim", minimum=1)
    kernel = src.int("linear_conv_kernel_dim", default=4, minimum=1)
    return nk * dk, nv * dv, nv, kernel


def _linear_attention(t: _Tally, src: Config, h: int) -> None:
    k, v, nv, kernel = _gdn(src, h)
    t.add(ATTENTION, h * (2 * k + 2 * v) + h * 2 * nv + v * h)  # qkvz, ba, out
    t.add(OTHER, (2 * k + v) * kernel + 2 * nv + v // nv)  # conv1d, dt_bias, A_log, norm


def _mamba_dims(src: Config, h: int) -> tuple[int, int, int, int, int]:
    """d_inner, heads, groups×state, state, conv kernel (Mamba-2 names, Mamba-1 fallbacks)."""
    heads = src.int("mamba_num_heads", default=None, minimum=1)
    head_dim = src.int("mamba_head_dim", default=None, minimum=1)
    expand = src.int("mamba_expand", default=None, minimum=1) or src.int(
        "expand", default=2, minimum=1
    )
    inner = heads * head_dim if heads and head_dim else expand * h
    state = (
        src.int("ssm_state_size", default=None, minimum=1)
        or src.int("mamba_d_state", default=None, minimum=1)
        or src.int("state_size", default=16, minimum=1)
    )
    groups = src.int("n_groups", default=None, minimum=1) or src.int(
        "mamba_n_groups", default=1, minimum=1
    )
    kernel = (
        src.int("conv_kernel", default=None, minimum=1)
        or src.int("mamba_d_conv", default=None, minimum=1)
        or 4
    )
    return inner, heads or 0, groups * state, state, kernel


def _mamba(t: _Tally, src: Config, h: int) -> None:
    inner, heads, gs, state, kernel = _mamba_dims(src, h)
    if heads:  # Mamba-2: one in_proj for x, z, B, C and dt
        t.add(ATTENTION, h * (2 * inner + 2 * gs + heads) + inner * h)
        t.add(OTHER, (inner + 2 * gs) * kernel + 3 * heads + inner)
        return
    dt_rank = src.int("mamba_dt_rank", default=None, minimum=1) or -(-h // 16)
    t.add(ATTENTION, h * 2 * inner + inner * (dt_rank + 2 * state) + dt_rank * inner + inner * h)
    t.add(OTHER, inner * kernel + inner * state + 3 * inner)


def _mlp_width(src: Config, routed: bool) -> int:
    if routed:
        return src.int("moe_intermediate_size", default=None, minimum=1) or src.int(
            "intermediate_size", minimum=1
        )
    return src.int("intermediate_size_mlp", default=None, minimum=1) or src.int(
        "intermediate_size", minimum=1
    )


def _matrices(src: Config) -> int:
    """Gated MLPs hold gate, up and down; Nemotron-H's relu² MLP only up and down."""
    act = src.str("mlp_hidden_act", default=None) or src.str("hidden_act", default="silu")
    return 2 if act in ("relu2", "relu_squared") else 3


def _is(src: Config, *model_types: str) -> bool:
    return src.str("model_type", default="") in model_types


def _moe(t: _Tally, src: Config, h: int) -> None:
    found = expert_count(src)
    assert found is not None
    experts = found[0]
    width = _mlp_width(src, True)
    mats = _matrices(src)
    t.add(EXPERTS, experts * mats * h * width)
    t.add(OTHER, experts * h)  # router
    if _is(src, "gpt_oss"):
        t.add(OTHER, experts * (2 * width + h) + experts)  # expert and router biases
    if src.has("n_routed_experts") and src.str("topk_method", default="") == "noaux_tc":
        t.add(OTHER, experts)  # e_score_correction_bias
    shared = src.int("n_shared_experts", default=0) or 0
    shared_width = src.int("shared_expert_intermediate_size", default=None, minimum=1) or src.int(
        "moe_shared_expert_intermediate_size", default=None, minimum=1
    )
    if shared_width:
        t.add(MLP, mats * h * shared_width)
        if src.has("shared_expert_intermediate_size"):
            t.add(OTHER, h)  # Qwen's shared_expert_gate
    elif shared:
        t.add(MLP, shared * mats * h * width)
    elif _is(src, "llama4_text", "llama4"):
        t.add(MLP, mats * h * src.int("intermediate_size", minimum=1))  # one shared expert


def _indexer(t: _Tally, src: Config, h: int, q_in: int) -> None:
    """DeepSeek-V3.2's sparse-attention indexer (`index_n_heads` × `index_head_dim`)."""
    heads = src.int("index_n_heads", default=None, minimum=1)
    if heads is None:
        return
    dim = src.int("index_head_dim", minimum=1)
    t.add(ATTENTION, q_in * heads * dim + h * dim)  # wq_b, wk
    t.add(OTHER, h * heads + 2 * dim)  # weights_proj, k_norm


def _layers(t: _Tally, g: Geometry, src: Config, plan: LayerPlan, cfg: Config) -> None:
    h = g.hidden_size
    mla = mla_dims(cfg)
    for mixer, mlp in zip(plan.mixers, plan.mlps, strict=True):
        if mixer in ATTENTION_KINDS:
            if mla is not None:
                t.add(ATTENTION, mla_attention_params(h, g.num_attention_heads, mla))
                _indexer(t, src, h, mla.q_lora_rank or h)
            else:
                _attention(t, g, src)
        elif mixer == LINEAR:
            _linear_attention(t, src, h)
        elif mixer == MAMBA:
            _mamba(t, src, h)
        if mlp == MOE:
            _moe(t, src, h)
        elif mlp == DENSE:
            t.add(MLP, _matrices(src) * h * _mlp_width(src, False))
        t.add(OTHER, 2 * h)  # the layer's norms


def _vision(cfg: Config, text_hidden: int) -> int:
    """A ViT tower and its projector from `vision_config` (self-attention and MLP blocks with
    biases, patch embedding, position table)."""
    v = cfg.sub("vision_config")
    if v is None:
        return 0
    h = v.int("hidden_size", default=None, minimum=1) or v.int("width", default=0)
    if not h:
        return 0
    inter = v.int("intermediate_size", default=4 * h, minimum=1)
    layers = v.int("num_hidden_layers", default=None, minimum=1) or v.int(
        "depth", default=0, minimum=0
    )
    patch = v.int("patch_size", default=14, minimum=1)
    channels = v.int("num_channels", default=3, minimum=1)
    image = v.int("image_size", default=None, minimum=1)
    per_layer = 4 * h * h + 4 * h + 2 * h * inter + inter + h + 4 * h
    positions = (image // patch) ** 2 * h if image else 0
    out = v.int("out_hidden_size", default=None, minimum=1) or v.int(
        "projector_output_dim", default=None, minimum=1
    )
    projector = h * (out or text_hidden)
    return layers * per_layer + channels * patch * patch * h + positions + projector


def _mtp_layers(src: Config) -> int:
    return (
        src.int("num_nextn_predict_layers", default=None, minimum=0)
        or src.int("mtp_num_hidden_layers", default=None, minimum=0)
        or 0
    )


def _state_bytes(src: Config, h: int, mixer: str, nbytes: int) -> int:
    """One request's fixed state in a linear-attention or Mamba layer: conv window + SSM."""
    if mixer == LINEAR:
        k, v, nv, kernel = _gdn(src, h)
        return (
            (2 * k + v) * (kernel - 1) + nv * (k // src.int("linear_num_key_heads")) * (v // nv)
        ) * nbytes
    inner, heads, gs, state, kernel = _mamba_dims(src, h)
    conv = (inner + 2 * gs if heads else inner) * (kernel - 1)
    return (conv + inner * state) * nbytes


def size_model(
    g: Geometry,
    cfg: Config,
    folder: Path | None = None,
    engine: str = "vllm",
) -> SizingFacts:
    """The model's sizing from its config (the headers, when present, replace the bytes)."""
    src = text_config(cfg)
    plan = layer_plan(cfg, g.num_hidden_layers)
    quant = read_quantization(cfg, folder)
    load = auto_dtype(engine, g.dtype, g.model_type)
    nbytes = DTYPE_BYTES[load]
    t = _Tally()
    t.add(EMBED, g.vocab_size * g.hidden_size * (1 if g.tie_word_embeddings else 2))
    t.add(OTHER, g.hidden_size)  # final norm
    _layers(t, g, src, plan, cfg)
    t.add(VISION, _vision(cfg, g.hidden_size))
    mtp = _mtp_layers(src)
    extra = _Tally()
    if mtp:
        # MTP modules: one more decoder layer each (routed as the last layer is), eh_proj,
        # three norms; DeepSeek-style checkpoints also store an embedding and head copy
        last = LayerPlan(plan.mixers[-1:], "", [plan.mlps[-1]], "", None)
        for _ in range(mtp):
            _layers(extra, g, src, last, cfg)
            extra.add(ATTENTION, 2 * g.hidden_size * g.hidden_size)
            extra.add(OTHER, 3 * g.hidden_size)
            if src.has("num_nextn_predict_layers"):
                extra.add(EMBED, 2 * g.vocab_size * g.hidden_size)
    weight_bytes = _bytes(t, quant, nbytes)
    checkpoint = weight_bytes + _bytes(extra, quant, nbytes)
    counts = {k: plan.count(k) for k in (FULL, SLIDING, LINEAR, MAMBA) if plan.count(k)}
    found = expert_count(src)
    moe = None
    if found is not None and MOE in plan.mlps:
        moe = (
            f"{found[0]} experts ({found[1]}), {plan.mlps.count(MOE)} of "
            f"{len(plan.mlps)} layers routed ({plan.mlps_source})"
        )
    state_kind = next((k for k in (LINEAR, MAMBA) if k in plan.mixers), None)
    state = _state_bytes(src, g.hidden_size, state_kind, nbytes) if state_kind else 0
    dtype_source = (
        f"config dtype {g.dtype}"
        if load == g.dtype
        else f"config dtype {g.dtype or 'unset'} loads as {load} under dtype=auto "
        f"({auto_dtype_source(engine)})"
    )
    return SizingFacts(
        parameters=t.total,
        parameters_source=_parameters_source(plan, moe, t),
        weight_bytes=weight_bytes,
        checkpoint_weight_bytes=checkpoint,
        mtp_parameters=extra.total,
        weight_bytes_source=(
            f"config: {quant.description} on {', '.join(quant.bytes_per_param)}, the rest in {load}"
            if quant is not None and quant.bytes_per_param
            else f"config: parameters × {nbytes} bytes ({load})"
        ),
        load_dtype=load,
        load_dtype_source=dtype_source,
        quantization=quant.description if quant is not None else None,
        layer_kinds=counts,
        layer_kinds_source=plan.mixers_source,
        sliding_window=plan.sliding_window,
        moe=moe,
        vision_parameters=t.groups[VISION],
        state_bytes_per_request_layer=state,
        groups={k: v for k, v in t.groups.items() if v},
        notes=_notes(quant, folder),
        group_bytes=_group_bytes(t, quant, nbytes),
        mtp_groups={k: v for k, v in extra.groups.items() if v},
        mtp_group_bytes=_group_bytes(extra, quant, nbytes),
    )


def _notes(quant: Quantization | None, folder: Path | None) -> list[str]:
    notes = []
    if quant is not None and folder is not None and any(folder.glob("*.safetensors")):
        notes.append(
            "the safetensors headers give the weight bytes; their element counts are not "
            "parameters for packed formats (two FP4 or eight int4 values an element): the "
            "parameter count is the config's"
        )
    if quant is not None and not quant.bytes_per_param:
        notes.append(
            f"quantization {quant.method!r} is not sized: weights taken in the model dtype"
        )
    return notes


def _per_param(group: str, quant: Quantization | None, nbytes: int) -> float:
    return quant.bytes_per_param[group] if quant is not None and quant.covers(group) else nbytes


def _bytes(t: _Tally, quant: Quantization | None, nbytes: int) -> int:
    return int(sum(n * _per_param(group, quant, nbytes) for group, n in t.groups.items()))


def _group_bytes(t: _Tally, quant: Quantization | None, nbytes: int) -> dict[str, int]:
    """Bytes per non-empty weight group, each at its own rule (quantized or the load dtype)."""
    return {g: int(n * _per_param(g, quant, nbytes)) for g, n in t.groups.items() if n}


def _parameters_source(plan: LayerPlan, moe: str | None, t: _Tally) -> str:
    parts = ["config"]
    if moe:
        parts.append(moe)
    if t.groups[VISION]:
        parts.append("vision tower from vision_config")
    return "; ".join(parts)


def kv_layer_counts(cfg: Config, layers: int) -> tuple[int, int, int]:
    """(full-attention, sliding-window, state) layers among the first `layers`."""
    plan = layer_plan(cfg, layers)
    return (
        plan.count(FULL),
        plan.count(SLIDING),
        plan.count(LINEAR) + plan.count(MAMBA),
    )
