"""DeepSeek-V3's routed-expert MLP, and the opaque op a compiled forward calls for it.

vLLM runs routing (grouped top-k) and the experts inside one custom op (`moe_forward` around
its fused-MoE kernels), so Inductor compiles the router's linear but never sees into the
experts. The rig computes every expert for every token and weights the outputs by the routing
(zero for unrouted experts: no data-dependent shapes, so it captures in a graph). Traced by
Dynamo as plain torch, Inductor fuses the sum over experts into one kernel and keeps every
expert's output alive until it runs — 16 experts × `[T, hidden]` at once (the real-width
DeepSeek-4L target's graph pool: 340 MiB traced, 326 MiB through the op, on an H100; the rest
of its gap was MLA's up-projections, see `models.mla`). So a compiled forward calls the same
computation as `eaglegraph::routed_experts`, opaque as the engine's; eagerly (and on the meta
tensors the memory prediction records) it runs as plain torch, allocation for allocation the
same.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from eaglegraph.models.layers import GatedMLP, LayerSpec, new_param
from eaglegraph.pair.mla import MoEDims


def experts(
    x: Tensor,
    logits: Tensor,
    bias: Tensor,
    gate_up: Tensor,
    down: Tensor,
    n_group: int,
    topk_group: int,
    top_k: int,
    sigmoid: bool,
    norm_topk_prob: bool,
    scaling: float,
    first_expert: int = 0,
) -> Tensor:
    """Route each token (grouped top-k over the fp32 router `logits`) and mix its experts.

    `gate_up`/`down` hold experts `first_expert…` (all of them but under expert parallelism,
    where each rank mixes its own and the ranks' sums are all-reduced)."""
    scores = logits.sigmoid() if sigmoid else logits.softmax(-1)
    choice = scores + bias
    t, e = scores.shape
    per_group = e // n_group
    grouped = choice.view(t, n_group, per_group)
    if sigmoid:
        group_scores = grouped.topk(min(2, per_group), dim=-1)[0].sum(-1)
    else:
        group_scores = grouped.max(-1).values
    group_idx = group_scores.topk(topk_group, dim=-1, sorted=False)[1]
    group_mask = torch.zeros_like(group_scores).scatter_(1, group_idx, 1.0)
    keep = group_mask[:, :, None].expand(t, n_group, per_group).reshape(t, e) > 0
    idx = choice.masked_fill(~keep, float("-inf")).topk(top_k, -1)[1]
    weights = scores.gather(1, idx)
    if norm_topk_prob and top_k > 1:
        weights = weights / (weights.sum(-1, keepdim=True) + 1e-20)
    route = torch.zeros_like(scores).scatter_(1, idx, weights * scaling)
    out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
    for local in range(gate_up.shape[0]):
        gate, up = F.linear(x, gate_up[local]).chunk(2, dim=-1)
        y = F.linear(F.silu(gate) * up, down[local])
        expert = first_expert + local
        out += y.float() * route[:, expert : expert + 1]
    return out.to(x.dtype)


# `experts` as one opaque call (what vLLM's fused-MoE op is to Inductor)
routed_experts = torch.library.custom_op("eaglegraph::routed_experts", experts, mutates_args=())


@routed_experts.register_fake
def _routed_experts_fake(x: Tensor, logits: Tensor, *_: object) -> Tensor:
    return torch.empty_like(x)


class RoutedMoE(nn.Module):
    """DeepSeek-V3 MoE: grouped top-k routing over sigmoid (or softmax) scores, shared experts."""

    e_score_correction_bias: (
        torch.Tensor
    )  # a registered buffer (nn.Module's __getattr__ types it loosely)

    def __init__(
        self, hidden_size: int, moe: MoEDims, eps: float, dtype: torch.dtype, device: torch.device
    ) -> None:
        super().__init__()
        self.moe = moe
        e, inter = moe.n_routed_experts, moe.moe_intermediate_size
        self.gate_weight = new_param((e, hidden_size), dtype, device)
        self.register_buffer(
            "e_score_correction_bias", torch.zeros(e, dtype=torch.float32, device=device)
        )
        self.gate_up = new_param((e, 2 * inter, hidden_size), dtype, device)
        self.down = new_param((e, hidden_size, inter), dtype, device)
        shared = LayerSpec(hidden_size, inter * max(moe.n_shared_experts, 1), 1, 1, 1, eps)
        self.shared = GatedMLP(shared, dtype, device) if moe.n_shared_experts else None
        self.first_expert = 0  # the first routed expert held here (expert parallelism)

    def forward(self, x: Tensor) -> Tensor:
        m = self.moe
        logits = F.linear(x.float(), self.gate_weight.float())
        mix = routed_experts if torch.compiler.is_compiling() else experts
        out = mix(
            x, logits, self.e_score_correction_bias, self.gate_up, self.down, m.n_group,
            m.topk_group, m.num_experts_per_tok, m.scoring_func == "sigmoid", m.norm_topk_prob,
            float(m.routed_scaling_factor), self.first_expert,
        )  # fmt: skip
        return out if self.shared is None else out + self.shared(x)
