"""The failure classes a triage verdict names, in the schema's order (scores list them in it,
ties go to the earlier one). Rules in `known.triage_rules` and results in `results.triage`
both name them, so they live on the bottom floor."""

from __future__ import annotations

from eaglegraph.known.enums import StrEnum


class Category(StrEnum):
    STALE = "stale-buffer-read"
    OOB = "oob-index"
    OOM = "pool-memory/oom"
    CAPTURE = "capture-failure"
    MODE = "mode-incompatibility"
    CONFIG = "hidden-dim/config-mismatch"
    ACCEPT = "acceptance-regression"
    HANG = "hang"
    OTHER = "other"


CATEGORIES: tuple[Category, ...] = tuple(Category)
