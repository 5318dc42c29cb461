"""A run resolved once (RunSpec) and executed as data by the isolation runner."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import eaglegraph
from eaglegraph.errors import BadInput
from eaglegraph.pair.presets import scaffold
from eaglegraph.probes.cases import CaseResult, ProbeCase
from eaglegraph.probes.memdiff import capture_isolated, diff_runs, memdiff
from eaglegraph.probes.probing import PROBE_DEFAULT_SEQS, padding_batches, probe
from eaglegraph.probes.runner import run_task
from eaglegraph.probes.spec import RunSpec, resolve_run
from eaglegraph.rig.plan import build_plan

SMALL = {"max_num_seqs": 4, "num_speculative_tokens": 3, "capture_sizes": (4, 8)}


def _draft_declaring_k(tmp_path: Path, k: int) -> Path:
    """The tiny EAGLE-3 pair whose draft config says how many tokens it proposes."""
    root = scaffold("tiny-llama-eagle3", tmp_path / "pair")
    config = root / "draft" / "config.json"
    data = json.loads(config.read_text())
    data["speculators_config"] = {
        "default_proposal_method": "greedy",
        "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": k}],
    }
    config.write_text(json.dumps(data))
    return root


def test_spec_round_trips_through_json() -> None:
    spec = resolve_run(
        "tiny-llama-eagle3",
        plan={**SMALL, "behavior": "vllm-pre-39773", "attention_backend": "flashinfer"},
        device="cpu",
        max_model_len=256,
        seed=5,
        pool="dedicated",
    )
    again = RunSpec.from_json(json.loads(json.dumps(spec.to_json())))
    assert again == spec
    assert again.options.capture_sizes == (4, 8) and again.options.behavior.name == "vllm-pre-39773"
    piecewise = spec.with_mode("piecewise")
    assert piecewise.options.mode.name == "PIECEWISE" and piecewise.options.max_num_seqs == 4
    case = ProbeCase("piecewise-b3", piecewise, large=4, batch=3)
    assert ProbeCase.from_json(json.loads(json.dumps(case.to_json()))) == case
    with pytest.raises(BadInput):
        resolve_run("tiny-llama-eagle3", device="cpu", max_model_len=8)


@pytest.mark.parametrize(
    ("plan", "device", "asked", "compiled"),
    [
        ({}, "cuda", None, True),  # vLLM compiles its model by default
        ({"framework": "sglang"}, "cuda", None, False),  # SGLang only with --enable-torch-compile
        ({"compilation_config": {"mode": 0}}, "cuda", None, False),  # vLLM told not to
        ({"mode": "BREAKABLE"}, "cuda", None, False),  # breakable graphs: compilation NONE
        ({}, "cpu", None, False),  # the emulated backend never compiles unless asked
        ({}, "cuda", False, False),  # --no-compile
        ({"framework": "sglang"}, "cuda", True, True),  # --compile
    ],
)
def test_the_target_compiles_as_the_engine_would(
    plan: dict[str, object], device: str, asked: bool | None, compiled: bool
) -> None:
    from eaglegraph.pair import load_pair
    from eaglegraph.pair.presets import materialize
    from eaglegraph.probes.setup import plan_options
    from eaglegraph.probes.spec import resolve_compile

    options = plan_options(load_pair(materialize("tiny-llama-eagle3")), plan)
    assert resolve_compile(asked, device, options) is compiled


def test_library_entry_points() -> None:
    assert eaglegraph.probe is probe and eaglegraph.memdiff is memdiff
    assert eaglegraph.RunSpec is RunSpec and callable(eaglegraph.load_pair)
    assert eaglegraph.Rig.__name__ == "Rig"


def _pads(case: CaseResult) -> bool:
    """Some phase replayed a graph larger than the step (tokens or requests)."""
    for phase, descriptor in case.descriptors.items():
        size = dict(re.findall(r"(tokens|reqs)=(\d+)", descriptor))
        reqs, tokens = case.counts[phase]
        if not descriptor.startswith("NONE") and (
            int(size["tokens"]) > tokens or int(size.get("reqs", reqs)) > reqs
        ):
            return True
    return False


def test_probe_plans_padding_for_the_k_the_draft_declares(tmp_path: Path) -> None:
    """The parent used to plan batches with K=3 while its workers ran the draft's own K=2:
    under K=2, batch 3 fills capture sizes 9 and 3 exactly, so that case padded nothing,
    and batch 2 (which pads the draft decode 2 → 3) was never probed."""
    spec = resolve_run(
        _draft_declaring_k(tmp_path, 2),
        plan={"behavior": "vllm-0.23"},  # sizes rounded to K+1 in every phase
        device="cpu",
        max_model_len=256,
        default_max_num_seqs=PROBE_DEFAULT_SEQS,
    )
    assert spec.options.num_speculative_tokens == 2 and spec.options.max_num_seqs == 4
    k2 = spec.with_mode("FULL_DECODE_ONLY").options
    k3 = dataclasses.replace(k2, num_speculative_tokens=3)
    assert padding_batches(build_plan(k3), 4) == [1, 3]  # what the parent used to plan
    run = probe(spec, modes=["FULL_DECODE_ONLY"], isolate=False)
    assert run.config["num_speculative_tokens"] == 2
    padded = [c for c in run.cases if c.schedule is None]  # the live cases aside
    assert [(c.batch, c.status) for c in padded] == [(1, "ok"), (2, "ok")]
    assert [c.status for c in run.cases if c.schedule is not None] == ["ok", "ok"]
    assert all(c.counts["target"] == [c.batch, 3 * c.batch] for c in padded)  # K+1 = 3
    assert all(_pads(c) for c in padded), [c.descriptors for c in padded]
    assert run.findings == []


def test_memdiff_captures_run_as_data_in_workers() -> None:
    """memdiff's captures go through the runner: a spec in, a capture run out (CPU: emulated;
    the replay half is left to the CUDA test below, it costs a minute per side here)."""
    plan = {"max_num_seqs": 2, "num_speculative_tokens": 1, "capture_sizes": (2, 4), "mode": "FULL"}
    spec = resolve_run("tiny-llama-eagle1", plan=plan, device="cpu", max_model_len=128)
    shared = capture_isolated(spec.with_pool("shared"), timeout=600, replay=False)
    dedicated = capture_isolated(spec.with_pool("dedicated"), timeout=600, replay=False)
    assert (shared.pool_policy, dedicated.pool_policy) == ("shared", "dedicated")
    assert shared.backend == "emulated" and shared.config["model"] == "tiny-llama-eagle1"
    assert shared.config["num_speculative_tokens"] == 1 and shared.config["mode"] == "FULL"
    assert [e.descriptor for e in shared.events] == [e.descriptor for e in dedicated.events]
    assert {e.pool for e in dedicated.events} != {e.pool for e in shared.events}
    diff = diff_runs(shared, dedicated, {})
    assert [d.label for d in diff.per_phase] == ["target", "draft_prefill"]  # K=1: no decode


def test_a_refused_spec_is_one_line_in_the_parent() -> None:
    spec = resolve_run("llama3.1-8b-eagle1", device="cpu")  # config only, no --random-weights
    with pytest.raises(BadInput, match="--random-weights"):
        capture_isolated(spec, timeout=600)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signals_end_the_worker_too(sig: signal.Signals) -> None:
    script = textwrap.dedent(
        """
        from eaglegraph.probes.runner import run_task
        run_task("capture", {}, name="stuck", timeout=600)
        """
    )
    env = {**os.environ, "EAGLEGRAPH_PROBE_FAULT": "hang:stuck"}
    # A Ctrl-C from a terminal: a process that inherits SIGINT ignored (as a runner's worker
    # may, from whatever ran in it before) never turns it into KeyboardInterrupt, so the
    # parent starts with the default disposition, as a shell's foreground job does.
    parent = subprocess.Popen(
        [sys.executable, "-c", script],
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    children = Path(f"/proc/{parent.pid}/task/{parent.pid}/children")
    deadline = time.monotonic() + 60
    worker = ""
    while not worker and time.monotonic() < deadline:
        worker = children.read_text().strip() if children.exists() else ""
        time.sleep(0.1)
    assert worker, "the worker never started"
    time.sleep(0.5)  # let the worker reach its (injected) hang
    parent.send_signal(sig)
    assert parent.wait(timeout=30) != 0
    assert not Path(f"/proc/{int(worker)}").exists(), "the worker outlived its parent"


def test_timeout_and_crash_outcomes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EAGLEGRAPH_PROBE_FAULT", "hang:slow")
    timed_out = run_task("capture", {}, name="slow", timeout=3)
    assert timed_out.status == "timeout" and "no result after 3 s" in (timed_out.error or "")
    monkeypatch.setenv("EAGLEGRAPH_PROBE_FAULT", "abort:dies")
    crashed = run_task("capture", {}, name="dies", timeout=60)
    assert crashed.status == "crash" and "illegal memory access" in crashed.stderr


@pytest.mark.cuda
def test_cuda_memdiff_through_the_runner() -> None:
    spec = resolve_run(
        "tiny-llama-eagle3",
        plan={"max_num_seqs": 8, "num_speculative_tokens": 3},
        max_model_len=256,
        pool="shared",
    )
    run = memdiff(spec, "dedicated", timeout=600)
    assert run.a.ok and run.b.ok, (run.a.failed, run.b.failed)
    assert (run.a.pool_policy, run.b.pool_policy) == ("shared", "dedicated")
    assert run.a.backend == run.b.backend == "cuda"
    assert run.tokens_identical is True and run.token_steps > 0
    assert run.total_a > 0 and run.total_b > 0
    assert len([p for p in run.b.pools if p.graphs]) == 2
