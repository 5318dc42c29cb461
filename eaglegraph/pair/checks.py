"""Pair checks: each mismatch a serving engine would crash on, or silently degrade on.

Every finding names the rule and, through `eaglegraph.known`, the public PR, issue or engine
source where the behaviour is documented, what the engine does with the mismatch and what to
change, so a report reads as "this is the known failure X", not as an opinion. A finding of
one engine only is shown under that engine's plan only (`for_engine`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable

from eaglegraph.known.hazards import HAZARDS
from eaglegraph.known.pair_checks import (
    MAX_DRAFT_LAYERS,
    PAIR_CHECKS,
    PLAUSIBLE_MAX,
    RMS_EPS_RTOL,
)
from eaglegraph.pair.config import Config
from eaglegraph.pair.discovery import hf_cache_name
from eaglegraph.pair.drafts.findings import check_finding, hazard_finding
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
            check_finding(
                "eaglegraph-needs-safetensors",
                INFO,
                f"{side.role} weights are PyTorch .bin ({', '.join(w.files) or 'index'}): fine "
                "for vLLM and SGLang; eaglegraph cannot read their shapes without unpickling",
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
    out += _implausible(side)
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
            check_finding(
                "vocab-mismatch",
                E,
                f"draft vocab_size {g.vocab_size} ≠ target vocab_size {t.vocab_size}",
            )
        )
    if facts.t2d_shape and facts.t2d_shape[0] != t.vocab_size:
        out.append(
            check_finding(
                "t2d-length-mismatch",
                W,
                f"t2d has {facts.t2d_shape[0]} entries; the target vocabulary has {t.vocab_size}",
            )
        )
    if facts.aux and facts.aux.layer_ids:
        bad = [i for i in facts.aux.layer_ids if not 0 <= i < t.num_hidden_layers]
        if bad:
            out.append(
                check_finding(
                    "aux-ids-out-of-range",
                    E,
                    f"aux layer ids {bad} outside the target's {t.num_hidden_layers} layers",
                )
            )
        sglang_past_end = [
            i for i in facts.aux.layer_ids if i >= 0 and i + 1 >= t.num_hidden_layers
        ]
        if sglang_past_end and not bad:
            out.append(
                check_finding(
                    "aux-ids-sglang-shift",
                    W,
                    f"aux id(s) {sglang_past_end} tap past the target's last layer "
                    f"({t.num_hidden_layers} layers) once SGLang adds 1",
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
    out += _rope_findings(g, t, _states_theta(draft.config)) + _verifier_findings(pair, facts)
    if abs(g.rms_norm_eps - t.rms_norm_eps) > RMS_EPS_RTOL * max(g.rms_norm_eps, t.rms_norm_eps):
        out.append(
            check_finding(
                "rms-eps-differs",
                INFO,
                f"draft rms_norm_eps {g.rms_norm_eps:g} ≠ target {t.rms_norm_eps:g}",
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


def layout_finding(warning: str) -> Finding:
    """What discovery skipped (a symlink loop, an unreadable folder) or chose among several."""
    return Finding(id="layout-skipped", severity=W, message=warning)


def _implausible(side: ModelSide) -> list[Finding]:
    """Sizes no published model reaches (`known.pair_checks.PLAUSIBLE_MAX`), field named.
    Negative, NaN and wrongly typed values never get here: config.json reading refuses them."""
    g = side.geometry
    values = {name: getattr(g, name, None) for name in PLAUSIBLE_MAX}
    values["rope_theta"] = g.rope.rope_theta
    values["draft_vocab_size"] = side.config.raw("draft_vocab_size")
    out = []
    for name, value in values.items():
        if isinstance(value, (int, float)) and value > PLAUSIBLE_MAX[name]:
            out.append(
                check_finding(
                    "implausible-value",
                    W,
                    f"{side.role} {name} = {value:.6g} is beyond any published model "
                    f"(eaglegraph's bound: {PLAUSIBLE_MAX[name]:,.0f})",
                )
            )
    return out


def _states_theta(cfg: Config) -> bool:
    """Whether a config writes its rope θ (top level, `rope_parameters`, or the nested layer
    config of speculators and multimodal wrappers) rather than leaving it to the default."""
    for sub in (cfg, cfg.sub("transformer_layer_config"), cfg.sub("text_config")):
        if sub is None:
            continue
        params = sub.dict("rope_parameters") or {}
        if sub.has("rope_theta") or "rope_theta" in params:
            return True
    return False


def _rope_findings(g: Geometry, t: Geometry, stated: bool) -> list[Finding]:
    """θ and scaling of the draft against the target's. A θ the draft config states is a
    warning (it was written for another model, or rewritten); a default θ, or scaling only one
    side has, is information: the draft was most likely trained with its own config."""
    out = []
    dr, tr = g.rope, t.rope
    if dr.rope_theta != tr.rope_theta:
        out.append(
            check_finding(
                "rope-theta-differs",
                W if stated else INFO,
                f"draft rope θ {dr.rope_theta:g}"
                f"{'' if stated else ' (no rope_theta: the default)'} ≠ target θ "
                f"{tr.rope_theta:g}",
            )
        )
    draft_scaling = (dr.rope_type, dr.factor)
    target_scaling = (tr.rope_type, tr.factor)
    if draft_scaling != target_scaling:
        both = dr.rope_type != "default" and tr.rope_type != "default"
        out.append(
            check_finding(
                "rope-scaling-differs",
                W if both else INFO,
                f"draft rope scaling {_scaling(dr.rope_type, dr.factor)} ≠ target "
                f"{_scaling(tr.rope_type, tr.factor)}",
            )
        )
    return out


def _scaling(rope_type: str, factor: float | None) -> str:
    return "none" if rope_type == "default" else f"{rope_type} ×{factor:g}" if factor else rope_type


def _identity(side: ModelSide) -> set[str]:
    """Names the target is known by beyond a folder name a user chose: its Hugging Face cache
    name and the `_name_or_path` its config was saved with (last path part, lower case)."""
    names = {hf_cache_name(side.path), side.config.raw("_name_or_path")}
    return {n.rstrip("/").split("/")[-1].lower() for n in names if isinstance(n, str) and n}


def _verifier_findings(pair: Pair, facts: DraftFacts) -> list[Finding]:
    """The verifier the draft names (speculators' `verifier`, `base_model_name_or_path`) or the
    model type it was trained against (SpecForge's `target_model_type`) against the target."""
    target, draft = pair.target, pair.draft
    if target is None or draft is None:
        return []
    problems = []
    if facts.verifier:
        known = _identity(target)
        named = facts.verifier.rstrip("/").split("/")[-1].lower()
        # containment, not equality: a draft for Qwen3-8B serves Qwen3-8B-FP8 as well, and
        # Meta-Llama-3.1-8B-Instruct is Llama-3.1-8B-Instruct renamed
        if known and not any(named in k or k in named for k in known):
            problems.append(
                f"names verifier {facts.verifier!r}; the target is {' / '.join(sorted(known))}"
            )
        spec = draft.config.sub("speculators_config")
        verifier = spec.sub("verifier") if spec is not None else None
        archs = verifier.str_list("architectures") if verifier is not None else []
        if archs and target.architecture not in archs:
            problems.append(
                f"names verifier architectures {archs}; the target is a {target.architecture}"
            )
    trained_for = draft.config.str("target_model_type", default=None)
    target_types = {target.geometry.model_type, target.config.str("model_type", default="")}
    if trained_for and trained_for not in target_types:
        problems.append(
            f"says target_model_type {trained_for!r}; the target is "
            f"{' / '.join(sorted(t for t in target_types if t))}"
        )
    if not problems:
        return []
    return [check_finding("verifier-mismatch", W, f"the draft {'; '.join(problems)}")]


def _draft_layer_findings(pair: Pair, facts: DraftFacts) -> list[Finding]:
    limit = MAX_DRAFT_LAYERS.get(facts.kind.value)
    draft = pair.draft
    if limit is None or draft is None or draft.path == (pair.target and pair.target.path):
        return []
    layers = draft.geometry.num_hidden_layers
    if layers <= limit:
        return []
    return [
        check_finding(
            "draft-layers-implausible",
            W,
            f"a {layers}-layer {facts.kind.spec.title} draft: heads of this kind have at most "
            f"{limit}",
        )
    ]


def engine_of(finding: Finding) -> str | None:
    """The engine a finding belongs to (None: both), from its hazard or its pair check."""
    if finding.hazard in HAZARDS:
        return HAZARDS[finding.hazard].engine
    check = PAIR_CHECKS.get(finding.id)
    return check.engine if check is not None else None


def for_engine(findings: list[Finding], engine: str) -> list[Finding]:
    """The findings a plan for `engine` shows: its own and those of both engines."""
    return [f for f in findings if engine_of(f) in (None, engine)]


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
        findings += _draft_layer_findings(pair, facts)
        if pair.draft is not None and facts.kind.spec.checked_against_target:
            findings += _draft_target_findings(pair, facts)
    if pair.missing:
        findings.append(Finding(id="incomplete-pair", severity=INFO, message=pair.missing))
    return findings
