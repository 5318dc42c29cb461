"""EAGLE-1/2 heads: fc over [embedding, target final hidden], no layer-0 input norm."""

from __future__ import annotations

from eaglegraph.pair.config import Config
from eaglegraph.pair.drafts.base import BuiltKindSpec, DraftKind, FactsInput, ShapeFacts
from eaglegraph.pair.drafts.detection import ArchName, ArchNames, Evidence, KindVerdict, recognises
from eaglegraph.pair.drafts.findings import hazard_finding, width_mismatch
from eaglegraph.pair.facts import DraftFacts
from eaglegraph.pair.geometry import Geometry, layer_params
from eaglegraph.results.findings import Finding, Severity

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO


ARCHITECTURES = (  # the architecture names it answers to
    ArchName(suffix="ForCausalLMEagle", style="sglang"),
    ArchName(prefix="Eagle", style="vllm"),
)
BY_ARCHITECTURE = ArchNames(DraftKind.EAGLE1, 35, "names EAGLE-1/2", ARCHITECTURES)


@recognises(62)
def _fc_tensors(ev: Evidence) -> KindVerdict | None:
    if "fc.weight" not in ev.names:
        return None
    no_input_norm = "layers.0.input_layernorm.weight" not in ev.names
    no_head = "lm_head.weight" not in ev.names
    if ev.layer_ids and no_input_norm and no_head:
        return KindVerdict(
            DraftKind.EAGLE1,
            "safeailab",
            ["'fc.weight' with 'layers.0.*', no layer-0 input norm and no lm_head (EAGLE-1)"],
        )
    return None


@recognises(90)
def _small_config(ev: Evidence) -> KindVerdict | None:
    """Config only, no draft vocabulary: a 1-2 layer model is taken for an EAGLE-1 head."""
    if not ev.small or ev.cfg.int("hidden_size", default=None, minimum=None) is None:
        return None
    evidence = [f"{ev.num_layers}-layer {ev.first_arch} without a draft vocabulary"]
    if ev.cfg.has("bias"):
        evidence.append("top-level 'bias' key (EAGLE-1 fc bias flag)")
    if ev.index is None or not ev.index.has_weights:
        evidence.append("no weights to confirm from tensor headers")
    return KindVerdict(DraftKind.EAGLE1, "safeailab", evidence)


class Eagle1Spec(BuiltKindSpec):
    kind = DraftKind.EAGLE1
    title = "EAGLE-1"
    speculators_names = ("eagle", "eagle1", "eagle2")
    engine_methods = ("eagle", "eagle1")

    def shape_facts(self, given: FactsInput) -> ShapeFacts:
        return ShapeFacts(expected_fc_in=2 * given.hidden_size, draft_vocab_size=given.vocab_size)

    def lm_head_state(self, has_lm_head: bool, has_weights: bool) -> str:
        return "own (ignored: EAGLE-1 uses the target's)" if has_lm_head else "shared"

    def own_findings(self, facts: DraftFacts, g: Geometry) -> list[Finding]:
        return _bias_findings(facts)

    def target_width_findings(self, facts: DraftFacts, g: Geometry, t: Geometry) -> list[Finding]:
        return width_mismatch(
            g.hidden_size,
            t.hidden_size,
            f"EAGLE-1 draft hidden_size {g.hidden_size} ≠ target {t.hidden_size}; "
            "fc consumes [embedding, target hidden] of the draft's width",
        )

    def expected_fc_from_target(self, facts: DraftFacts, t: Geometry) -> int | None:
        return 2 * t.hidden_size

    def estimate_parameters(self, g: Geometry, facts: DraftFacts, cfg: Config) -> int | None:
        total = (facts.fc_in_features or 0) * g.hidden_size
        total += layer_params(g, g.hidden_size, False)
        total += (g.num_hidden_layers - 1) * layer_params(g, g.hidden_size, True)
        return total


SPEC = Eagle1Spec()
RECOGNISERS = (BY_ARCHITECTURE, _fc_tensors, _small_config)


def _bias_findings(facts: DraftFacts) -> list[Finding]:
    problem = _bias_problem(facts)
    if problem is None:
        return []
    severity, message = problem
    return [hazard_finding("eagle1-fc-bias", severity, message)]


def _bias_problem(facts: DraftFacts) -> tuple[Severity, str] | None:
    """How the checkpoint's fc.bias and the config's `bias` key disagree, if they do."""
    if facts.fc_bias_tensor is None:
        if facts.config_bias is None:
            return (
                INFO,
                "EAGLE-1 config has no 'bias' key: SafeAILab's loader then expects "
                "fc.bias (default true); without weights this cannot be confirmed",
            )
        return None
    if facts.fc_bias_tensor and facts.config_bias is False:
        return (
            E,
            'checkpoint has fc.bias but config says "bias": false; loaders that '
            "trust the config drop the bias and acceptance falls",
        )
    if facts.fc_bias_tensor and facts.config_bias is None:
        return (
            W,
            "checkpoint has fc.bias and no 'bias' key in config: vLLM versions whose "
            "llama_eagle fc has bias=False silently skip it (lower acceptance)",
        )
    if not facts.fc_bias_tensor and facts.config_bias is not False:
        return (
            W,
            'no fc.bias in the checkpoint, but config does not say "bias": false; '
            "SGLang's LlamaForCausalLMEagle always builds a bias and SafeAILab defaults to one",
        )
    return None
