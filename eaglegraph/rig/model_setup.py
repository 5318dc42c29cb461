"""From an inspected Pair to loaded (or seeded random) target and draft modules.

Everything that can be wrong with the pair is refused here, before any tensor is allocated:
an unsupported draft kind, a missing side, config-only folders without --random-weights, and
the pair checks that would make the forward pass impossible (widths, vocabularies).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from eaglegraph.errors import BadInput
from eaglegraph.models.drafts import Draft, DraftArch, draft_build, load_draft, random_draft
from eaglegraph.models.loading import resolve_dtype
from eaglegraph.models.target import TargetModel, target_family
from eaglegraph.models.target_build import build_target
from eaglegraph.pair.kinds import DraftKind, supported_titles
from eaglegraph.pair.kv_layers import mtp_layout
from eaglegraph.pair.mla import mla_dims
from eaglegraph.pair.model import Pair
from eaglegraph.pair.mtp_layout import not_built_reason
from eaglegraph.results.findings import Severity

# pair checks that make the rig impossible to build (others are reported, not fatal)
FATAL_CHECKS = {
    "hidden-mismatch",
    "fc-width-mismatch",
    "vocab-mismatch",
    "t2d-length-mismatch",
    "lm-head-rows-mismatch",
    "d2t-length-mismatch",
    "aux-ids-out-of-range",
    "tensor-shape-mismatch",
    "draft-vocab-larger",
    "d2t-missing",
}


@dataclass
class LoadedPair:
    target: TargetModel
    draft: Draft
    arch: DraftArch
    kind: DraftKind
    aux_layer_ids: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device
    random_weights: bool

    @property
    def vocab_size(self) -> int:
        return self.target.vocab_size

    @property
    def draft_vocab_size(self) -> int:
        return int(getattr(self.draft, "draft_vocab_size", self.target.vocab_size))


def resolve_model_dtype(name: str, pair: Pair, device: torch.device) -> torch.dtype:
    """`auto`: the config's dtype on CUDA, float32 on CPU (bf16 on CPU is slow and lossy)."""
    if name != "auto":
        return resolve_dtype(name)
    if device.type != "cuda":
        return torch.float32
    config_dtype = pair.target.geometry.dtype if pair.target else None
    return resolve_dtype(config_dtype or "bfloat16")


def check_buildable(pair: Pair, random_weights: bool, framework: str = "vllm") -> tuple[int, ...]:
    """Whether the pair can be built, from its configs and headers alone, and why not.

    The one home of every condition `build_models` refuses (the preflight calls it before any
    worker starts, so bad input never becomes a crash): a missing side, an unsupported draft
    kind, a fatal pair check, config-only folders without --random-weights, an unsupported
    target architecture, a draft kind that cannot follow an MLA target, aux layer ids past the
    target's layers. Returns the aux layer ids the draft taps (its kind decides).
    """
    facts = pair.draft_facts
    if pair.target is None:
        raise BadInput(pair.missing or "no target model found; give MODEL_DIR with a target")
    if facts is None or pair.draft is None:
        raise BadInput(pair.missing or "no draft model found; the rig needs an EAGLE draft")
    if not facts.kind.supported:
        raise BadInput(
            f"draft kind {facts.kind.value} is recognised but not supported by the rig "
            f"({supported_titles()} only)"
        )
    if facts.kind is DraftKind.MTP:  # recognised layouts the rig does not build, and why
        layout = mtp_layout(pair)
        why = not_built_reason(layout, pair.draft.config) if layout is not None else None
        if layout is not None and why is not None:
            raise BadInput(f"{layout.style} MTP ({pair.draft.path}) is recognised but {why}")
    fatal = [f for f in pair.findings if f.id in FATAL_CHECKS and f.severity is Severity.ERROR]
    if fatal:
        raise BadInput(f"the pair cannot be built: {fatal[0].id}: {fatal[0].message}")
    if not random_weights:
        for side in (pair.target, pair.draft):
            if not side.checkpoint.has_weights:
                raise BadInput(
                    f"{side.role} {side.path} has no weights eaglegraph reads (safetensors); "
                    "pass --random-weights to build it from config.json alone"
                )
    build = draft_build(facts.kind)
    if mla_dims(pair.target.config) is None:
        target_family(pair.target.geometry)  # unsupported target architectures fail here
    elif not build.mla_target:
        raise BadInput(
            f"an MLA target with a {facts.kind.value} draft is not supported by the rig (MTP "
            "drafts of MLA targets are)"
        )
    aux = build.aux_layer_ids(pair, framework)
    layers = pair.target.geometry.num_hidden_layers
    if aux and max(aux) >= layers:
        raise BadInput(
            f"aux layer ids {list(aux)} ({framework} convention) tap past the target's "
            f"{layers} layers"
        )
    return aux


def build_models(
    pair: Pair,
    dtype: torch.dtype,
    device: torch.device,
    *,
    random_weights: bool = False,
    seed: int = 0,
    framework: str = "vllm",
    max_positions: int | None = None,
) -> LoadedPair:
    """The pair's target and draft modules, whatever the kind: its `BUILD` says how."""
    aux = check_buildable(pair, random_weights, framework)
    assert pair.target is not None and pair.draft is not None and pair.draft_facts is not None
    kind = pair.draft_facts.kind
    arch = draft_build(kind).arch(pair, framework)
    target = build_target(
        pair.target, dtype, device,
        random_weights=random_weights, seed=seed, max_positions=max_positions,
    )  # fmt: skip
    if random_weights:
        draft = random_draft(
            pair.draft.geometry, arch, target, dtype, device, seed + 1,  # type: ignore[arg-type]
            max_positions=max_positions,
        )  # fmt: skip
    else:
        draft = load_draft(
            pair.draft.path, pair.draft.geometry, arch, target, dtype, device,  # type: ignore[arg-type]
            max_positions=max_positions,
        )  # fmt: skip
    target.eval()
    draft.eval()
    return LoadedPair(target, draft, arch, kind, aux, dtype, device, random_weights)  # type: ignore[arg-type]
