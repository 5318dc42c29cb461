"""Multi-token-prediction (MTP) drafts: layers inside a target's checkpoint, or a separate draft.

A DeepSeek/GLM/Qwen target declares MTP layers in its config (`num_nextn_predict_layers`, ...)
and stores them past its declared stack (`model.layers.{L+i}.*`) or under `mtp.*`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eaglegraph.known.speculator_styles import SpeculatorStyle
from eaglegraph.pair.config import Config
from eaglegraph.pair.drafts.base import BuiltKindSpec, DraftKind, FactsInput, InTarget, ShapeFacts
from eaglegraph.pair.drafts.detection import LAYER_RE, Evidence, KindVerdict, recognises
from eaglegraph.pair.drafts.findings import width_mismatch
from eaglegraph.pair.geometry import Geometry, layer_params
from eaglegraph.pair.mla import mla_mtp_parameters, mtp_module_params
from eaglegraph.pair.mtp_layout import (
    MTPLayout,
    in_target_mtp,
    mtp_count,
    not_built_reason,
    separate_mtp_draft,
)
from eaglegraph.pair.tensors import CheckpointIndex
from eaglegraph.results.findings import Finding

if TYPE_CHECKING:
    from eaglegraph.pair.facts import DraftFacts


def mtp_weight_names(cfg: Config, index: CheckpointIndex | None) -> list[str]:
    """Checkpoint tensors that hold MTP layers: `model.layers.{L+i}.*` or `mtp.*` prefixes."""
    if index is None:
        return []
    layers = cfg.int("num_hidden_layers", default=None, minimum=None)
    found = []
    for name in index.tensors:
        if name.startswith(("mtp.", "model.mtp.", "model.mtp_layers.")):
            found.append(name)
            continue
        m = LAYER_RE.match(name)
        if m and isinstance(layers, int) and int(m.group(1)) >= layers:
            found.append(name)
    return found


@recognises(80)
def _target_with_mtp(ev: Evidence) -> KindVerdict | None:
    """A config that declares MTP layers is a target (its MTP draft is found by `in_target`)."""
    if mtp_count(ev.cfg)[0]:
        return KindVerdict(DraftKind.UNKNOWN, None, ["config declares MTP layers (a target)"])
    return None


@recognises(22)
def _separate_draft(ev: Evidence) -> KindVerdict | None:
    """A separate MTP draft folder (SpecForge `Qwen3_5MTPDraftModel`, `*ForCausalLMMTP`,
    `mtp_config`, `mtp.fc` weights): asked before the EAGLE rules, which would otherwise call
    its one-layer config with a `draft_vocab_size` EAGLE-3, or without one EAGLE-1."""
    layout = separate_mtp_draft(ev.cfg, set(ev.index.tensors) if ev.index else set())
    if layout is None:
        return None
    return KindVerdict(DraftKind.MTP, layout.style, layout.evidence)


class MTPSpec(BuiltKindSpec):
    kind = DraftKind.MTP
    title = "MTP"
    engine_methods = ("mtp",)
    kv_layer_per_module = True
    multi_module_style = SpeculatorStyle.WINDOW

    def in_target(self, cfg: Config, index: CheckpointIndex) -> InTarget | None:
        layout = in_target_mtp(cfg, index)
        if layout is None:
            return None
        names = mtp_weight_names(cfg, index)
        found = InTarget(layout.evidence, layout.modules, list(layout.notes), names)
        found.rows = layout_rows(layout, not_built_reason(layout, cfg))
        return found

    def shape_facts(self, given: FactsInput) -> ShapeFacts:
        names = set(given.index.tensors) if given.index is not None else set()
        layout = separate_mtp_draft(given.cfg, names)
        rows = layout_rows(layout, not_built_reason(layout, given.cfg)) if layout else []
        return ShapeFacts(draft_vocab_size=given.draft_vocab, rows=rows)

    def target_width_findings(self, facts: DraftFacts, g: Geometry, t: Geometry) -> list[Finding]:
        """The module fuses the target's embedding with its hidden state: widths must agree."""
        return width_mismatch(
            g.hidden_size,
            t.hidden_size,
            f"MTP draft hidden_size {g.hidden_size} ≠ target hidden_size "
            f"{t.hidden_size}: eh_proj/fc fuses the target's embedding and hidden state",
        )

    def estimate_parameters(self, g: Geometry, facts: DraftFacts, cfg: Config) -> int | None:
        """MTP modules without the embedding and head they share with the target: MLA
        blocks for DeepSeek-style modules, a standard layer plus fc and norms otherwise."""
        modules = facts.mtp_layers or cfg.int("num_hidden_layers", default=1, minimum=1) or 1
        if facts.mtp_layers:
            mla = mla_mtp_parameters(g, cfg, modules)
            if mla is not None:
                return mla
        layer = layer_params(g, g.hidden_size, True)
        layout = separate_mtp_draft(cfg, set())
        own_head = layout is not None and layout.share_lm_head is False
        head = g.vocab_size * g.hidden_size if own_head else 0
        return modules * mtp_module_params(g.hidden_size, layer) + head


def layout_rows(layout: MTPLayout, reason: str | None) -> list[tuple[str, str]]:
    """What `inspect` shows of an MTP layout: modules, where they live, attention, head."""
    where = "in the target's checkpoint" if layout.in_target else "a separate draft folder"
    modules = f"{layout.modules or '?'}"
    if layout.count_key:
        modules += f" ({layout.count_key})"
    rows = [
        ("MTP modules", f"{modules}, module 0 at {layout.prefix or '?'}*"),
        ("layout", f"{layout.style}, {where}, {layout.attention} attention"),
    ]
    if layout.eh_proj_shape:
        rows.append(("eh_proj / fc", f"{layout.eh_proj_shape} (embedding ⊕ hidden → hidden)"))
    m = layout.mla
    if m is not None:
        rows.append((
            "MLA",
            f"q_lora {m.q_lora_rank or '—'}, kv_lora {m.kv_lora_rank}, qk {m.qk_head_dim} "
            f"({m.qk_nope_head_dim}+{m.qk_rope_head_dim} rope), v {m.v_head_dim}, "
            f"latent cache row {m.cache_width}",
        ))  # fmt: skip
    if layout.share_lm_head is not None:
        head = "the target's (mtp_config.share_lm_head)" if layout.share_lm_head else "its own"
        rows.append(("lm_head", head))
    if reason is not None:
        rows.append(("rig", reason))
    return rows


SPEC = MTPSpec()
RECOGNISERS = (_separate_draft, _target_with_mtp)
