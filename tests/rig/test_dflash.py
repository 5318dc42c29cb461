"""DFlash: the rig's block drafting equals a dense reference, eagerly and through the one
speculator graph, and the probe finds the pre-fix unpadded query buffers (and nothing on the
current profile)."""

from __future__ import annotations

import json

import pytest
import torch
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.driver import Session, run_workload
from eaglegraph.rig.model_setup import build_models
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.options import PlanChoices, resolve_plan_options
from eaglegraph.rig.reference import ReferenceEngine
from eaglegraph.rig.step import Rig
from eaglegraph.rig.workload import Schedule

PRESET, K = "tiny-qwen3-dflash", 3
SCHEDULE = Schedule.grow_shrink(4, waves=1)


@pytest.mark.parametrize(("backend", "mode"), [("flashinfer", "NONE"), ("flash_attn", "FULL")])
def test_dflash_matches_dense_reference(backend: str, mode: str, device: torch.device) -> None:
    pair = load_pair(materialize(PRESET))
    opts = resolve_plan_options(PlanChoices(
        max_num_seqs=4, num_speculative_tokens=K, attention_backend=backend, mode=mode,
        max_num_batched_tokens=64, capture_sizes=(4, 8, 16),
    ))  # fmt: skip
    rig = Rig(pair, RigConfig(options=opts, device=device, max_model_len=256, dtype="float32"))
    prefill = rig.plan.phase("draft_prefill")
    assert rig.plan.phase("draft_decode").descriptors == []
    if mode != "NONE":
        assert prefill.mode is Mode.FULL_DECODE_ONLY
        assert [d.num_reqs for d in prefill.descriptors] == [1, 2, 4]
        events, findings = rig.capture("shared")
        assert events and not findings
    result = run_workload(rig, SCHEDULE)
    ref = ReferenceEngine(build_models(pair, torch.float32, device), K, 4, 256)
    want = run_workload(ref, SCHEDULE)
    for a, b in zip(result.steps, want.steps, strict=True):
        assert (a.next_tokens, a.accepted, a.draft_tokens) == (
            b.next_tokens, b.accepted, b.draft_tokens,
        ), f"step {a.step}"  # fmt: skip
    if mode != "NONE":
        used = {s.descriptors["draft_prefill"].split("(")[0] for s in result.steps}
        assert "FULL" in used
    assert result.acceptance_rate is not None and 0 < result.acceptance_rate < 1


# The probe runs where the machine has a GPU: Triton interprets CPU tensors only on a CPU machine.
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _probe(behavior: str, mode: str = "FULL_AND_PIECEWISE") -> dict:  # type: ignore[type-arg]
    result = CliRunner().invoke(
        cli,
        ["probe", PRESET, "--behavior", behavior, "--max-num-seqs", "4", "-K", str(K),
         "--capture-sizes", "4,8,16", "--mode", mode, "--batches", "3",
         "--device", DEVICE, "--max-model-len", "256", "--no-isolation", "--json",
         "--fail-on", "never"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_probe_finds_unpadded_dflash_query_buffers() -> None:
    doc = _probe("vllm-pre-50065")
    found = {(f["buffer"], f["phase"], f["ref"]) for f in doc["findings"]}
    assert ("dflash.sample_indices", "draft_prefill", "vllm#50065") in found
    assert ("dflash.seq_lens", "draft_prefill", "vllm#50065") in found
    assert not _probe("vllm-current")["findings"]


def test_probe_is_clean_on_sglang_current() -> None:
    """SGLang's path: the DFlash graph through the target-verify runner, FULL by batch size."""
    doc = _probe("sglang-current", "FULL")
    assert doc["cases"] and all(c["status"] == "ok" for c in doc["cases"]), doc["cases"]
    assert not doc["findings"]


@pytest.mark.parametrize("behavior", ["vllm-current", "sglang-current"])
def test_block_rows_have_kv_slots(behavior: str) -> None:
    """The block (bonus token + K mask rows) writes K+1 slots past the accepted tokens: a
    prompt ending K short of a block boundary needs the next block (vLLM reserves K+1
    lookahead slots for DFlash). Before, its last mask row wrote into the null block, which
    every such request shares."""
    opts = resolve_plan_options(PlanChoices(
        max_num_seqs=2, num_speculative_tokens=K, mode="NONE", max_num_batched_tokens=64,
        behavior=behavior, framework=behavior.split("-")[0],
    ))  # fmt: skip
    rig = Rig(load_pair(materialize(PRESET)), RigConfig(opts, torch.device("cpu"), "float32"))
    session = Session(rig)
    prompt = list(range(3, 3 + rig.block_size - K))
    request = session.admit(0, prompt, max_new_tokens=4)
    session.batch()
    assert len(request.blocks) * rig.block_size >= len(prompt) + K + 1
