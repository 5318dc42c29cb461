"""DFlash block drafters: recognised by config, architecture or tensors; built by the rig."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eaglegraph.known.speculator_styles import SpeculatorStyle
from eaglegraph.pair.config import Config
from eaglegraph.pair.drafts.base import BuiltKindSpec, DraftKind, FactsInput, ShapeFacts
from eaglegraph.pair.drafts.detection import ArchName, ArchNames, Evidence, KindVerdict, recognises
from eaglegraph.pair.geometry import Geometry, layer_params
from eaglegraph.pair.mtp_layout import dflash_layout
from eaglegraph.results.findings import Finding, Severity

if TYPE_CHECKING:
    from eaglegraph.pair.facts import DraftFacts


ARCHITECTURES = (  # the architecture names it answers to
    ArchName(contains="dflash", any_case=True),
    ArchName(contains="dspark", any_case=True, kind=DraftKind.OTHER),
)
BY_ARCHITECTURE = ArchNames(DraftKind.DFLASH, 20, "is a block drafter, not EAGLE", ARCHITECTURES)


@recognises(25)
def _config_key(ev: Evidence) -> KindVerdict | None:
    if ev.cfg.has("dflash_config"):
        return KindVerdict(DraftKind.DFLASH, None, ["config has 'dflash_config' (block drafter)"])
    return None


@recognises(63)
def _fc_over_layers(ev: Evidence) -> KindVerdict | None:
    if "fc.weight" not in ev.names:
        return None
    if len(ev.layer_ids) >= 3:
        return KindVerdict(
            DraftKind.DFLASH, None, ["'fc.weight' over several layers (DFlash-like)"]
        )
    return None


class DFlashSpec(BuiltKindSpec):
    kind = DraftKind.DFLASH
    title = "DFlash"
    engine_methods = ("dflash",)
    speculators_names = ("dflash",)
    speculator_style = SpeculatorStyle.BLOCK  # one graph drafts the whole block

    def shape_facts(self, given: FactsInput) -> ShapeFacts:
        layout = dflash_layout(given.cfg, given.index)
        ids = layout.target_layer_ids
        n = len(ids) if ids else None
        target_h = given.config_target_hidden or given.target_hidden or given.hidden_size
        rows = [
            (
                "target taps",
                f"outputs of layers {ids} (entering {[i + 1 for i in ids]}), concatenated "
                f"into fc {layout.fc_in or '?'} wide"
                if ids
                else "no target_layer_ids",
            ),
            ("block", f"{layout.block_size or '?'} tokens, mask token {layout.mask_token_id}"),
            (
                "drafting",
                f"{layout.num_layers} layers, {'non-causal' if layout.non_causal else 'causal'} "
                "block attention over the context K/V; one graph, no draft decodes",
            ),
        ]
        findings = []
        layers = given.target_layers
        if ids and layers is not None and (min(ids) < 0 or max(ids) + 1 >= layers):
            findings.append(
                Finding(
                    id="aux-ids-out-of-range",
                    severity=Severity.ERROR,
                    message=f"DFlash target_layer_ids {ids} tap past the target's {layers} "
                    "layers (the stream entering layer id + 1 is read)",
                )
            )
        mask = layout.mask_token_id
        if mask is not None and mask >= given.vocab_size:
            findings.append(
                Finding(
                    id="dflash-mask-token",
                    severity=Severity.ERROR,
                    message=f"mask_token_id {mask} is outside the vocabulary "
                    f"({given.vocab_size} tokens)",
                )
            )
        return ShapeFacts(
            expected_fc_in=n * target_h if n else None,
            draft_vocab_size=given.draft_vocab,
            rows=rows,
            findings=findings,
        )

    def target_width_findings(self, facts: DraftFacts, g: Geometry, t: Geometry) -> list[Finding]:
        return []

    def expected_fc_from_target(self, facts: DraftFacts, t: Geometry) -> int | None:
        return facts.expected_fc_in  # taps × the target's hidden size (shape_facts)

    def estimate_parameters(self, g: Geometry, facts: DraftFacts, cfg: Config) -> int | None:
        """fc over the tapped target states, hidden_norm, the layers, the final norm and
        an own head if the checkpoint has one (the embedding is the target's)."""
        layout = dflash_layout(cfg, None)
        taps = len(layout.target_layer_ids or []) or 1
        fc_in = facts.fc_in_features or taps * (facts.target_hidden_size or g.hidden_size)
        total = fc_in * g.hidden_size + 2 * g.hidden_size
        total += g.num_hidden_layers * layer_params(g, g.hidden_size, True)
        if facts.lm_head == "own":
            total += g.vocab_size * g.hidden_size
        return total


SPEC = DFlashSpec()
RECOGNISERS = (BY_ARCHITECTURE, _config_key, _fc_over_layers)
