"""Models captured at real widths with fewer layers (and experts) than the real one.

A 671B DeepSeek-V3 does not fit one GPU, but every per-layer shape does: a config that keeps
the real hidden size, heads, MLA ranks, expert width and vocabulary and cuts
`num_hidden_layers` (and `n_routed_experts`) records what it cut under
`eaglegraph_reduced_from`. Runs on such a model say what the cut changes.
"""

from __future__ import annotations

from eaglegraph.pair.model import Pair
from eaglegraph.results.findings import Finding, Severity

REDUCED_KEY = "eaglegraph_reduced_from"


def reduced_geometry_findings(pair: Pair) -> list[Finding]:
    """One INFO finding when the target is a reduced real-geometry model, else none."""
    if pair.target is None:
        return []
    real = pair.target.config.sub(REDUCED_KEY)
    if real is None:
        return []
    cut = []
    for key, label in (("num_hidden_layers", "layers"), ("n_routed_experts", "routed experts")):
        full = real.int(key, default=None, minimum=1)
        have = pair.target.config.int(key, default=None, minimum=1)
        if full is not None and have is not None and full != have:
            cut.append(f"{have} of {full} {label}")
    if not cut:
        return []
    layers = real.int("num_hidden_layers", default=None, minimum=1)
    have_layers = pair.target.geometry.num_hidden_layers
    scale = f" (×{layers / have_layers:.1f} for the full model)" if layers else ""
    return [
        Finding(
            id="reduced-geometry",
            severity=Severity.INFO,
            message=f"real widths with {' and '.join(cut)}: every per-layer shape (projections, "
            "KV row, activations at each capture size) is the full model's, so graph shapes, "
            "per-graph pool usage and the draft's graphs are what the full model captures; "
            f"weights and KV cache per token scale with the layers{scale}, routed-expert "
            "weights with the experts, and routing over fewer experts changes which experts "
            "run and the acceptance rate",
        )
    ]
