"""A model forward compiled the way vLLM compiles its models: torch.compile with Inductor.

vLLM traces the model once with dynamic num_tokens, splits the graph at attention and compiles
the pieces with Inductor; captured into CUDA graphs, the pieces' Inductor buffers and outputs
are allocated from the graph pool in Inductor's order, not the eager forward's. Here the whole
forward is traced with `fullgraph=True` and num_tokens marked dynamic (one compilation serves
every capture size); what vLLM runs in its own ops is opaque here too — attention (with MLA's
up-projections inside, `models.mla`), RoPE, the embedding gather (`models.ops`) and the routed
experts (`models.moe`) — so Inductor fuses everything between two attention calls and the
capture still splits at each attention call at run time.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch
from torch import nn

from eaglegraph.models import ops


class CompiledForward:
    """Calls `model(*args)` through torch.compile; the attention argument goes through the op."""

    def __init__(self, model: nn.Module, backend: str = "inductor") -> None:
        self.model = model
        self.backend = backend
        self.compilations = 0
        self._compiled: dict[tuple[Any, ...], Any] = {}

    def _count(self, backend: str) -> Any:
        """The backend, counting how often Dynamo hands it a graph (one per recompilation)."""
        from torch._dynamo.backends.registry import lookup_backend

        inner = lookup_backend(backend)

        def counted(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
            self.compilations += 1
            return inner(gm, example_inputs)

        return counted

    def _function(self, layout: tuple[Any, ...]) -> Any:
        """The compiled forward for one layout of the non-tensor arguments, which stay
        constants of the trace; only the tensors' first dimension is dynamic."""
        fn = self._compiled.get(layout)
        if fn is None:
            slots = [i for i, a in enumerate(layout) if a is _TENSOR]

            def forward(*tensors: torch.Tensor) -> Any:
                args = list(layout)
                for slot, tensor in zip(slots, tensors, strict=True):
                    args[slot] = tensor
                return self.model(*args)

            # Dynamo keys its cache and its recompile limit on the code object, and every
            # instance's `forward` shares one: a process that builds rig after rig (probe
            # cases, tests) would hit the limit by the ninth. A copy of the code object per
            # instance gives each compiled target its own cache, as one model per process has.
            forward.__code__ = forward.__code__.replace()
            fn = torch.compile(forward, backend=self._count(self.backend), fullgraph=True)
            self._compiled[layout] = fn
        return fn

    def __call__(self, *args: Any) -> Any:
        tensors = tuple(a for a in args if isinstance(a, torch.Tensor))
        attention = next(a for a in args if callable(a) and not isinstance(a, torch.Tensor))
        layout = tuple(
            _TENSOR if isinstance(a, torch.Tensor) else ops.attention_op if a is attention else a
            for a in args
        )
        for tensor in tensors:  # num_tokens is symbolic, as vLLM marks it
            torch._dynamo.maybe_mark_dynamic(tensor, 0)
        # only what is marked above is dynamic: an integer constant of the layout (an aux
        # layer id) that differs from an earlier compilation in this process must stay a
        # constant, not become symbolic under Dynamo's automatic dynamic shapes
        with ops.attention_through(attention), _static_unless_marked(), _deterministic():
            return self._function(layout)(*tensors)


_TENSOR = object()  # marks a tensor argument's place in a layout


def _static_unless_marked() -> Any:
    return torch._dynamo.config.patch(automatic_dynamic_shapes=False)


def _deterministic() -> Any:
    """Inductor without on-device benchmarking where it changes numerics (reduction configs,
    matmul padding), where torch has the switch (not in 2.11): each process would otherwise
    pick its own kernels by timing, and two captures of one pair in two processes (memdiff's
    policies) need not compute the same bits; a greedy token over a 129k vocabulary flips on
    the last bit. memdiff says so when the tokens differ under a compiled target."""
    import torch._inductor.config as inductor

    if not hasattr(inductor, "deterministic"):  # older torch: nothing to switch off
        return contextlib.nullcontext()
    return inductor.patch(deterministic=True)
