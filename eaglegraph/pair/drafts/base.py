"""What every draft kind declares about itself on disk: the enum, `KindSpec` and its records.

A kind module (`pair/drafts/<kind>.py`) holds everything eaglegraph knows about one kind from
config and headers alone: how it recognises itself, with evidence (its `RECOGNISERS`, in the
vocabulary of `pair/drafts/detection`), and, in its `SPEC`, the facts it derives, the pair
checks it adds (`pair/drafts/findings`) and its parameter count. No torch here: `inspect`
never builds a model.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from enum import Enum
from functools import cache

from eaglegraph.known.speculator_styles import SpeculatorStyle
from eaglegraph.pair.config import Config
from eaglegraph.pair.geometry import Geometry
from eaglegraph.pair.tensors import CheckpointIndex
from eaglegraph.results.findings import Finding
from eaglegraph.results.inspect import AuxTapsFacts as AuxTaps


class DraftKind(str, Enum):
    """The one spelling of a draft kind; each member has a spec in `pair/drafts/<value>.py`."""

    EAGLE1 = "eagle1"
    EAGLE3 = "eagle3"
    MTP = "mtp"
    DFLASH = "dflash"
    OTHER = "other"
    UNKNOWN = "unknown"

    @property
    def spec(self) -> KindSpec:
        return kind_spec(self)

    @property
    def supported(self) -> bool:
        """Kinds the rig can build and capture (a models/drafts/<kind>.py build exists)."""
        return self.spec.supported


@cache
def kind_spec(kind: DraftKind) -> KindSpec:
    """The spec of a kind, from `eaglegraph.pair.drafts.<kind value>`: looked up by name, so
    this module (which every kind module imports) never imports a kind module itself."""
    spec = importlib.import_module(f"eaglegraph.pair.drafts.{kind.value}").SPEC
    if not isinstance(spec, KindSpec) or spec.kind is not kind:
        raise RuntimeError(f"pair/drafts/{kind.value}.py declares {spec!r}, not a {kind} spec")
    return spec


@dataclass
class DraftFacts:
    """What the draft consumes and produces, read from config and headers (`pair.facts`)."""

    kind: DraftKind
    style: str | None
    evidence: list[str]
    fc_in_features: int | None
    fc_in_source: str
    expected_fc_in: int | None
    fc_bias_tensor: bool | None
    config_bias: bool | None
    target_hidden_size: int | None
    draft_vocab_size: int | None
    d2t_shape: list[int] | None
    t2d_shape: list[int] | None
    lm_head_rows: int | None
    aux: AuxTaps | None
    use_aux_hidden_state: bool | None
    embed_tokens: str
    lm_head: str
    verifier: str | None
    speculative_tokens: int | None
    mtp_layers: int | None = None
    notes: list[str] = field(default_factory=list)
    kind_facts: list[tuple[str, str]] = field(default_factory=list)  # (label, value) rows
    kind_findings: list[Finding] = field(default_factory=list)


@dataclass
class ShapeFacts:
    """The kind-specific part of `DraftFacts`: what the draft's fc consumes, its vocabulary."""

    expected_fc_in: int | None = None
    draft_vocab_size: int | None = None
    aux: AuxTaps | None = None
    notes: list[str] = field(default_factory=list)
    rows: list[tuple[str, str]] = field(default_factory=list)  # kind facts (label, value)
    findings: list[Finding] = field(default_factory=list)  # the kind's own checks


@dataclass(frozen=True)
class FactsInput:
    """Everything `draft_facts` read that a kind may use to derive its `ShapeFacts`."""

    cfg: Config
    hidden_size: int
    vocab_size: int
    target_hidden: int | None
    target_layers: int | None
    config_target_hidden: int | None
    draft_vocab: int | None
    explicit_aux_ids: list[int] | None
    aux_ids_source: str
    use_aux: bool | None
    index: CheckpointIndex | None = None


class KindSpec:
    """Defaults are those of a recognised but unsupported kind; kinds override what differs."""

    kind: DraftKind
    title: str = ""
    # the rig can build it: models/drafts/<kind>.py exists (a test keeps the two in step)
    supported: bool = False
    # checked against the target like an EAGLE head (widths, vocab, aux ids, positions)
    checked_against_target: bool = False
    speculators_names: tuple[str, ...] = ()  # `speculators_model_type` values naming it
    engine_methods: tuple[str, ...] = ()  # vLLM `--speculative-config` methods; first = main
    # its KV-cache layers are one per module the engine runs, not one per config layer (MTP:
    # `pair.kv_layers`)
    kv_layer_per_module: bool = False
    # how the rig drafts it (`rig.drafting`): `speculator_style`, or `multi_module_style` where
    # the engine runs several of its modules and K > 1 (MTP: every module over the window)
    speculator_style: SpeculatorStyle = SpeculatorStyle.EAGLE
    multi_module_style: SpeculatorStyle | None = None

    def shape_facts(self, given: FactsInput) -> ShapeFacts:
        return ShapeFacts(draft_vocab_size=given.draft_vocab)

    def lm_head_state(self, has_lm_head: bool, has_weights: bool) -> str:
        return "own" if has_lm_head else ("unknown (no weights)" if not has_weights else "shared")

    def first_layer_qkv_in(self, g: Geometry) -> int:
        """Input width of layer 0's q/k/v projections (EAGLE-3 attends over 2H)."""
        return g.hidden_size

    def lm_head_rows(self, facts: DraftFacts, g: Geometry) -> int:
        return g.vocab_size

    def own_findings(self, facts: DraftFacts, g: Geometry) -> list[Finding]:
        """Checks of the draft alone (before any target is known)."""
        return []

    def target_width_findings(self, facts: DraftFacts, g: Geometry, t: Geometry) -> list[Finding]:
        """Does what the target emits fit what the draft consumes?"""
        return []

    def expected_fc_from_target(self, facts: DraftFacts, t: Geometry) -> int | None:
        return None

    def estimate_parameters(self, g: Geometry, facts: DraftFacts, cfg: Config) -> int | None:
        """The draft's own weights (None: count it like a plain model)."""
        return None

    def in_target(self, cfg: Config, index: CheckpointIndex) -> InTarget | None:
        """A draft of this kind that lives inside a target folder (MTP layers), else None."""
        return None


class BuiltKindSpec(KindSpec):
    """A kind the rig builds (a `models/drafts/<kind>.py` exists) and checks against its target
    like an EAGLE head: EAGLE-1, EAGLE-3, MTP and DFlash all are, so they say it once here."""

    supported = True
    checked_against_target = True


@dataclass
class InTarget:
    """A draft found inside the target's own checkpoint, with the evidence for it."""

    evidence: list[str]
    layers: int | None
    notes: list[str] = field(default_factory=list)
    tensors: list[str] = field(default_factory=list)  # the draft's tensors in the checkpoint
    rows: list[tuple[str, str]] = field(default_factory=list)  # kind facts (label, value)
