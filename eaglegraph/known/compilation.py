"""Whether an engine runs its target through torch.compile when the user says nothing.

It decides what the target's graph pool holds: a compiled forward's Inductor buffers and fused
outputs are allocated inside the captures, so a pool measured with the wrong forward is not the
engine's pool.

- vLLM: `CompilationConfig.mode` defaults to VLLM_COMPILE. The model is traced once by Dynamo
  with num_tokens symbolic, split at the attention op and each piece compiled by Inductor;
  `--compilation-config '{"mode": 0}'` (or `enforce_eager`) turns it off, and breakable graphs
  run with compilation mode NONE (`vllm/config/compilation.py`,
  `vllm/compilation/backends.py::VllmBackend`).
- SGLang: decode graphs capture the eager model; torch.compile only with
  `--enable-torch-compile` (`model_executor/cuda_graph_runner.py::patch_model`), and the
  default breakable prefill graphs are plain stream captures, no Dynamo.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CompileDefault:
    engine: str
    compiles_by_default: bool
    how_to_turn_off: str
    source: str


COMPILE_DEFAULTS = {
    "vllm": CompileDefault(
        "vllm",
        compiles_by_default=True,
        how_to_turn_off="--compilation-config '{\"mode\": 0}' or --enforce-eager",
        source="vllm/config/compilation.py::CompilationConfig.mode (VLLM_COMPILE)",
    ),
    "sglang": CompileDefault(
        "sglang",
        compiles_by_default=False,
        how_to_turn_off="(off unless --enable-torch-compile)",
        source="sglang/srt/model_executor/cuda_graph_runner.py::patch_model",
    ),
}


def engine_compiles_target(engine: str, compilation_on: bool, breakable: bool) -> bool:
    """Does the engine run this plan's target compiled? `compilation_on`: the plan's
    compilation mode (vLLM's `--compilation-config mode`) is not NONE; breakable graphs run
    uncompiled."""
    default = COMPILE_DEFAULTS.get(engine)
    return bool(default and default.compiles_by_default and compilation_on and not breakable)
