"""RigConfig: everything that sizes and shapes one rebuilt serving step."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from eaglegraph.rig.options import PlanOptions


@dataclass(frozen=True)
class RigConfig:
    options: PlanOptions
    device: torch.device
    dtype: str = "auto"
    max_model_len: int = 1024
    block_size: int = 16
    num_blocks: int | None = None
    random_weights: bool = False
    seed: int = 0
    guard: bool = False
    guard_capacity: int = 1 << 14
    backend: str = "auto"
    compile: bool | None = None  # the target through torch.compile/Inductor; None: off
    # False: an emulated capture builds and registers each graph's metadata without running
    # its warmup and recording passes (they compute nothing a replay reads: the probe, which
    # overwrites every buffer and poisons every padding region before it looks, skips them)
    emulated_capture_passes: bool = True

    @property
    def max_num_seqs(self) -> int:
        return self.options.max_num_seqs

    @property
    def num_speculative_tokens(self) -> int:
        return self.options.num_speculative_tokens

    @property
    def compiled(self) -> bool:
        """Opt-in: compiling costs every capture process its Inductor compilation (about a
        minute for an 8B target), probe cases run in many such processes, and the CPU
        memory prediction models the uncompiled forward (within 7 % of a compiled capture
        on the H100)."""
        return bool(self.compile)

    @property
    def graph_backend(self) -> str:
        """cuda on a CUDA device, emulated on CPU (unless forced)."""
        if self.backend != "auto":
            return self.backend
        return "cuda" if self.device.type == "cuda" else "emulated"
