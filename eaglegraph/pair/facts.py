"""Draft facts: what the draft consumes and produces, read from config and headers.

These are the numbers that must agree across the pair before a serving engine can load it:
fc input width, draft vocabulary and its d2t/t2d maps, which target layers feed EAGLE-3, and
whether embeddings and lm_head are the draft's own or borrowed from the target.
"""

from __future__ import annotations

from eaglegraph.pair.config import Config
from eaglegraph.pair.drafts.base import DraftFacts as DraftFacts
from eaglegraph.pair.drafts.base import FactsInput
from eaglegraph.pair.drafts.detection import KindVerdict
from eaglegraph.pair.tensors import CheckpointIndex, TensorInfo
from eaglegraph.results.inspect import AuxTapsFacts

AuxTaps = AuxTapsFacts  # one record: what inspect reports is what the pair derived


def default_aux_layers(num_layers: int) -> list[int]:
    """vLLM/SGLang default taps in the entering-layer convention: (2, L//2, L-3)."""
    return [2, num_layers // 2, num_layers - 3]


def aux_taps(layer_ids: list[int] | None, source: str, target_layers: int | None) -> AuxTaps:
    if layer_ids is None:
        entering = default_aux_layers(target_layers) if target_layers else []
        taps = [i - 1 for i in entering]
        return AuxTaps(None, "default", entering, taps, list(taps))
    # vLLM uses explicit ids as given (entering layer i = output of layer i-1);
    # SGLang adds +1 (entering layer i+1 = output of layer i).
    return AuxTaps(
        list(layer_ids),
        source,
        list(layer_ids),
        [i - 1 for i in layer_ids],
        list(layer_ids),
    )


def _find(index: CheckpointIndex | None, *names: str) -> TensorInfo | None:
    if index is None:
        return None
    candidates = []
    for n in names:
        candidates += [n, f"model.{n}"]
    return index.find(*candidates)


def _explicit_aux_ids(cfg: Config) -> tuple[list[int] | None, str]:
    eagle_cfg = cfg.sub("eagle_config")
    if eagle_cfg is not None:
        ids = eagle_cfg.int_list("eagle_aux_hidden_state_layer_ids")
        if ids is not None:
            return ids, "eagle_config.eagle_aux_hidden_state_layer_ids"
    ids = cfg.int_list("eagle_aux_hidden_state_layer_ids")
    if ids is not None:
        return ids, "eagle_aux_hidden_state_layer_ids"
    return None, "default"


def _use_aux(cfg: Config) -> bool | None:
    eagle_cfg = cfg.sub("eagle_config")
    if eagle_cfg is not None and eagle_cfg.has("use_aux_hidden_state"):
        return eagle_cfg.bool("use_aux_hidden_state")
    return None


def _verifier(cfg: Config) -> tuple[str | None, int | None]:
    spec = cfg.sub("speculators_config")
    if spec is None:
        return None, None
    verifier = spec.sub("verifier")
    name = verifier.str("name_or_path", default=None) if verifier is not None else None
    tokens = None
    methods = spec.raw("proposal_methods")
    if isinstance(methods, list):
        default = spec.str("default_proposal_method", default=None)
        for method in methods:
            if not isinstance(method, dict):
                continue
            if default is None or method.get("proposal_type") == default:
                value = method.get("speculative_tokens")
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    tokens = value
                    break
    return name, tokens


def draft_facts(
    cfg: Config,
    verdict: KindVerdict,
    index: CheckpointIndex | None,
    hidden_size: int,
    vocab_size: int,
    target_hidden: int | None,
    target_layers: int | None,
) -> DraftFacts:
    """Facts of a draft of any kind; its kind's spec derives fc width, vocabulary, aux taps."""
    spec = verdict.kind.spec
    fc = _find(index, "fc.weight", "fusion_fc.weight")
    has_weights = index is not None and index.has_weights
    explicit_ids, ids_source = _explicit_aux_ids(cfg)
    draft_vocab = cfg.int("draft_vocab_size", default=None, minimum=1)
    if draft_vocab is None:
        draft_vocab = cfg.int("truncated_vocab_size", default=None, minimum=1)
    config_target_hidden = cfg.int("target_hidden_size", default=None, minimum=1)
    d2t = _find(index, "d2t")
    t2d = _find(index, "t2d")
    lm_head = index.find("lm_head.weight", "model.lm_head.weight") if index else None
    embed = _find(index, "embed_tokens.weight")
    verifier, spec_tokens = _verifier(cfg)
    use_aux = _use_aux(cfg)
    shape = spec.shape_facts(
        FactsInput(
            cfg=cfg,
            hidden_size=hidden_size,
            vocab_size=vocab_size,
            target_hidden=target_hidden,
            target_layers=target_layers,
            config_target_hidden=config_target_hidden,
            draft_vocab=draft_vocab,
            explicit_aux_ids=explicit_ids,
            aux_ids_source=ids_source,
            use_aux=use_aux,
            index=index,
        )
    )
    expected_fc = shape.expected_fc_in
    embed_state = "own" if embed else ("unknown (no weights)" if not has_weights else "shared")

    return DraftFacts(
        kind=verdict.kind,
        style=verdict.style,
        evidence=list(verdict.evidence),
        fc_in_features=fc.shape[1] if fc is not None and len(fc.shape) == 2 else expected_fc,
        fc_in_source="tensor" if fc is not None else "config",
        expected_fc_in=expected_fc,
        fc_bias_tensor=(_find(index, "fc.bias") is not None) if has_weights else None,
        config_bias=cfg.bool("bias", default=None),
        target_hidden_size=config_target_hidden,
        draft_vocab_size=shape.draft_vocab_size,
        d2t_shape=list(d2t.shape) if d2t else None,
        t2d_shape=list(t2d.shape) if t2d else None,
        lm_head_rows=lm_head.shape[0] if lm_head is not None and lm_head.shape else None,
        aux=shape.aux,
        use_aux_hidden_state=use_aux,
        embed_tokens=embed_state,
        lm_head=spec.lm_head_state(lm_head is not None, has_weights),
        verifier=verifier,
        speculative_tokens=spec_tokens,
        notes=shape.notes,
        kind_facts=shape.rows,
        kind_findings=shape.findings,
    )
