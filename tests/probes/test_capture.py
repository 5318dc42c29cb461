"""The capture command and its run: timeline, pools, totals, saved files, OOM handling."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.probes.capture import CaptureRequest, run_capture
from eaglegraph.probes.spec import rig_config
from eaglegraph.results import load_run
from eaglegraph.rig.step import Rig

SMALL = [
    "--max-num-seqs",
    "4",
    "-K",
    "3",
    "--capture-sizes",
    "4,8",
    "--max-num-batched-tokens",
    "64",
]


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_capture_cli_emulated_json_and_files(tmp_path: Path) -> None:
    save, html, trace = tmp_path / "run.json", tmp_path / "run.html", tmp_path / "run.trace.json"
    code, out, err = _invoke(
        "capture", "tiny-llama-eagle1", *SMALL, "--device", "cpu", "--json",
        "--save", str(save), "--html", str(html), "--trace", str(trace),
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["schema"] == "eaglegraph.capture/1" and doc["backend"] == "emulated"
    events = doc["events"]
    # FULL_AND_PIECEWISE, sizes 4,8: target 2 PW + 2 FULL(uniform) ; prefill the same ; decode FULL n≤4
    assert [e["phase"] for e in events].count("target") == 4
    assert [e["phase"] for e in events].count("draft_prefill") == 4
    assert [
        (e["mode"], e["num_tokens"], e["num_reqs"]) for e in events if e["phase"] == "draft_decode"
    ] == [("FULL", 4, 4)]
    assert all(e["bytes"] is None for e in events)  # memory: N/A on the emulated backend
    assert doc["totals"]["took_bytes"] is None and doc["pool_policy"] == "shared"
    assert load_run(save).events[0].phase == "target"
    assert "Capture timeline" in html.read_text()
    assert json.loads(trace.read_text())["traceEvents"]
    code, _, err = _invoke(
        "capture", "tiny-llama-eagle1", *SMALL, "--device", "cpu", "--save", str(save)
    )
    assert code == 2 and "already exists" in err


def test_capture_rich_view_says_na(tmp_path: Path) -> None:
    code, out, _ = _invoke(
        "capture", "tiny-llama-eagle1", *SMALL, "--device", "cpu", "--mode", "FULL", "--no-color"
    )
    assert code == 0
    assert "N/A (emulated backend)" in out and "Graph capturing finished in" in out


def test_capture_failure_keeps_partial_timeline(monkeypatch: pytest.MonkeyPatch) -> None:
    pair = load_pair(materialize("tiny-llama-eagle1"))
    config = rig_config(
        pair, {"max_num_seqs": 4, "num_speculative_tokens": 3, "capture_sizes": (4, 8), "mode": "FULL"},
        device="cpu", max_model_len=256,
    )  # fmt: skip
    rig = Rig(pair, config)
    calls = {"n": 0}
    routine = rig.runners["draft_prefill"].routine

    def flaky(num_reqs: int, num_tokens: int) -> None:
        calls["n"] += 1
        if num_tokens == 4 and calls["n"] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        routine(num_reqs, num_tokens)

    rig.runners["draft_prefill"].routine = flaky
    run = run_capture(pair, CaptureRequest(config=config), rig=rig)
    assert not run.ok and run.failed is not None
    assert (run.failed.phase, run.failed.status, run.failed.num_tokens) == (
        "draft_prefill",
        "oom",
        4,
    )
    assert [e.phase for e in run.events] == ["target", "target", "draft_prefill"]
    assert any(f.id == "capture-oom" for f in run.findings)


def test_unsupported_pair_fails_before_allocating(tmp_path: Path) -> None:
    code, _, err = _invoke("capture", str(tmp_path / "none"))
    assert code == 2
    shutil_target = materialize("llama3.1-8b-eagle1")
    code, _, err = _invoke("capture", str(shutil_target), "--device", "cpu")
    assert code == 2 and "--random-weights" in err


def test_memdiff_without_cuda_exits_3() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    code, _, err = _invoke("memdiff", "tiny-llama-eagle1")
    assert code == 3 and "needs a CUDA GPU" in err


@pytest.mark.cuda
def test_cuda_capture_accounts_every_pool() -> None:
    pair = load_pair(materialize("tiny-llama-eagle3"))
    for policy, expect_pools in (("shared", 1), ("dedicated", 2)):
        gc.collect()  # the previous rig's graphs (and pools) must be gone
        torch.cuda.empty_cache()
        config = rig_config(
            pair, {"max_num_seqs": 8, "num_speculative_tokens": 3}, device="cuda", max_model_len=256
        )
        run = run_capture(pair, CaptureRequest(config=config, pool=policy))
        assert run.ok and run.totals.accounted, (run.failed, run.totals)
        graph_pools = [p for p in run.pools if p.graphs]
        assert len(graph_pools) == expect_pools, run.pools
        assert sum(p.graphs for p in graph_pools) == len(run.events)
        assert run.totals.pool_reserved_bytes >= sum(p.reserved_bytes for p in graph_pools) > 0
        assert all(e.bytes is not None for e in run.events)
        assert all(e.segments > 1 for e in run.events if e.mode == "PIECEWISE")
        # "took X": each graph's window starts where the previous one ended (the first where
        # the capture began), so the per-graph figures add up to the whole capture's
        t = run.totals
        assert t.took_bytes == t.allocator_bytes + t.outside_allocator_bytes
        assert t.outside_in_captures_bytes == t.outside_allocator_bytes, t


@pytest.mark.cuda
def test_cuda_capture_oom_is_caught() -> None:
    pair = load_pair(materialize("tiny-llama-eagle3"))
    config = rig_config(
        pair, {"max_num_seqs": 8, "num_speculative_tokens": 3}, device="cuda", max_model_len=256
    )
    rig = Rig(pair, config)
    torch.cuda.synchronize()
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction((torch.cuda.memory_reserved() + (1 << 20)) / total)
    try:
        run = run_capture(pair, CaptureRequest(config=config), rig=rig)
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
    assert run.failed is not None and run.failed.status == "oom", run.failed
    assert any(f.id == "capture-oom" for f in run.findings)
