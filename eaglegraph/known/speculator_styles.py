"""The speculator styles: the ways an engine drafts, whatever the draft kind.

vLLM keeps one proposer per way of drafting (its EAGLE proposer, the multi-module MTP
proposer, the DFlash proposer under `vllm/v1/spec_decode/`); a draft kind declares which one
runs it (`pair/drafts/<kind>.py`), and the rig plans and builds the strategy registered for the
style (`rig.style_plans`, `rig.speculators`). Torch-free, so `inspect` names a style without
building a model. The values are the names runs and reports have always used, so a style
compares and serialises as its plain string.
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
