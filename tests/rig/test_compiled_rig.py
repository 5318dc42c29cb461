"""The rig with its target compiled: the same tokens, captured or not, as the eager target."""

from __future__ import annotations

import pytest
import torch

from eaglegraph.models.compile import CompiledForward
from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.driver import run_workload
from eaglegraph.rig.options import PlanChoices, resolve_plan_options
from eaglegraph.rig.step import Rig
from eaglegraph.rig.workload import Schedule

# the kernels run on CPU only through Triton's interpreter, which is off where CUDA exists
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _rig(mode: str, compile_model: bool | None, preset: str = "tiny-llama-eagle1") -> Rig:
    opts = resolve_plan_options(PlanChoices(
        max_num_seqs=2, num_speculative_tokens=3, mode=mode, max_num_batched_tokens=64,
        capture_sizes=(4, 8),
    ))  # fmt: skip
    config = RigConfig(opts, DEVICE, dtype="float32", max_model_len=256)
    if compile_model is not None:
        config = RigConfig(opts, DEVICE, "float32", 256, compile=compile_model)
    return Rig(load_pair(materialize(preset)), config)


def test_a_rig_config_compiles_only_when_asked() -> None:
    """The engine's default is resolved by the run spec (tests/probes/test_runner.py); a
    config built by hand stays eager, so the probe's many processes compile nothing."""
    opts = resolve_plan_options(PlanChoices(max_num_seqs=4))
    assert not RigConfig(opts, torch.device("cpu")).compiled
    assert not RigConfig(opts, torch.device("cuda")).compiled
    assert RigConfig(opts, torch.device("cuda"), compile=True).compiled
    assert not RigConfig(opts, torch.device("cuda"), compile=False).compiled


@pytest.mark.parametrize("preset", ["tiny-llama-eagle1", "tiny-deepseek-mtp"])
def test_compiled_target_replays_the_eager_tokens(preset: str) -> None:
    """Llama-family and MLA targets (routed experts, latent KV) alike."""
    schedule = Schedule.grow_shrink(2, waves=1)
    want = run_workload(_rig("NONE", None, preset), schedule).token_trace()
    rig = _rig("FULL_AND_PIECEWISE", False, preset)
    # Inductor's CPU backend compiles C++ for minutes on a loaded CI machine; the trace,
    # the custom ops and the capture splitting are what this checks, so AOT eager runs it
    rig.routines.target_forward = compiled = CompiledForward(rig.models.target, "aot_eager")
    rig.capture("shared")
    got = run_workload(rig, schedule)
    assert got.token_trace() == want
    assert compiled.compilations == 1
