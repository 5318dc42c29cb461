"""The pair on disk: discovery, config parsing, tensor headers, draft kinds, checks, presets.

Imports nothing from the layers above; never loads tensor data.
"""

from eaglegraph.pair.loader import load_pair
from eaglegraph.pair.model import ModelSide, Pair

__all__ = ["ModelSide", "Pair", "load_pair"]
