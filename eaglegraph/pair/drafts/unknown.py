"""No draft: a folder whose tensors are a plain language model's is a target."""

from __future__ import annotations

from eaglegraph.pair.drafts.base import DraftKind, KindSpec
from eaglegraph.pair.drafts.detection import Evidence, KindVerdict, recognises


@recognises(70)
def _plain_tensors(ev: Evidence) -> KindVerdict | None:
    """Headers present and no kind claimed them (every tensor rule runs before this one)."""
    if not ev.names:
        return None
    return KindVerdict(DraftKind.UNKNOWN, None, ["tensors of a plain language model (no fc)"])


class UnknownSpec(KindSpec):
    kind = DraftKind.UNKNOWN
    title = "no draft"


SPEC = UnknownSpec()
RECOGNISERS = (_plain_tensors,)
