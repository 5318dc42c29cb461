"""DFlash block drafters: recognised by config, architecture or tensors; built by the rig."""

from __future__ import annotations

from eaglegraph.pair.drafts.base import (
    LAYER_RE,
    DraftKind,
    Evidence,
    KindSpec,
    KindVerdict,
    Recogniser,
)


def _architecture(ev: Evidence) -> KindVerdict | None:
    for arch in ev.archs:
        if "dflash" in arch.lower() or "dspark" in arch.lower():
            kind = DraftKind.DFLASH if "dflash" in arch.lower() else DraftKind.OTHER
            return KindVerdict(kind, None, [f"architecture {arch!r} is a block drafter, not EAGLE"])
    return None


def _config_key(ev: Evidence) -> KindVerdict | None:
    if ev.cfg.has("dflash_config"):
        return KindVerdict(DraftKind.DFLASH, None, ["config has 'dflash_config' (block drafter)"])
    return None


def _fc_over_layers(ev: Evidence) -> KindVerdict | None:
    if "fc.weight" not in ev.names:
        return None
    layer_ids = {int(m.group(1)) for n in ev.names if (m := LAYER_RE.match(n))}
    if len(layer_ids) >= 3:
        return KindVerdict(
            DraftKind.DFLASH, None, ["'fc.weight' over several layers (DFlash-like)"]
        )
    return None


class DFlashSpec(KindSpec):
    kind = DraftKind.DFLASH
    title = "DFlash"
    supported = True
    engine_methods = ("dflash",)
    speculators_names = ("dflash",)
    recognisers = (
        Recogniser(20, _architecture),
        Recogniser(25, _config_key),
        Recogniser(63, _fc_over_layers),
    )


SPEC = DFlashSpec()
