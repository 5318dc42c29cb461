"""Pair checks: each mismatch a serving engine would crash on, or silently degrade on.

Every finding names the rule and, through `eaglegraph.known`, the public PR or issue where the
hazard was seen, so a report reads as "this is the known failure X", not as an opinion.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable

from eaglegraph.findings import Finding, Severity
from eaglegraph.known.hazards import hazard
from eaglegraph.pair.facts import DraftFacts
from eaglegraph.pair.geometry import Geometry
from eaglegraph.pair.kinds import DraftKind
from eaglegraph.pair.model import ModelSide, Pair

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO

ShapeRule = tuple[re.Pattern[str], Callable[[Geometry], tuple[int, ...]]]


def _rules(g: Geometry, qkv_in_first: int, fc_in: int | None, lm_rows: int) -> list[ShapeRule]:
    h, i_, q, kv, hd = g.hidden_size, g.intermediate_size, g.q_width, g.kv_width, g.head_dim
    layer = r"(?:model\.)?(?:layers\.(\d+)|midlayer)\."

    def qkv_in(m: re.Match[str]) -> int:
        idx = m.group(1)
        return qkv_in_first if idx is None or idx == "0" else h

    rules: list[tuple[str, Callable[[re.Match[str]], tuple[int, ...]]]] = [
        (r"(?:model\.)?embed_tokens\.weight", lambda m: (g.vocab_size, h)),
        (r"(?:model\.)?lm_head\.weight", lambda m: (lm_rows, h)),
        (r"(?:model\.)?norm\.weight", lambda m: (h,)),
        (layer + r"self_attn\.q_proj\.weight", lambda m: (q, qkv_in(m))),
        (layer + r"self_attn\.k_proj\.weight", lambda m: (kv, qkv_in(m))),
        (layer + r"self_attn\.v_proj\.weight", lambda m: (kv, qkv_in(m))),
        (layer + r"self_attn\.q_proj\.bias", lambda m: (q,)),
        (layer + r"self_attn\.[kv]_proj\.bias", lambda m: (kv,)),
        (layer + r"self_attn\.o_proj\.weight", lambda m: (h, q)),
        (layer + r"self_attn\.[qk]_norm\.weight", lambda m: (hd,)),
        (layer + r"mlp\.(?:gate|up)_proj\.weight", lambda m: (i_, h)),
        (layer + r"mlp\.down_proj\.weight", lambda m: (h, i_)),
        (layer + r"(?:input|post_attention)_layernorm\.weight", lambda m: (h,)),
        (layer + r"hidden_norm\.weight", lambda m: (h,)),
    ]
    if fc_in is not None:
        rules.append((r"(?:model\.)?fc\.weight", lambda m: (h, fc_in)))
        rules.append((r"(?:model\.)?fc\.bias", lambda m: (h,)))
    return [(re.compile(p + "$"), fn) for p, fn in rules]  # type: ignore[misc]


def shape_findings(
    side: ModelSide, facts: DraftFacts | None, target: Geometry | None
) -> list[Finding]:
    """Tensor shapes that disagree with config.json, one finding per tensor family."""
    index = side.checkpoint
    if not index.has_weights:
        return []
    g = side.geometry
    lm_rows = g.vocab_size
    qkv_first = g.hidden_size
    fc_in = None
    if side.role == "draft" and facts is not None:
        if facts.kind is DraftKind.EAGLE3:
            qkv_first = 2 * g.hidden_size
            lm_rows = facts.draft_vocab_size or g.vocab_size
        fc_in = facts.expected_fc_in
    rules = _rules(g, qkv_first, fc_in, lm_rows)
    bad: dict[str, list[str]] = defaultdict(list)
    for name, info in index.tensors.items():
        for pattern, expect in rules:
            m = pattern.match(name)
            if m is None:
                continue
            layer = m.group(1) if pattern.groups else None
            if layer is not None and side.role == "target" and int(layer) >= g.num_hidden_layers:
                break  # MTP or extra layers are not part of the declared stack
            expected = expect(m)  # type: ignore[call-arg]
            if tuple(info.shape) != expected:
                family = re.sub(r"layers\.\d+\.", "layers.*.", name)
                bad[family].append(f"{name} {list(info.shape)} (config implies {list(expected)})")
            break
    findings = []
    for family, items in sorted(bad.items()):
        more = f" and {len(items) - 1} more" if len(items) > 1 else ""
        findings.append(
            Finding(
                id="tensor-shape-mismatch",
                severity=E,
                message=f"{side.role} tensor {items[0]}{more}",
                evidence=family,
                fix="the checkpoint and its config.json disagree; check head_dim, "
                "intermediate_size, draft_vocab_size and target_hidden_size",
            )
        )
    return findings


def side_findings(side: ModelSide) -> list[Finding]:
    out = []
    w = side.weights
    if w.format == "bin":
        out.append(
            Finding(
                id="bin-checkpoint",
                severity=E,
                message=f"{side.role} weights are pytorch_model.bin ({', '.join(w.files) or 'index'}); "
                "shapes cannot be read without unpickling",
                fix="convert to safetensors: load the state dict once and save it with "
                "safetensors.torch.save_file(sd, 'model.safetensors')",
                ref="SafeAILab/EAGLE releases ship .bin; vLLM/SGLang loaders expect safetensors",
            )
        )
    elif w.format == "none":
        out.append(
            Finding(
                id="missing-weights",
                severity=W,
                message=f"{side.role} folder {side.path} has config.json but no weights; "
                "geometry comes from the config alone",
                fix="use --random-weights for capture/probe, or add the safetensors files",
            )
        )
    g = side.geometry
    if g.head_dim_explicit and g.head_dim * g.num_attention_heads != g.hidden_size:
        out.append(
            Finding(
                id="explicit-head-dim",
                severity=W,
                message=f"{side.role} head_dim {g.head_dim} × {g.num_attention_heads} heads = "
                f"{g.q_width} ≠ hidden_size {g.hidden_size}; loaders that derive head_dim from "
                "hidden/heads build wrong q/k/v shapes",
                ref="SafeAILab/EAGLE#223, SafeAILab/EAGLE#315, vllm-project/speculators#134",
            )
        )
    if side.checkpoint.unknown_dtypes:
        out.append(
            Finding(
                id="unknown-dtype",
                severity=W,
                message=f"{side.role} has tensors of dtypes eaglegraph does not know: "
                f"{', '.join(side.checkpoint.unknown_dtypes[:3])}",
            )
        )
    return out


def _draft_target_findings(pair: Pair, facts: DraftFacts) -> list[Finding]:
    draft, target = pair.draft, pair.target
    assert draft is not None
    g = draft.geometry
    out: list[Finding] = []
    if facts.kind is DraftKind.EAGLE1:
        out += _eagle1_bias_findings(facts)
    if facts.kind is DraftKind.EAGLE3:
        out += _eagle3_findings(facts, g, target)
    if target is None:
        return out
    t = target.geometry
    if facts.kind is DraftKind.EAGLE1 and g.hidden_size != t.hidden_size:
        out.append(
            Finding(
                id="hidden-mismatch",
                severity=E,
                message=f"EAGLE-1 draft hidden_size {g.hidden_size} ≠ target {t.hidden_size}; "
                "fc consumes [embedding, target hidden] of the draft's width",
                ref=hazard("hidden-mismatch").ref_text,
                hazard="hidden-mismatch",
            )
        )
    if facts.kind is DraftKind.EAGLE3:
        declared = facts.target_hidden_size or g.hidden_size
        if declared != t.hidden_size:
            key = (
                "target_hidden_size"
                if facts.target_hidden_size
                else "hidden_size (no target_hidden_size)"
            )
            out.append(
                Finding(
                    id="hidden-mismatch",
                    severity=E,
                    message=f"draft {key} {declared} ≠ target hidden_size {t.hidden_size}; the aux "
                    "states the target emits do not fit the draft",
                    ref=hazard("hidden-mismatch").ref_text,
                    hazard="hidden-mismatch",
                    fix="set target_hidden_size in the draft config to the target's hidden_size",
                )
            )
    expected_fc = None
    if facts.kind is DraftKind.EAGLE1:
        expected_fc = 2 * t.hidden_size
    elif facts.kind is DraftKind.EAGLE3 and facts.use_aux_hidden_state is not False:
        n_aux = len(facts.aux.layer_ids) if facts.aux and facts.aux.layer_ids else 3
        expected_fc = n_aux * t.hidden_size
    if (
        expected_fc is not None
        and facts.fc_in_features is not None
        and facts.fc_in_source == "tensor"
        and facts.fc_in_features != expected_fc
    ):
        out.append(
            Finding(
                id="fc-width-mismatch",
                severity=E,
                message=f"fc.weight takes {facts.fc_in_features} inputs but the target provides "
                f"{expected_fc}",
                ref=hazard("fc-width-mismatch").ref_text,
                hazard="fc-width-mismatch",
            )
        )
    if g.vocab_size != t.vocab_size:
        out.append(
            Finding(
                id="vocab-mismatch",
                severity=E,
                message=f"draft vocab_size {g.vocab_size} ≠ target vocab_size {t.vocab_size}",
                ref="research eagle-formats §8.6",
            )
        )
    if facts.t2d_shape and facts.t2d_shape[0] != t.vocab_size:
        out.append(
            Finding(
                id="t2d-length-mismatch",
                severity=E,
                message=f"t2d has {facts.t2d_shape[0]} entries; the target vocabulary has {t.vocab_size}",
                ref="research eagle-formats §2.2 (t2d length gives the target vocab)",
            )
        )
    if facts.aux and facts.aux.layer_ids:
        bad = [i for i in facts.aux.layer_ids if not 0 <= i < t.num_hidden_layers]
        if bad:
            out.append(
                Finding(
                    id="aux-ids-out-of-range",
                    severity=E,
                    message=f"aux layer ids {bad} outside the target's {t.num_hidden_layers} layers",
                    ref="research eagle-formats §2.3",
                )
            )
        sglang_past_end = [
            i for i in facts.aux.layer_ids if i >= 0 and i + 1 >= t.num_hidden_layers
        ]
        if sglang_past_end and not bad:
            out.append(
                Finding(
                    id="aux-ids-sglang-shift",
                    severity=W,
                    message=f"SGLang adds +1 to explicit aux ids; id(s) {sglang_past_end} would tap "
                    "past the last layer there",
                    ref="sglang set_eagle3_layers_to_capture (+1 shift)",
                )
            )
    if g.max_position_embeddings < t.max_position_embeddings:
        out.append(
            Finding(
                id="draft-max-positions",
                severity=W,
                message=f"draft max_position_embeddings {g.max_position_embeddings} < target "
                f"{t.max_position_embeddings}: past {g.max_position_embeddings} tokens the draft's "
                f"rotary table is indexed out of range (device assert 'index < "
                f"{g.max_position_embeddings}') unless the engine raises it",
                ref=hazard("draft-max-positions").ref_text,
                fix=hazard("draft-max-positions").fix_text,
                hazard="draft-max-positions",
            )
        )
    if t.head_dim != g.head_dim and facts.kind in (DraftKind.EAGLE1, DraftKind.EAGLE3):
        out.append(
            Finding(
                id="head-dim-differs",
                severity=INFO,
                message=f"draft head_dim {g.head_dim} differs from target head_dim {t.head_dim}",
            )
        )
    return out


def _eagle1_bias_findings(facts: DraftFacts) -> list[Finding]:
    refs = hazard("eagle1-fc-bias").ref_text
    if facts.fc_bias_tensor is None:
        if facts.config_bias is None:
            return [
                Finding(
                    id="eagle1-fc-bias",
                    severity=INFO,
                    message="EAGLE-1 config has no 'bias' key: SafeAILab's loader then expects "
                    "fc.bias (default true); without weights this cannot be confirmed",
                    ref=refs,
                    hazard="eagle1-fc-bias",
                )
            ]
        return []
    if facts.fc_bias_tensor and facts.config_bias is False:
        return [
            Finding(
                id="eagle1-fc-bias",
                severity=E,
                message='checkpoint has fc.bias but config says "bias": false; loaders that '
                "trust the config drop the bias and acceptance falls",
                ref=refs,
                hazard="eagle1-fc-bias",
            )
        ]
    if facts.fc_bias_tensor and facts.config_bias is None:
        return [
            Finding(
                id="eagle1-fc-bias",
                severity=W,
                message="checkpoint has fc.bias and no 'bias' key in config: vLLM versions whose "
                "llama_eagle fc has bias=False silently skip it (lower acceptance)",
                ref=refs,
                hazard="eagle1-fc-bias",
            )
        ]
    if not facts.fc_bias_tensor and facts.config_bias is not False:
        return [
            Finding(
                id="eagle1-fc-bias",
                severity=W,
                message='no fc.bias in the checkpoint, but config does not say "bias": false; '
                "SGLang's LlamaForCausalLMEagle always builds a bias and SafeAILab defaults to one",
                ref=refs,
                hazard="eagle1-fc-bias",
            )
        ]
    return []


def _eagle3_findings(facts: DraftFacts, g: Geometry, target: ModelSide | None) -> list[Finding]:
    out = []
    vd = facts.draft_vocab_size
    if facts.lm_head_rows is not None and vd is not None and facts.lm_head_rows != vd:
        out.append(
            Finding(
                id="lm-head-rows-mismatch",
                severity=E,
                message=f"lm_head has {facts.lm_head_rows} rows but draft_vocab_size is {vd}",
                ref=hazard("lm-head-rows-mismatch").ref_text,
                hazard="lm-head-rows-mismatch",
            )
        )
    if facts.d2t_shape is not None and vd is not None and facts.d2t_shape[0] != vd:
        out.append(
            Finding(
                id="d2t-length-mismatch",
                severity=E,
                message=f"d2t has {facts.d2t_shape[0]} entries but draft_vocab_size is {vd}",
                ref="research eagle-formats §2.2",
            )
        )
    if (
        vd is not None
        and vd != g.vocab_size
        and facts.d2t_shape is None
        and facts.fc_in_source == "tensor"
    ):
        out.append(
            Finding(
                id="d2t-missing",
                severity=E,
                message=f"draft vocabulary {vd} < {g.vocab_size} but the checkpoint has no d2t map",
                ref="research eagle-formats §2.2",
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
                Finding(
                    id="sglang-bcg-draft-width",
                    severity=W,
                    message=f"config lacks {', '.join(missing)}: SGLang builds with breakable CUDA "
                    f"graphs for the draft size its static hidden buffer {narrow} wide while the "
                    f"target emits {wide} → shape error on copy_ at BCG replay",
                    ref=hazard("sglang-bcg-draft-width").ref_text,
                    fix=hazard("sglang-bcg-draft-width").fix_text,
                    hazard="sglang-bcg-draft-width",
                )
            )
    if (
        facts.aux
        and facts.aux.layer_ids is not None
        and facts.aux.vllm_taps != facts.aux.sglang_taps
    ):
        out.append(
            Finding(
                id="aux-convention",
                severity=INFO,
                message=f"explicit aux ids {facts.aux.layer_ids}: vLLM taps the outputs of layers "
                f"{facts.aux.vllm_taps}, SGLang of layers {facts.aux.sglang_taps} (one apart); the "
                "draft was trained against one of them",
                ref="research eagle-formats §2.3",
            )
        )
    return out


def check_pair(pair: Pair) -> list[Finding]:
    findings: list[Finding] = []
    for side in (pair.target, pair.draft):
        if side is not None:
            findings += side_findings(side)
            target_geometry = pair.target.geometry if pair.target else None
            findings += shape_findings(
                side, pair.draft_facts if side.role == "draft" else None, target_geometry
            )
    facts = pair.draft_facts
    if facts is not None:
        if not facts.kind.supported and facts.kind is not DraftKind.UNKNOWN:
            findings.append(
                Finding(
                    id="unsupported-draft-kind",
                    severity=W,
                    message=f"draft kind {facts.kind.value} is recognised but eaglegraph's rig "
                    "builds EAGLE-1 and EAGLE-3 only; capture and probe are not available",
                )
            )
        if pair.draft is not None and facts.kind in (DraftKind.EAGLE1, DraftKind.EAGLE3):
            findings += _draft_target_findings(pair, facts)
    if pair.missing:
        findings.append(Finding(id="incomplete-pair", severity=INFO, message=pair.missing))
    return findings
