"""Built-in target/draft pairs, written as real HF folders (config.json + model.safetensors).

Tiny presets carry deterministic, seeded weights small enough for CPU tests. Their weights are
random but shaped so that the draft agrees with the target part of the time: the target tends
to continue a token t with a fixed permutation π(t), and the draft is built to guess π (EAGLE-1,
through the token embedding) or π∘π (EAGLE-3, through the target's aux states). Acceptance is
then neither 0 nor 1, so partial-acceptance paths (rejected slots, shifted inputs) are really
exercised. The 8B presets are config-only with real public geometry, for `--random-weights`
GPU runs.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eaglegraph.errors import BadInput, closest, unknown_choice
from eaglegraph.known.tables import keyed
from eaglegraph.pair import presets_mtp
from eaglegraph.pair.kinds import DraftKind
from eaglegraph.pair.weights_file import save_safetensors

# numpy is imported where weights are built: triage reads presets' configs only, and the
# import cost each triage 0.1 s (issue 29).
if TYPE_CHECKING:
    import numpy as np

PRESET_FORMAT = 3  # bump when preset contents change, so caches are rebuilt


@dataclass(frozen=True)
class Preset:
    """`draft` None: the draft lives in the target's checkpoint (MTP layers)."""

    name: str
    description: str
    target: dict[str, Any]
    draft: dict[str, Any] | None
    kind: str
    with_weights: bool
    seed: int = 0


def _llama_target(**over: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 8,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 256,
        "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0,
        "rope_scaling": {
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 256,
        },
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "hidden_act": "silu",
        "bos_token_id": 1,
        "eos_token_id": 2,
    }
    cfg.update(over)
    return cfg


def _eagle1_draft(target: dict[str, Any]) -> dict[str, Any]:
    cfg = presets_mtp.inherited(target, without=("head_dim",))
    cfg.update(
        architectures=["LlamaForCausalLM"],
        model_type="llama",
        num_hidden_layers=1,
        tie_word_embeddings=False,
        bias=False,
    )
    return cfg


def _eagle3_draft(target: dict[str, Any], draft_vocab: int, **over: Any) -> dict[str, Any]:
    cfg = _eagle1_draft(target)
    del cfg["bias"]
    cfg.update(architectures=["LlamaForCausalLMEagle3"], draft_vocab_size=draft_vocab)
    if "head_dim" in target:
        cfg["head_dim"] = target["head_dim"]
    cfg.update(over)
    return cfg


_FIXTURE_LLAMA31_8B = _llama_target(
    hidden_size=4096,
    intermediate_size=14336,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=8,
    vocab_size=128256,
    max_position_embeddings=131072,
    rms_norm_eps=1e-5,
    rope_scaling={
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    },
    bos_token_id=128000,
    eos_token_id=[128001, 128008, 128009],
)
_QWEN3_8B = {
    "architectures": ["Qwen3ForCausalLM"],
    "model_type": "qwen3",
    "attention_bias": False,
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "max_position_embeddings": 40960,
    "num_attention_heads": 32,
    "num_hidden_layers": 36,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-6,
    "rope_scaling": None,
    "rope_theta": 1000000,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 151936,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
}


# Draft configs of real public checkpoints (shared/fixtures/configs, see tests/fixtures).
def _llama3_8b_draft(architecture: str, **rest: Any) -> dict[str, Any]:
    """What the public Llama-3(.1)-8B draft configs share (SpecForge EAGLE-3 and EAGLE-1)."""
    return {
        "architectures": [architecture],
        "bos_token_id": 128000,
        "eos_token_id": 128001,
        "hidden_act": "silu",
        "hidden_size": 4096,
        "initializer_range": 0.02,
        "intermediate_size": 14336,
        "max_position_embeddings": 2048,
        "model_type": "llama",
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "num_hidden_layers": 1,
        "pad_token_id": 0,
        "rms_norm_eps": 1e-05,
        "tie_word_embeddings": False,
        "torch_dtype": "float16",
        "use_cache": True,
        "vocab_size": 128256,
        **rest,
    }


_SPECFORGE_LLAMA31_EAGLE3 = _llama3_8b_draft("LlamaForCausalLMEagle3", draft_vocab_size=32000)
_EAGLE1_LLAMA3_8B = _llama3_8b_draft("LlamaForCausalLM", rope_theta=500000.0, bias=False)
_SPECFORGE_QWEN3_8B_EAGLE3 = {
    "architectures": ["LlamaForCausalLMEagle3"],
    "attention_bias": False,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "max_position_embeddings": 40960,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 1,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-06,
    "rope_scaling": None,
    "rope_theta": 1000000,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "use_cache": True,
    "vocab_size": 151936,
    "draft_vocab_size": 32000,
}

_TINY_LLAMA = _llama_target()
_TINY_QWEN3 = {
    "architectures": ["Qwen3ForCausalLM"],
    "model_type": "qwen3",
    "attention_bias": False,
    "head_dim": 32,
    "hidden_act": "silu",
    "hidden_size": 64,
    "intermediate_size": 128,
    "max_position_embeddings": 2048,
    "num_attention_heads": 4,
    "num_hidden_layers": 6,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-6,
    "rope_scaling": None,
    "rope_theta": 1000000.0,
    "tie_word_embeddings": False,
    "dtype": "bfloat16",
    "vocab_size": 384,
    "bos_token_id": 1,
    "eos_token_id": 2,
}

PRESETS: dict[str, Preset] = keyed(
    lambda p: p.name,
    Preset(
        "tiny-llama-eagle1",
        "8-layer Llama (llama3 RoPE scaling) + 1-layer EAGLE-1 draft; seeded weights",
        _TINY_LLAMA,
        _eagle1_draft(_TINY_LLAMA),
        "eagle1",
        True,
        seed=11,
    ),
    Preset(
        "tiny-llama-eagle3",
        "8-layer Llama + SpecForge-style EAGLE-3 draft (draft vocab 128, default aux "
        "layers); seeded weights",
        _TINY_LLAMA,
        _eagle3_draft(_TINY_LLAMA, 128),
        "eagle3",
        True,
        seed=13,
    ),
    Preset(
        "tiny-qwen3-eagle3",
        "6-layer Qwen3 (explicit head_dim 32 ≠ 64/4, q/k norm) + EAGLE-3 draft with "
        "eagle_config aux ids; seeded weights",
        _TINY_QWEN3,
        _eagle3_draft(
            _TINY_QWEN3,
            192,
            eagle_config={
                "eagle_aux_hidden_state_layer_ids": [1, 3, 4],
                "use_aux_hidden_state": True,
            },
        ),
        "eagle3",
        True,
        seed=17,
    ),
    Preset(
        "tiny-deepseek-mtp",
        "4-layer DeepSeek-V3-style target (MLA, routed experts, yarn) with 1 in-checkpoint "
        "MTP module; seeded weights",
        presets_mtp.TINY_DEEPSEEK,
        None,
        "mtp",
        True,
        seed=19,
    ),
    Preset(
        "tiny-deepseek-mtp2",
        "4-layer DeepSeek-V3-style target with 2 in-checkpoint MTP modules "
        "(num_nextn_predict_layers 2); seeded weights",
        dict(presets_mtp.TINY_DEEPSEEK, num_nextn_predict_layers=2),
        None,
        "mtp",
        True,
        seed=23,
    ),
    Preset(
        "tiny-qwen3-mtp",
        "6-layer Qwen3 + SpecForge-style Qwen3.5 MTP draft (Qwen3_5MTPDraftModel, one "
        "module, mtp_config.share_lm_head); seeded weights",
        _TINY_QWEN3,
        presets_mtp.qwen_mtp_draft(_TINY_QWEN3),
        "mtp",
        True,
        seed=31,
    ),
    Preset(
        "tiny-qwen3-dflash",
        "6-layer Qwen3 + SpecForge-style DFlash draft (2 layers, taps 1/3/4, mask token "
        "383); seeded weights",
        _TINY_QWEN3,
        presets_mtp.dflash_draft(_TINY_QWEN3),
        "dflash",
        True,
        seed=29,
    ),
    Preset(
        "deepseek-v3-mtp",
        "DeepSeek-V3/R1 geometry (61 layers, 256 experts) with its MTP layer (config only; "
        "inspect, or --random-weights on a machine that holds 671B parameters)",
        presets_mtp.DEEPSEEK_V3,
        None,
        "mtp",
        False,
    ),
    Preset(
        "deepseek-v3-mtp-4l",
        "DeepSeek-V3 at real widths (hidden 7168, 128 heads, MLA 1536/512/64, expert width "
        "2048, vocab 129280) with 4 target layers and 16 routed experts + its MTP layer "
        "(config only; --random-weights fits one GPU)",
        presets_mtp.DEEPSEEK_V3_4L,
        None,
        "mtp",
        False,
    ),
    Preset(
        "llama3.1-8b-eagle3",
        "Llama-3.1-8B-Instruct geometry + SpecForge EAGLE-3 draft config (config only; use "
        "--random-weights)",
        _FIXTURE_LLAMA31_8B,
        _SPECFORGE_LLAMA31_EAGLE3,
        "eagle3",
        False,
    ),
    Preset(
        "llama3.1-8b-eagle1",
        "Llama-3.1-8B-Instruct geometry + EAGLE-LLaMA3.1-Instruct-8B (EAGLE-1) draft config "
        "(config only; use --random-weights)",
        _FIXTURE_LLAMA31_8B,
        _EAGLE1_LLAMA3_8B,
        "eagle1",
        False,
    ),
    Preset(
        "qwen3-8b-eagle3",
        "Qwen3-8B geometry + SpecForge Qwen3-8B EAGLE-3 draft config (config only; use "
        "--random-weights)",
        _QWEN3_8B,
        _SPECFORGE_QWEN3_8B_EAGLE3,
        "eagle3",
        False,
    ),
)


def preset_for(kind: DraftKind | None, family: str, full_size: bool) -> str:
    """The built-in preset closest to a deployment: same target family and draft kind, tiny
    (seeded) or real-geometry; an EAGLE-3 pair of the family when the kind has none."""
    for wanted in (kind, DraftKind.EAGLE3):
        for p in PRESETS.values():
            if (
                wanted is not None
                and p.kind == wanted.value
                and p.target.get("model_type") == family
                and p.with_weights is not full_size
            ):
                return p.name
    raise KeyError(f"no {family} preset")


def get_preset(name: str) -> Preset:
    if name not in PRESETS:
        raise unknown_choice("preset", name, PRESETS)
    return PRESETS[name]


def cache_root() -> Path:
    explicit = os.environ.get("EAGLEGRAPH_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "eaglegraph"


# ---------------------------------------------------------------------------- weights


class _Weights:
    """Seeded numpy generator with the helpers the preset builders share."""

    def __init__(self, seed: int) -> None:
        import numpy as np

        self.rng = np.random.default_rng(seed)

    def normal(self, *shape: int, std: float) -> np.ndarray:
        import numpy as np

        return (self.rng.standard_normal(shape) * std).astype(np.float32)


def _layer(w: _Weights, cfg: dict[str, Any], prefix: str, qkv_in: int, std: float,
           input_norm: bool = True) -> dict[str, np.ndarray]:  # fmt: skip
    import numpy as np

    h, i_ = cfg["hidden_size"], cfg["intermediate_size"]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim", h // nh)
    out = {
        f"{prefix}self_attn.q_proj.weight": w.normal(nh * hd, qkv_in, std=std),
        f"{prefix}self_attn.k_proj.weight": w.normal(nkv * hd, qkv_in, std=std),
        f"{prefix}self_attn.v_proj.weight": w.normal(nkv * hd, qkv_in, std=std),
        f"{prefix}self_attn.o_proj.weight": w.normal(h, nh * hd, std=std),
        f"{prefix}mlp.gate_proj.weight": w.normal(i_, h, std=std),
        f"{prefix}mlp.up_proj.weight": w.normal(i_, h, std=std),
        f"{prefix}mlp.down_proj.weight": w.normal(h, i_, std=std),
        f"{prefix}post_attention_layernorm.weight": np.ones(h, np.float32),
    }
    if input_norm:
        out[f"{prefix}input_layernorm.weight"] = np.ones(h, np.float32)
    if cfg.get("model_type") == "qwen3":
        out[f"{prefix}self_attn.q_norm.weight"] = np.ones(hd, np.float32)
        out[f"{prefix}self_attn.k_norm.weight"] = np.ones(hd, np.float32)
    return out


def _tiny_weights(preset: Preset) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    import numpy as np

    t, d = preset.target, preset.draft
    if d is None:  # MTP modules inside the target checkpoint
        return presets_mtp.deepseek_mtp_weights(t, preset.seed), {}
    w = _Weights(preset.seed)
    h, v = t["hidden_size"], t["vocab_size"]
    embed = w.normal(v, h, std=1.0)
    perm = w.rng.permutation(v)  # the target continues token t with perm[t]
    inv = np.argsort(perm)
    target = {"model.embed_tokens.weight": embed, "model.norm.weight": np.ones(h, np.float32)}
    for layer in range(t["num_hidden_layers"]):
        target.update(_layer(w, t, f"model.layers.{layer}.", h, std=0.03))
    # logits[v] = embed[inv[v]] · h  →  argmax ≈ perm[current token]
    target["lm_head.weight"] = embed[inv] * 0.5 + w.normal(v, h, std=0.05)

    draft: dict[str, np.ndarray] = {}
    if preset.kind == "mtp":  # a separate Qwen-style MTP draft sharing the target's head
        return target, presets_mtp.qwen_mtp_draft_weights(d, target["lm_head.weight"], preset.seed)
    if preset.kind == "dflash":
        embed[d["dflash_config"]["mask_token_id"]] *= 0.01  # the mask token carries ~nothing
        return target, presets_mtp.dflash_draft_weights(d, preset.seed)
    if preset.kind == "eagle1":
        fc = np.concatenate([np.eye(h, dtype=np.float32), np.zeros((h, h), np.float32)], 1)
        draft["fc.weight"] = fc + w.normal(h, 2 * h, std=0.12)
        draft.update(_layer(w, d, "layers.0.", h, std=0.03, input_norm=False))
        draft["embed_tokens.weight"] = embed.copy()
    else:
        vd = d["draft_vocab_size"]
        hot = np.sort(w.rng.choice(v, size=vd, replace=False))  # draft id j ↔ target id hot[j]
        n_aux = 3
        fc = np.concatenate(
            [np.eye(h, dtype=np.float32)] + [np.zeros((h, h), np.float32)] * (n_aux - 1), 1
        )
        draft["fc.weight"] = fc + w.normal(h, n_aux * h, std=0.05)
        draft.update(_layer(w, d, "midlayer.", 2 * h, std=0.03))
        draft["midlayer.hidden_norm.weight"] = np.ones(h, np.float32)
        draft["norm.weight"] = np.ones(h, np.float32)
        # the draft at position i sees aux ≈ embed[token_i] and must guess perm[perm[token_i]]
        draft["lm_head.weight"] = embed[inv[inv[hot]]] * 0.5 + w.normal(vd, h, std=0.05)
        draft["d2t"] = (hot - np.arange(vd)).astype(np.int64)
        t2d = np.zeros(v, dtype=np.bool_)
        t2d[hot] = True
        draft["t2d"] = t2d
    return target, draft


def write_preset(preset: Preset, dest: Path) -> None:
    """Write target/ and draft/ folders of a preset into `dest` (which must be empty)."""
    target_dir, draft_dir = dest / "target", dest / "draft"
    folders = [(target_dir, preset.target)]
    if preset.draft is not None:
        folders.append((draft_dir, preset.draft))
    for folder, cfg in folders:
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
    if preset.with_weights:
        target_w, draft_w = _tiny_weights(preset)
        dtype = preset.target.get("torch_dtype") or preset.target.get("dtype") or "float32"
        save_safetensors(target_w, target_dir / "model.safetensors", dtype)
        if preset.draft is not None:
            save_safetensors(draft_w, draft_dir / "model.safetensors", dtype)
    (dest / "PRESET").write_text(
        f"{preset.name}\n{preset.description}\nformat {PRESET_FORMAT}\n", encoding="utf-8"
    )


def materialize(name: str, root: Path | None = None) -> Path:
    """The cache folder of a preset, written on first use (atomically, race-safe)."""
    preset = get_preset(name)
    root = root or cache_root()
    final = root / "presets" / f"{preset.name}-f{PRESET_FORMAT}"
    if (final / "PRESET").exists():
        return final
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"cannot create preset cache {final.parent}: {exc.strerror}") from None
    tmp = Path(tempfile.mkdtemp(prefix=f".{preset.name}.", dir=final.parent))
    try:
        write_preset(preset, tmp / "pair")
        try:
            os.replace(tmp / "pair", final)
        except OSError:
            if not (final / "PRESET").exists():  # lost a race only if the winner finished
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def scaffold(name: str, dest: Path, force: bool = False) -> Path:
    """`eaglegraph scaffold DIR --preset NAME`: refuses to write into a non-empty folder."""
    preset = get_preset(name)
    if dest.exists():
        if not dest.is_dir():
            raise BadInput(f"{dest} exists and is not a directory")
        if any(dest.iterdir()):
            if not force:
                raise BadInput(f"{dest} is not empty", "pass --force to write into it anyway")
            for sub in ("target", "draft"):
                if (dest / sub).exists():
                    raise BadInput(f"{dest / sub} already exists; refusing to overwrite it")
    dest.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".scaffold.", dir=dest))
    try:
        write_preset(preset, staging)
        for entry in ("target", "draft", "PRESET"):
            if (staging / entry).exists():
                os.replace(staging / entry, dest / entry)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return dest


def resolve_model_arg(arg: str | os.PathLike[str]) -> Path:
    """A MODEL_DIR argument: an existing path, or a preset name materialised in the cache."""
    text = os.fspath(arg)
    path = Path(text).expanduser()
    if path.exists():
        return path
    if text in PRESETS:
        return materialize(text)
    near = closest(text, PRESETS)
    hint = f"did you mean {' or '.join(near)}?" if near else None
    raise BadInput(
        f"{text} is neither an existing path nor a preset name; presets: {', '.join(PRESETS)}",
        hint,
    )
