"""The draft-kind registry, and what kind of draft a folder holds, with the evidence.

Serving engines guess the method from the folder name ("eagle-", "eagle3" substrings), so a
local `/models/draft` holding an EAGLE-3 head is silently loaded as something else. This module
follows the recipe of research eagle-formats.md §8 instead: config keys first, architecture
names second, tensor headers third, and it always says which evidence decided. Each kind
declares its own rules in `pair/drafts/<kind>.py` (its architecture names as data); this
module only runs them, in the order `pair.drafts.detection.recognisers` gives.

Adding a kind: one `DraftKind` member (its value names the modules), `pair/drafts/<value>.py`
with a `SPEC` (on-disk facts) and its `RECOGNISERS`, and, if the rig builds it,
`models/drafts/<value>.py` with a `BUILD` (torch module, loader, init, hidden-state feed).
"""

from __future__ import annotations

from eaglegraph.pair.config import Config
from eaglegraph.pair.drafts.base import DraftKind, KindSpec, kind_spec
from eaglegraph.pair.drafts.detection import Evidence, KindVerdict, recognisers
from eaglegraph.pair.drafts.mtp import mtp_weight_names
from eaglegraph.pair.mtp_layout import MTP_COUNT_KEYS
from eaglegraph.pair.tensors import CheckpointIndex

__all__ = [
    "MTP_COUNT_KEYS",
    "DraftKind",
    "KindSpec",
    "KindVerdict",
    "all_specs",
    "detect_draft_kind",
    "kind_for_method",
    "kind_spec",
    "mtp_weight_names",
    "supported_titles",
]


def all_specs() -> list[KindSpec]:
    return [kind_spec(kind) for kind in DraftKind]


def supported_titles() -> str:
    """ "EAGLE-1 and EAGLE-3": the kinds the rig builds, for messages."""
    titles = [s.title for s in all_specs() if s.supported]
    return " and ".join([", ".join(titles[:-1]), titles[-1]] if len(titles) > 1 else titles)


def kind_for_method(method: str) -> DraftKind | None:
    """The kind a vLLM `--speculative-config` method names (`eagle` → EAGLE1), if any."""
    for spec in all_specs():
        if method.lower() in spec.engine_methods:
            return spec.kind
    return None


def _strip_model(name: str) -> str:
    return name[len("model.") :] if name.startswith("model.") else name


def detect_draft_kind(cfg: Config, index: CheckpointIndex | None) -> KindVerdict:
    """Classify a folder's config (+ headers) as a draft kind, or UNKNOWN if it is no draft."""
    spec_type = cfg.str("speculators_model_type", default=None)
    if spec_type is not None:
        kind = next(
            (s.kind for s in all_specs() if spec_type.lower() in s.speculators_names),
            DraftKind.OTHER,
        )
        return KindVerdict(
            kind, "speculators", [f"speculators_model_type = {spec_type!r} (speculators format)"]
        )
    names = frozenset(_strip_model(n) for n in index.tensors) if index is not None else frozenset()
    evidence = Evidence(cfg, index, names)
    for rule in recognisers():
        verdict = rule.verdict(evidence)
        if verdict is not None:
            return verdict
    return KindVerdict(DraftKind.UNKNOWN, None, ["no draft markers in config or tensors"])
