"""EAGLE-3 heads: fc over the target's concatenated aux states, a 2H-wide midlayer, own head."""

from __future__ import annotations

from eaglegraph.pair.config import Config
from eaglegraph.pair.drafts.base import BuiltKindSpec, DraftKind, FactsInput, ShapeFacts
from eaglegraph.pair.drafts.detection import ArchName, ArchNames, Evidence, KindVerdict, recognises
from eaglegraph.pair.drafts.findings import check_finding, hazard_finding, width_mismatch
from eaglegraph.pair.facts import DraftFacts, aux_taps
from eaglegraph.pair.geometry import Geometry, layer_params
from eaglegraph.results.findings import Finding, Severity

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO


ARCHITECTURES = (  # the architecture names it answers to
    ArchName(exact="Eagle3Speculator", style="speculators"),
    ArchName(exact="Eagle3DraftModel", style="speculators"),
    ArchName(suffix="Eagle3", style="specforge"),
    ArchName(contains="eagle3", style="vllm", any_case=True),
)
BY_ARCHITECTURE = ArchNames(DraftKind.EAGLE3, 30, "names EAGLE-3", ARCHITECTURES)


@recognises(50)
def _draft_vocab(ev: Evidence) -> KindVerdict | None:
    cfg = ev.cfg
    if not ev.small or not (cfg.has("draft_vocab_size") or cfg.has("truncated_vocab_size")):
        return None
    key = "draft_vocab_size" if cfg.has("draft_vocab_size") else "truncated_vocab_size"
    return KindVerdict(
        DraftKind.EAGLE3,
        "safeailab",
        [f"{ev.num_layers}-layer {ev.first_arch} with '{key}' (SafeAILab EAGLE-3 style)"],
    )


@recognises(60)
def _midlayer(ev: Evidence) -> KindVerdict | None:
    if any(n.startswith("midlayer.") for n in ev.names):
        return KindVerdict(
            DraftKind.EAGLE3, "safeailab", ["tensor names use 'midlayer.' (EAGLE-3)"]
        )
    return None


@recognises(61)
def _vocab_maps(ev: Evidence) -> KindVerdict | None:
    if "d2t" in ev.names or "t2d" in ev.names:
        return KindVerdict(DraftKind.EAGLE3, "safeailab", ["'d2t'/'t2d' vocabulary maps present"])
    return None


@recognises(64)
def _fc_with_head(ev: Evidence) -> KindVerdict | None:
    if "fc.weight" not in ev.names:
        return None
    return KindVerdict(DraftKind.EAGLE3, "safeailab", ["'fc.weight' with a draft head (EAGLE-3)"])


def _num_aux(given: FactsInput) -> int:
    explicit = given.cfg.int("num_aux_hidden_states", default=None, minimum=1)
    if explicit is not None:
        return explicit
    return len(given.explicit_aux_ids) if given.explicit_aux_ids else 3


class Eagle3Spec(BuiltKindSpec):
    kind = DraftKind.EAGLE3
    title = "EAGLE-3"
    speculators_names = ("eagle3",)
    engine_methods = ("eagle3",)

    def shape_facts(self, given: FactsInput) -> ShapeFacts:
        ht = given.config_target_hidden or given.target_hidden or given.hidden_size
        out = ShapeFacts(
            expected_fc_in=None if given.use_aux is False else _num_aux(given) * ht,
            draft_vocab_size=given.draft_vocab,
            aux=aux_taps(given.explicit_aux_ids, given.aux_ids_source, given.target_layers),
        )
        if out.draft_vocab_size is None:
            out.draft_vocab_size = given.vocab_size
            out.notes.append(
                "no draft_vocab_size: the draft predicts over the full target vocabulary"
            )
        return out

    def first_layer_qkv_in(self, g: Geometry) -> int:
        return 2 * g.hidden_size

    def lm_head_rows(self, facts: DraftFacts, g: Geometry) -> int:
        return facts.draft_vocab_size or g.vocab_size

    def own_findings(self, facts: DraftFacts, g: Geometry) -> list[Finding]:
        return _eagle3_findings(facts, g)

    def target_width_findings(self, facts: DraftFacts, g: Geometry, t: Geometry) -> list[Finding]:
        declared = facts.target_hidden_size or g.hidden_size
        key = (
            "target_hidden_size"
            if facts.target_hidden_size
            else "hidden_size (no target_hidden_size)"
        )
        return width_mismatch(
            declared,
            t.hidden_size,
            f"draft {key} {declared} ≠ target hidden_size {t.hidden_size}; the aux "
            "states the target emits do not fit the draft",
            fix="set target_hidden_size in the draft config to the target's hidden_size",
        )

    def expected_fc_from_target(self, facts: DraftFacts, t: Geometry) -> int | None:
        if facts.use_aux_hidden_state is False:
            return None
        n_aux = len(facts.aux.layer_ids) if facts.aux and facts.aux.layer_ids else 3
        return n_aux * t.hidden_size

    def estimate_parameters(self, g: Geometry, facts: DraftFacts, cfg: Config) -> int | None:
        total = (facts.fc_in_features or 0) * g.hidden_size
        total += layer_params(g, 2 * g.hidden_size, True) + g.hidden_size  # + hidden_norm
        total += (g.num_hidden_layers - 1) * layer_params(g, g.hidden_size, True)
        total += g.hidden_size  # final norm
        total += (facts.draft_vocab_size or g.vocab_size) * g.hidden_size  # own lm_head
        return total


SPEC = Eagle3Spec()
RECOGNISERS = (BY_ARCHITECTURE, _draft_vocab, _midlayer, _vocab_maps, _fc_with_head)


def _eagle3_findings(facts: DraftFacts, g: Geometry) -> list[Finding]:
    out = []
    vd = facts.draft_vocab_size
    if facts.lm_head_rows is not None and vd is not None and facts.lm_head_rows != vd:
        out.append(
            hazard_finding(
                "lm-head-rows-mismatch",
                E,
                f"lm_head has {facts.lm_head_rows} rows but draft_vocab_size is {vd}",
            )
        )
    if facts.d2t_shape is not None and vd is not None and facts.d2t_shape[0] != vd:
        out.append(
            check_finding(
                "d2t-length-mismatch",
                E,
                f"d2t has {facts.d2t_shape[0]} entries but draft_vocab_size is {vd}",
            )
        )
    if vd is not None and vd > g.vocab_size:
        out.append(
            check_finding(
                "draft-vocab-larger",
                E,
                f"draft_vocab_size {vd} > vocab_size {g.vocab_size}",
            )
        )
    elif (
        vd is not None
        and vd != g.vocab_size
        and facts.d2t_shape is None
        and facts.fc_in_source == "tensor"
    ):
        out.append(
            check_finding(
                "d2t-missing",
                E,
                f"draft vocabulary {vd} < {g.vocab_size} but the checkpoint has no d2t map",
            )
        )
    if g.tie_word_embeddings and vd is not None and vd < g.vocab_size:
        out.append(
            check_finding(
                "tied-head-reduced-vocab",
                E,
                f"tie_word_embeddings is true on a draft whose head has {vd} of "
                f"{g.vocab_size} tokens",
            )
        )
    if facts.use_aux_hidden_state is None or (facts.aux and facts.aux.layer_ids is None):
        missing = []
        if facts.aux is None or facts.aux.layer_ids is None:
            missing.append("eagle_aux_hidden_state_layer_ids")
        if facts.use_aux_hidden_state is None:
            missing.append("eagle_config.use_aux_hidden_state")
        if facts.target_hidden_size is None:
            missing.append("target_hidden_size")
        ht = facts.target_hidden_size or g.hidden_size
        n_ids = len(facts.aux.layer_ids) if facts.aux and facts.aux.layer_ids else 0
        narrow = ht * max(n_ids, 1) if facts.use_aux_hidden_state else g.hidden_size
        wide = facts.expected_fc_in or 3 * ht
        if narrow != wide:
            out.append(
                hazard_finding(
                    "sglang-bcg-draft-width",
                    W,
                    f"config lacks {', '.join(missing)}: SGLang builds with breakable CUDA "
                    f"graphs for the draft size its static hidden buffer {narrow} wide while the "
                    f"target emits {wide} → shape error on copy_ at BCG replay",
                    hazard_fix=True,
                )
            )
    if (
        facts.aux
        and facts.aux.layer_ids is not None
        and facts.aux.vllm_taps != facts.aux.sglang_taps
    ):
        out.append(
            check_finding(
                "aux-convention",
                INFO,
                f"explicit aux ids {facts.aux.layer_ids}: vLLM taps the outputs of layers "
                f"{facts.aux.vllm_taps}, SGLang of layers {facts.aux.sglang_taps} (one apart); the "
                "draft was trained against one of them",
            )
        )
    return out
