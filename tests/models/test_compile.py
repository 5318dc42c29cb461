"""The compiled target forward: one trace for every num_tokens, attention still split out."""

from __future__ import annotations

import pytest
import torch

from eaglegraph.models.compile import CompiledForward
from eaglegraph.models.layers import AttentionFn
from eaglegraph.models.mla import with_up_projections
from eaglegraph.models.target_build import build_target
from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize

# the kernels run on CPU only through Triton's interpreter, which is off where CUDA exists
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _target(preset: str = "tiny-llama-eagle3") -> torch.nn.Module:
    """The preset's target as the rig builds it (an MLA model for DeepSeek-style configs)."""
    pair = load_pair(materialize(preset))
    assert pair.target is not None
    return build_target(
        pair.target, torch.float32, torch.device(DEVICE), random_weights=True, seed=0,
        max_positions=None,
    )  # fmt: skip


def _copy_q(calls: list[int]) -> AttentionFn:
    def core(
        layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor
    ) -> None:
        calls.append(layer)
        out.copy_(q[..., : out.shape[-1]])

    return with_up_projections(core)  # MLA layers: the up-projections around the copy


def _check(
    backend: str,
    sizes: tuple[int, ...],
    aux: tuple[int, ...] = (1, 3),
    preset: str = "tiny-llama-eagle3",
) -> None:
    target = _target(preset)
    compiled = CompiledForward(target, backend)
    for n in sizes:
        ids = torch.randint(0, 100, (n,), device=DEVICE)
        pos = torch.arange(n, device=DEVICE)
        seen: list[int] = []
        eager_calls: list[int] = []
        with torch.inference_mode():
            hidden, got_aux = compiled(ids, pos, _copy_q(seen), aux)
            want, want_aux = target(ids, pos, _copy_q(eager_calls), aux)
        torch.testing.assert_close(hidden, want, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(got_aux, want_aux, rtol=1e-5, atol=1e-5)
        # every layer's attention ran once, in order, through the installed callable
        assert seen == eager_calls == list(range(target.num_layers))
    assert compiled.compilations == 1  # dynamic num_tokens: no recompilation per size


def test_traced_forward_matches_eager_for_every_size() -> None:
    _check("aot_eager", (8, 5, 12))


def test_a_later_target_with_other_aux_layers_compiles_once() -> None:
    """Several rigs in one process (tests, memdiff's parent): an aux layer id that differs
    from an earlier compilation stays a constant instead of turning symbolic."""
    _check("aot_eager", (8, 4), aux=(1, 3))
    _check("aot_eager", (8, 4), aux=(1, 2, 3))


def test_mla_target_traces_without_tracing_a_kernel_launch() -> None:
    """Every Triton launch in a target's forward goes through a custom op: a launch Dynamo
    traces itself bakes the trace's sizes in (the MLA target's RoPE once did, and its compiled
    capture crashed the H100 at real widths)."""
    _check("aot_eager", (8, 5, 12), aux=(), preset="tiny-deepseek-mtp")


@pytest.mark.slow
def test_inductor_forward_matches_eager_on_cpu() -> None:
    """Inductor's CPU backend (C++ through gcc): slow to compile, so marked slow."""
    _check("inductor", (8, 12))


def test_routed_experts_are_one_opaque_call_under_compile() -> None:
    """As vLLM's fused-MoE op: Inductor must not see the expert loop (it fuses the sum over
    experts and keeps every expert's output alive at once, a larger pool than the engine's)."""
    from eaglegraph.models.moe import RoutedMoE
    from eaglegraph.pair.mla import moe_dims

    pair = load_pair(materialize("tiny-deepseek-mtp"))
    assert pair.target is not None
    moe = moe_dims(pair.target.config)
    assert moe is not None and moe.n_routed_experts > 1
    torch.manual_seed(0)
    layer = RoutedMoE(64, moe, 1e-6, torch.float32, torch.device(DEVICE))
    for p in layer.parameters():
        torch.nn.init.normal_(p, std=0.05)
    graphs: list[torch.fx.GraphModule] = []

    def record(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> object:
        graphs.append(gm)
        return gm.forward

    x = torch.randn(6, 64, device=DEVICE)
    with torch.inference_mode():
        want = layer(x)
        got = torch.compile(layer, backend=record, fullgraph=True)(x)
    torch.testing.assert_close(got, want)
    (graph,) = graphs
    targets = [str(n.target) for n in graph.graph.nodes if n.op == "call_function"]
    assert sum("routed_experts" in t for t in targets) == 1
    # the router's linear and the shared expert's gate_up and down: no routed expert's
    assert sum("linear" in t for t in targets) == 1 + (2 if moe.n_shared_experts else 0)


def test_mla_up_projections_are_inside_the_attention_call() -> None:
    """As in vLLM's MLA attention op: the absorbed up-projections run inside the attention
    call, so Inductor never schedules their buffers (its own order split freed blocks between
    layers and cost the real-width DeepSeek target a second segment of each), and piecewise
    graphs, split at attention, leave them out as the engine's do."""
    from eaglegraph.models import ops

    target = _target("tiny-deepseek-mtp")
    graphs: list[torch.fx.GraphModule] = []

    def record(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> object:
        graphs.append(gm)
        return gm.forward

    ids = torch.randint(0, 100, (6,), device=DEVICE)
    pos = torch.arange(6, device=DEVICE)
    eager_calls: list[int] = []
    compiled_calls: list[int] = []
    with torch.inference_mode():
        want, _ = target(ids, pos, _copy_q(eager_calls), ())
        compiled = torch.compile(
            lambda i, p: target(i, p, ops.attention_op, ()), backend=record, fullgraph=True
        )
        with ops.attention_through(_copy_q(compiled_calls)):
            got, _ = compiled(ids, pos)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert compiled_calls == eager_calls == list(range(target.num_layers))
    (graph,) = graphs
    targets = [str(n.target) for n in graph.graph.nodes if n.op == "call_function"]
    assert sum("eaglegraph.attention" in t for t in targets) == target.num_layers
    # no up-projection (an einsum or bmm over the heads) left for Inductor to schedule
    assert not [t for t in targets if "einsum" in t or "bmm" in t]


class _Scale(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.full((4, 4), 2.0))

    def forward(self, x: torch.Tensor, attention: AttentionFn) -> torch.Tensor:
        return x @ self.w


def test_a_process_builds_more_compiled_targets_than_dynamos_recompile_limit() -> None:
    """Probe cases and tests build rig after rig in one process; each compiled target has its
    own Dynamo cache, so the ninth does not hit the recompile limit (FailOnRecompileLimitHit
    on CUDA before), and each compiles exactly once."""
    limit = torch._dynamo.config.recompile_limit
    x = torch.ones(3, 4)
    for _ in range(limit + 3):
        fwd = CompiledForward(_Scale(), backend="eager")
        out = fwd(x, _copy_q([]))
        assert torch.equal(out, torch.full((3, 4), 8.0))
        assert fwd.compilations == 1
