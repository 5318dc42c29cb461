"""RigConfig: everything that sizes and shapes one rebuilt serving step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from eaglegraph.results.parallel import SINGLE_RANK, ParallelLayout
from eaglegraph.rig.options import PlanOptions

if TYPE_CHECKING:  # the config is plain data: a torch-free command may build a spec
    import torch


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
    # the target through torch.compile/Inductor; None: off (a RunSpec resolves the engine's
    # default: vLLM compiles on CUDA, SGLang does not)
    compile: bool | None = None
    # False: an emulated capture builds and registers each graph's metadata without running
    # its warmup and recording passes (they compute nothing a replay reads: the probe, which
    # overwrites every buffer and poisons every padding region before it looks, skips them)
    emulated_capture_passes: bool = True
    # the deployment's layout and this process's global rank in it: the rig shards its
    # models and KV heads for the rank (`models.parallel`); the rank runtime installs the
    # process group before building it
    layout: ParallelLayout = SINGLE_RANK
    rank: int = 0

    @property
    def max_num_seqs(self) -> int:
        return self.options.max_num_seqs

    @property
    def num_speculative_tokens(self) -> int:
        return self.options.num_speculative_tokens

    @property
    def compiled(self) -> bool:
        """Off unless asked: the CLI's run spec asks as the engine would (`known.compilation`);
        the probe and library callers that build a config themselves run uncompiled, since
        every probe case would pay its own Inductor compilation."""
        return bool(self.compile)

    @property
    def graph_backend(self) -> str:
        """cuda on a CUDA device, emulated on CPU (unless forced)."""
        if self.backend != "auto":
            return self.backend
        return "cuda" if self.device.type == "cuda" else "emulated"
