"""Pair checks: each mismatch a serving engine would crash on, or silently degrade on.

Every finding names the rule and, through `eaglegraph.known`, the public PR or issue where the
hazard was seen, so a report reads as "this is the known failure X", not as an opinion.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable

from eaglegraph.pair.drafts.base import hazard_finding
from eaglegraph.pair.facts import DraftFacts
from eaglegraph.pair.geometry import Geometry
from eaglegraph.pair.kinds import DraftKind, supported_titles
from eaglegraph.pair.mla import mla_dims
from eaglegraph.pair.model import ModelSide, Pair
from eaglegraph.results.findings import Finding, Severity

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO

ShapeRule = tuple[re.Pattern[str], Callable[[re.Match[str]], tuple[int, ...]]]


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
    return [(re.compile(p + "$"), fn) for p, fn in rules]


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
        qkv_first = facts.kind.spec.first_layer_qkv_in(g)
        lm_rows = facts.kind.spec.lm_head_rows(facts, g)
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
            expected = expect(m)
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
    mla = mla_dims(side.config) is not None  # MLA widths come from their own keys
    if g.head_dim_explicit and not mla and g.head_dim * g.num_attention_heads != g.hidden_size:
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
    spec = facts.kind.spec
    out: list[Finding] = spec.own_findings(facts, g) + facts.kind_findings
    if target is None:
        return out
    t = target.geometry
    out += spec.target_width_findings(facts, g, t)
    expected_fc = spec.expected_fc_from_target(facts, t)
    if (
        expected_fc is not None
        and facts.fc_in_features is not None
        and facts.fc_in_source == "tensor"
        and facts.fc_in_features != expected_fc
    ):
        out.append(
            hazard_finding(
                "fc-width-mismatch",
                E,
                f"fc.weight takes {facts.fc_in_features} inputs but the target provides "
                f"{expected_fc}",
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
            hazard_finding(
                "draft-max-positions",
                W,
                f"draft max_position_embeddings {g.max_position_embeddings} < target "
                f"{t.max_position_embeddings}: past {g.max_position_embeddings} tokens the draft's "
                f"rotary table is indexed out of range (device assert 'index < "
                f"{g.max_position_embeddings}') unless the engine raises it",
                hazard_fix=True,
            )
        )
    if t.head_dim != g.head_dim:
        out.append(
            Finding(
                id="head-dim-differs",
                severity=INFO,
                message=f"draft head_dim {g.head_dim} differs from target head_dim {t.head_dim}",
            )
        )
    return out


def check_pair(pair: Pair) -> list[Finding]:
    findings: list[Finding] = []
    for side in (pair.target, pair.draft):
        if side is not None:
            # a draft inside the target's checkpoint (MTP layers) shares its folder's findings
            inner = (
                side.role == "draft" and pair.target is not None and side.path == pair.target.path
            )
            if not inner:
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
                    f"builds {supported_titles()} only; capture and probe are not available",
                )
            )
        if pair.draft is not None and facts.kind.spec.checked_against_target:
            findings += _draft_target_findings(pair, facts)
    if pair.missing:
        findings.append(Finding(id="incomplete-pair", severity=INFO, message=pair.missing))
    return findings
