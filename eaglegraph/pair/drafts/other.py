"""Drafts that are not EAGLE, MTP or DFlash (Medusa, MLP speculators): named, never built."""

from __future__ import annotations

from eaglegraph.pair.drafts.base import DraftKind, KindSpec
from eaglegraph.pair.drafts.detection import ArchName, ArchNames

ARCHITECTURES = (  # the architecture names it answers to
    ArchName(exact="MLPSpeculatorPreTrainedModel", any_case=True),
    ArchName(contains="medusa", any_case=True),
)
BY_ARCHITECTURE = ArchNames(DraftKind.OTHER, 36, "(not EAGLE)", ARCHITECTURES)


class OtherSpec(KindSpec):
    kind = DraftKind.OTHER
    title = "other"


SPEC = OtherSpec()
RECOGNISERS = (BY_ARCHITECTURE,)
