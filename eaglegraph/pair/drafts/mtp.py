"""Multi-token-prediction (MTP) drafts: layers inside a target's checkpoint, or a separate draft.

A DeepSeek/GLM/Qwen target declares MTP layers in its config (`num_nextn_predict_layers`, ...)
and stores them past its declared stack (`model.layers.{L+i}.*`) or under `mtp.*`.
"""

from __future__ import annotations

from eaglegraph.pair.config import Config
from eaglegraph.pair.drafts.base import (
    LAYER_RE,
    DraftKind,
    Evidence,
    InTarget,
    KindSpec,
    KindVerdict,
    Recogniser,
)
from eaglegraph.pair.mtp_layout import separate_mtp_draft
from eaglegraph.pair.tensors import CheckpointIndex

MTP_COUNT_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules")


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
        m = LAYER_RE.match(name)
        if m and isinstance(layers, int) and int(m.group(1)) >= layers:
            found.append(name)
    return found


def _target_with_mtp(ev: Evidence) -> KindVerdict | None:
    """A config that declares MTP layers is a target (its MTP draft is found by `in_target`)."""
    if mtp_layer_count(ev.cfg)[0]:
        return KindVerdict(DraftKind.UNKNOWN, None, ["config declares MTP layers (a target)"])
    return None


def _separate_draft(ev: Evidence) -> KindVerdict | None:
    """A separate MTP draft folder (SpecForge `Qwen3_5MTPDraftModel`, `*ForCausalLMMTP`,
    `mtp_config`, `mtp.fc` weights): asked before the EAGLE rules, which would otherwise call
    its one-layer config with a `draft_vocab_size` EAGLE-3, or without one EAGLE-1."""
    layout = separate_mtp_draft(ev.cfg, set(ev.index.tensors) if ev.index else set())
    if layout is None:
        return None
    return KindVerdict(DraftKind.MTP, layout.style, layout.evidence)


class MTPSpec(KindSpec):
    kind = DraftKind.MTP
    title = "MTP"
    supported = True
    engine_methods = ("mtp",)
    recognisers = (Recogniser(22, _separate_draft), Recogniser(80, _target_with_mtp))

    def in_target(self, cfg: Config, index: CheckpointIndex) -> InTarget | None:
        count, key = mtp_layer_count(cfg)
        names = mtp_weight_names(cfg, index)
        if not count and not names:
            return None
        evidence = []
        if count:
            evidence.append(f"config {key} = {count}")
        if names:
            evidence.append(f"{len(names)} MTP tensors, e.g. {names[0]!r}")
        found = InTarget(evidence, count or None)
        if count and not names and index.has_weights:
            found.notes.append("config declares MTP layers but the weights have none (stripped?)")
        return found


SPEC = MTPSpec()
