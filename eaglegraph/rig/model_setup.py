"""From an inspected Pair to loaded (or seeded random) target and draft modules.

Everything that can be wrong with the pair is refused here, before any tensor is allocated:
an unsupported draft kind, a missing side, config-only folders without --random-weights, and
the pair checks that would make the forward pass impossible (widths, vocabularies).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from eaglegraph.errors import BadInput
from eaglegraph.models.dflash_build import build_dflash_draft, dflash_arch
from eaglegraph.models.drafts import Draft, DraftArch, draft_build, load_draft, random_draft
from eaglegraph.models.init import random_target
from eaglegraph.models.loading import load_target, resolve_dtype
from eaglegraph.models.mtp_build import build_mtp_draft, build_target, mtp_arch
from eaglegraph.models.target import TargetModel, target_family
from eaglegraph.pair.kinds import DraftKind, supported_titles
from eaglegraph.pair.mla import mla_dims
from eaglegraph.pair.model import Pair
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
    "bin-checkpoint",
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


def check_buildable(pair: Pair, random_weights: bool) -> None:
    facts = pair.draft_facts
    if pair.target is None:
        raise BadInput(pair.missing or "no target model found; give MODEL_DIR with a target")
    if facts is None or pair.draft is None:
        raise BadInput(pair.missing or "no draft model found; the rig needs an EAGLE draft")
    if not facts.kind.supported and facts.kind not in (DraftKind.MTP, DraftKind.DFLASH):
        raise BadInput(
            f"draft kind {facts.kind.value} is recognised but not supported by the rig "
            f"({supported_titles()} only)"
        )
    fatal = [f for f in pair.findings if f.id in FATAL_CHECKS and f.severity is Severity.ERROR]
    if fatal:
        raise BadInput(f"the pair cannot be built: {fatal[0].id}: {fatal[0].message}")
    if not random_weights:
        for side in (pair.target, pair.draft):
            if not side.checkpoint.has_weights:
                raise BadInput(
                    f"{side.role} {side.path} has no weights; pass --random-weights to build "
                    "it from config.json alone"
                )
    if mla_dims(pair.target.config) is None:
        target_family(pair.target.geometry)  # unsupported target architectures fail here


def draft_arch(pair: Pair) -> DraftArch:
    assert pair.draft_facts is not None
    return draft_build(pair.draft_facts.kind).arch(pair)


def aux_layer_ids(pair: Pair, framework: str) -> tuple[int, ...]:
    """Entering-layer ids of the target states the draft consumes (its kind decides)."""
    facts = pair.draft_facts
    if facts is None or pair.target is None or not facts.kind.supported:
        return ()
    return draft_build(facts.kind).aux_layer_ids(pair, framework)


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
    check_buildable(pair, random_weights)
    assert pair.target is not None and pair.draft is not None and pair.draft_facts is not None
    if pair.draft_facts.kind is DraftKind.DFLASH:
        return _build_dflash(pair, dtype, device, random_weights, seed, max_positions)
    if pair.draft_facts.kind is DraftKind.MTP or mla_dims(pair.target.config) is not None:
        return _build_mtp(pair, dtype, device, random_weights, seed, max_positions)
    arch = draft_arch(pair)
    aux = aux_layer_ids(pair, framework)
    if aux and max(aux) >= pair.target.geometry.num_hidden_layers:
        raise BadInput(
            f"aux layer ids {list(aux)} ({framework} convention) tap past the target's "
            f"{pair.target.geometry.num_hidden_layers} layers"
        )
    if random_weights:
        target = random_target(
            pair.target.geometry, dtype, device, seed, max_positions=max_positions
        )
        draft = random_draft(
            pair.draft.geometry, arch, target, dtype, device, seed + 1, max_positions=max_positions
        )
    else:
        target = load_target(
            pair.target.path, pair.target.geometry, dtype, device, max_positions=max_positions
        )
        draft = load_draft(
            pair.draft.path,
            pair.draft.geometry,
            arch,
            target,
            dtype,
            device,
            max_positions=max_positions,
        )
    target.eval()
    draft.eval()
    return LoadedPair(
        target, draft, arch, pair.draft_facts.kind, aux, dtype, device, random_weights
    )


def _build_mtp(
    pair: Pair,
    dtype: torch.dtype,
    device: torch.device,
    random_weights: bool,
    seed: int,
    max_positions: int | None,
) -> LoadedPair:
    """An MLA target (or a standard one) and its MTP draft."""
    assert pair.target is not None and pair.draft_facts is not None
    if pair.draft_facts.kind is not DraftKind.MTP:
        raise BadInput(
            f"an MLA target with a {pair.draft_facts.kind.value} draft is not supported by the "
            "rig (its MTP layers are)"
        )
    arch = mtp_arch(pair)
    target = build_target(
        pair.target, dtype, device,
        random_weights=random_weights, seed=seed, max_positions=max_positions,
    )  # fmt: skip
    draft = build_mtp_draft(
        pair, arch, target, dtype, device,
        random_weights=random_weights, seed=seed + 1, max_positions=max_positions,
    )  # fmt: skip
    target.eval()
    draft.eval()
    return LoadedPair(
        target,  # type: ignore[arg-type]
        draft,  # type: ignore[arg-type]
        arch,  # type: ignore[arg-type]
        DraftKind.MTP,
        (),
        dtype,
        device,
        random_weights,
    )


def _build_dflash(
    pair: Pair,
    dtype: torch.dtype,
    device: torch.device,
    random_weights: bool,
    seed: int,
    max_positions: int | None,
) -> LoadedPair:
    """A standard target tapped at the DFlash layers, and the DFlash draft."""
    assert pair.target is not None
    arch = dflash_arch(pair)
    target = build_target(
        pair.target, dtype, device,
        random_weights=random_weights, seed=seed, max_positions=max_positions,
    )  # fmt: skip
    if not isinstance(target, TargetModel):
        raise BadInput("a DFlash draft over an MLA target is not supported by the rig")
    draft = build_dflash_draft(
        pair, arch, target, dtype, device,
        random_weights=random_weights, seed=seed + 1, max_positions=max_positions,
    )  # fmt: skip
    target.eval()
    draft.eval()
    return LoadedPair(
        target,
        draft,  # type: ignore[arg-type]
        arch,  # type: ignore[arg-type]
        DraftKind.DFLASH,
        arch.aux_layer_ids,
        dtype,
        device,
        random_weights,
    )
