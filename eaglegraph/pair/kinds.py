"""What kind of draft a folder holds, and the evidence for the verdict.

Serving engines guess the method from the folder name ("eagle-", "eagle3" substrings), so a
local `/models/draft` holding an EAGLE-3 head is silently loaded as something else. This module
follows the recipe of research eagle-formats.md §8 instead: config keys first, architecture
names second, tensor headers third, and it always says which evidence decided.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from eaglegraph.pair.config import Config
from eaglegraph.pair.tensors import CheckpointIndex


class DraftKind(str, Enum):
    EAGLE1 = "eagle1"
    EAGLE3 = "eagle3"
    MTP = "mtp"
    DFLASH = "dflash"
    OTHER = "other"
    UNKNOWN = "unknown"

    @property
    def supported(self) -> bool:
        """Kinds the rig can build and capture (MTP and block drafters are recognised only)."""
        return self in (DraftKind.EAGLE1, DraftKind.EAGLE3)


@dataclass
class KindVerdict:
    kind: DraftKind
    style: str | None
    evidence: list[str] = field(default_factory=list)

    @property
    def is_draft(self) -> bool:
        return self.kind is not DraftKind.UNKNOWN


MTP_COUNT_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules")
_SPECULATORS_KINDS = {
    "eagle3": DraftKind.EAGLE3,
    "eagle": DraftKind.EAGLE1,
    "eagle1": DraftKind.EAGLE1,
    "eagle2": DraftKind.EAGLE1,
    "dflash": DraftKind.DFLASH,
}
_LAYER_RE = re.compile(r"^(?:model\.)?layers\.(\d+)\.")


def _strip_model(name: str) -> str:
    return name[len("model.") :] if name.startswith("model.") else name


def _draft_names(index: CheckpointIndex | None) -> set[str]:
    if index is None:
        return set()
    return {_strip_model(n) for n in index.tensors}


def detect_draft_kind(cfg: Config, index: CheckpointIndex | None) -> KindVerdict:
    """Classify a folder's config (+ headers) as a draft kind, or UNKNOWN if it is no draft."""
    spec_type = cfg.str("speculators_model_type", default=None)
    if spec_type is not None:
        kind = _SPECULATORS_KINDS.get(spec_type.lower(), DraftKind.OTHER)
        return KindVerdict(
            kind, "speculators", [f"speculators_model_type = {spec_type!r} (speculators format)"]
        )
    archs = cfg.str_list("architectures")
    for arch in archs:
        if "dflash" in arch.lower() or "dspark" in arch.lower():
            kind = DraftKind.DFLASH if "dflash" in arch.lower() else DraftKind.OTHER
            return KindVerdict(kind, None, [f"architecture {arch!r} is a block drafter, not EAGLE"])
    if cfg.has("dflash_config"):
        return KindVerdict(DraftKind.DFLASH, None, ["config has 'dflash_config' (block drafter)"])
    for arch in archs:
        if "eagle3" in arch.lower():
            style = {
                "Eagle3Speculator": "speculators",
                "Eagle3DraftModel": "speculators",
            }.get(arch)
            if style is None:
                style = "specforge" if arch.endswith("Eagle3") else "vllm"
            return KindVerdict(DraftKind.EAGLE3, style, [f"architecture {arch!r} names EAGLE-3"])
    for arch in archs:
        if arch.endswith("ForCausalLMEagle") or arch.startswith("Eagle"):
            style = "sglang" if arch.endswith("ForCausalLMEagle") else "vllm"
            return KindVerdict(DraftKind.EAGLE1, style, [f"architecture {arch!r} names EAGLE-1/2"])
        if (
            arch.lower() in ("medusamodel", "mlpspeculatorpretrainedmodel")
            or "medusa" in arch.lower()
        ):
            return KindVerdict(DraftKind.OTHER, None, [f"architecture {arch!r} (not EAGLE)"])

    names = _draft_names(index)
    layers = cfg.int("num_hidden_layers", default=None, minimum=None)
    small = isinstance(layers, int) and layers <= 2
    if small and (cfg.has("draft_vocab_size") or cfg.has("truncated_vocab_size")):
        key = "draft_vocab_size" if cfg.has("draft_vocab_size") else "truncated_vocab_size"
        return KindVerdict(
            DraftKind.EAGLE3,
            "safeailab",
            [
                f"{layers}-layer {archs[0] if archs else 'model'} with '{key}' (SafeAILab EAGLE-3 style)"
            ],
        )
    if names:
        verdict = _kind_from_tensors(cfg, names)
        if verdict is not None:
            return verdict
        return KindVerdict(DraftKind.UNKNOWN, None, ["tensors of a plain language model (no fc)"])
    if mtp_layer_count(cfg)[0]:
        return KindVerdict(DraftKind.UNKNOWN, None, ["config declares MTP layers (a target)"])
    if small and cfg.int("hidden_size", default=None, minimum=None) is not None:
        evidence = [f"{layers}-layer {archs[0] if archs else 'model'} without a draft vocabulary"]
        if cfg.has("bias"):
            evidence.append("top-level 'bias' key (EAGLE-1 fc bias flag)")
        if index is None or not index.has_weights:
            evidence.append("no weights to confirm from tensor headers")
        return KindVerdict(DraftKind.EAGLE1, "safeailab", evidence)
    return KindVerdict(DraftKind.UNKNOWN, None, ["no draft markers in config or tensors"])


def _kind_from_tensors(cfg: Config, names: set[str]) -> KindVerdict | None:
    if any(n.startswith("midlayer.") for n in names):
        return KindVerdict(
            DraftKind.EAGLE3, "safeailab", ["tensor names use 'midlayer.' (EAGLE-3)"]
        )
    if "d2t" in names or "t2d" in names:
        return KindVerdict(DraftKind.EAGLE3, "safeailab", ["'d2t'/'t2d' vocabulary maps present"])
    if "fc.weight" not in names:
        return None
    layer_ids = {int(m.group(1)) for n in names if (m := _LAYER_RE.match(n))}
    no_input_norm = "layers.0.input_layernorm.weight" not in names
    no_head = "lm_head.weight" not in names
    if layer_ids and no_input_norm and no_head:
        return KindVerdict(
            DraftKind.EAGLE1,
            "safeailab",
            ["'fc.weight' with 'layers.0.*', no layer-0 input norm and no lm_head (EAGLE-1)"],
        )
    if len(layer_ids) >= 3:
        return KindVerdict(
            DraftKind.DFLASH, None, ["'fc.weight' over several layers (DFlash-like)"]
        )
    return KindVerdict(DraftKind.EAGLE3, "safeailab", ["'fc.weight' with a draft head (EAGLE-3)"])


def mtp_layer_count(cfg: Config) -> tuple[int, str | None]:
    """MTP layers a target declares (checks `text_config` too), and the key that says so."""
    for source in (cfg, cfg.sub("text_config")):
        if source is None:
            continue
        for key in MTP_COUNT_KEYS:
            value = source.int(key, default=0, minimum=0)
            if value > 0:
                return value, key
    return 0, None


def mtp_weight_names(cfg: Config, index: CheckpointIndex | None) -> list[str]:
    """Checkpoint tensors that hold MTP layers: `model.layers.{L+i}.*` or `mtp.*` prefixes."""
    if index is None:
        return []
    layers = cfg.int("num_hidden_layers", default=None, minimum=None)
    found = []
    for name in index.tensors:
        if name.startswith(("mtp.", "model.mtp.")):
            found.append(name)
            continue
        m = _LAYER_RE.match(name)
        if m and isinstance(layers, int) and int(m.group(1)) >= layers:
            found.append(name)
    return found
