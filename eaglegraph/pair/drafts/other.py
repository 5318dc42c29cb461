"""Drafts that are not EAGLE, MTP or DFlash (Medusa, MLP speculators): named, never built."""

from __future__ import annotations

from eaglegraph.pair.drafts.base import DraftKind, Evidence, KindSpec, KindVerdict, Recogniser


def _architecture(ev: Evidence) -> KindVerdict | None:
    for arch in ev.archs:
        if arch.lower() in ("medusamodel", "mlpspeculatorpretrainedmodel") or (
            "medusa" in arch.lower()
        ):
            return KindVerdict(DraftKind.OTHER, None, [f"architecture {arch!r} (not EAGLE)"])
    return None


class OtherSpec(KindSpec):
    kind = DraftKind.OTHER
    title = "other"
    recognisers = (Recogniser(36, _architecture),)


SPEC = OtherSpec()
