"""The speculator styles a draft kind may declare: how the rig drafts for it.

A kind names its style (`DraftBuild.speculator`); the rig builds the strategy registered for
that style (`rig.speculators`). The values are the names runs and reports have always used,
so a style compares and serialises as its plain string.
"""

from __future__ import annotations

from eaglegraph.known.enums import StrEnum


class SpeculatorStyle(StrEnum):
    """EAGLE: a draft-prefill graph, then K-1 draft-decode graphs (EAGLE-1/3, one MTP module
    reused per step). WINDOW: every MTP module over each request's window, in one graph.
    BLOCK: one graph drafts the whole block, no decodes (DFlash)."""

    EAGLE = "eagle"
    WINDOW = "window"
    BLOCK = "block"
