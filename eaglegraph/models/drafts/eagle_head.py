"""What EAGLE-1 and EAGLE-3 heads share and other drafts do not: Llama-shaped layers whose
spec the checkpoint may refine, an fc whose bias the checkpoint may carry (`HeadParts`)."""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.models.drafts.base import DraftArch
from eaglegraph.models.layers import LayerSpec
from eaglegraph.models.target import layer_spec
from eaglegraph.pair.geometry import Geometry


def draft_layer_spec(geometry: Geometry) -> LayerSpec:
    """Config defaults for draft layers (drafts are Llama-shaped; Qwen3-typed ones get q/k norm)."""
    family = geometry.model_type if geometry.model_type in ("qwen2", "qwen3") else "llama"
    return layer_spec(geometry, family)


@dataclass(frozen=True)
class HeadParts:
    """What a loaded checkpoint says of an EAGLE head's parts; None: what the config says."""

    spec: LayerSpec | None = None
    fc_bias: bool | None = None
    own_embed: bool = False
    own_lm_head: bool = True

    def layer_spec(self, geometry: Geometry) -> LayerSpec:
        return self.spec or draft_layer_spec(geometry)

    def has_fc_bias(self, arch: DraftArch) -> bool:
        return arch.fc_bias if self.fc_bias is None else self.fc_bias
