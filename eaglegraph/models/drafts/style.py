"""The speculator styles, where the torch side has always imported them from.

The enum lives in `known.speculator_styles` (torch-free, so `inspect` and the pair's kind
specs name a style without importing torch); this module re-exports it.
"""

from __future__ import annotations

from eaglegraph.known.speculator_styles import SpeculatorStyle

__all__ = ["SpeculatorStyle"]
