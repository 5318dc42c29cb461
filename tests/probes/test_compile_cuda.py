"""The compiled target on CUDA: replay equals eager, and its buffers land in the graph pool."""

from __future__ import annotations

import gc

import pytest
import torch

from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.probes.capture import CaptureRequest, run_capture
from eaglegraph.probes.spec import rig_config
from eaglegraph.rig.workload import Schedule

pytestmark = pytest.mark.cuda


def _run(preset: str, compiled: bool, plan: dict[str, object], replay: bool) -> object:
    gc.collect()
    torch.cuda.empty_cache()
    pair = load_pair(materialize(preset))
    config = rig_config(
        pair, plan, device="cuda", max_model_len=512, random_weights=True, compile_model=compiled
    )
    schedule = Schedule.grow_shrink(4, waves=1) if replay else None
    return run_capture(pair, CaptureRequest(config=config, schedule=schedule))


def test_compiled_replay_equals_compiled_eager() -> None:
    plan = {"max_num_seqs": 4, "num_speculative_tokens": 3}
    graphs = _run("tiny-llama-eagle3", True, plan, replay=True)
    eager = _run("tiny-llama-eagle3", True, {**plan, "mode": "NONE"}, replay=True)
    assert graphs.ok and graphs.config["compiled"] is True  # type: ignore[attr-defined]
    assert graphs.replay["draft_tokens"] == eager.replay["draft_tokens"]  # type: ignore[attr-defined]


def test_compiled_target_pieces_allocate_in_the_pool() -> None:
    """Inductor's buffers are allocated inside the capture, in the graph pool; the figures
    of both runs are printed for the README (run with -s)."""
    plan = {"max_num_seqs": 64, "num_speculative_tokens": 3, "mode": "PIECEWISE"}
    compiled = _run("llama3.1-8b-eagle1", True, plan, replay=False)
    plain = _run("llama3.1-8b-eagle1", False, plan, replay=False)

    def target_bytes(run: object) -> int:
        return sum(e.bytes or 0 for e in run.events if e.phase == "target")  # type: ignore[attr-defined]

    assert compiled.config["compiled"] and not plain.config["compiled"]  # type: ignore[attr-defined]
    print(f"target graphs: compiled {target_bytes(compiled)} B, eager {target_bytes(plain)} B")
    assert target_bytes(compiled) > 0 and target_bytes(plain) > 0
