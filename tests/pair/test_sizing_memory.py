"""`inspect` memory from the sizing: KV over attention layers only, quantized weights at their
packed size, dtype=auto, and one graph-memory answer when a prediction ran."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.probes.memory_predict import apply_prediction
from eaglegraph.results.inspect import MemoryEstimate
from eaglegraph.results.prediction import MemoryPrediction, PolicyPrediction, PredictedPool

pytestmark = pytest.mark.fast

PUBLIC = Path(__file__).parents[1] / "fixtures" / "configs" / "public"


def inspect_json(folder: Path, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(
        cli, ["inspect", str(folder), "--json", "--fail-on", "never", *args]
    )
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.output)
    return data


def test_hybrid_kv_counts_only_the_full_attention_layers() -> None:
    report = inspect_json(PUBLIC / "qwen3-next-80b-a3b-instruct")
    memory = report["memory"]
    # 12 full-attention layers × K and V × 2 KV heads × head_dim 256 × 2 bytes
    assert memory["kv_bytes_per_token_target"] == 12 * 2 * 2 * 256 * 2
    assert memory["kv_target_layers"] == "K+V, 12 attention layers of 48"
    assert any("36 target layers are linear attention" in n for n in memory["notes"])
    sizing = report["target"]["sizing"]
    assert sizing["layer_kinds"] == {"full_attention": 12, "linear_attention": 36}


def test_fp8_target_weights_are_sized_as_fp8() -> None:
    memory = inspect_json(PUBLIC / "deepseek-v3.2-exp")["memory"]
    total = memory["target_weight_bytes"] + memory["draft_weight_bytes"]
    assert 0.95 < total / 688_586_727_753 < 1.06  # not the 1.37 TB of bf16
    assert "FP8 block" in memory["weights_source"]
    assert memory["kv_target_layers"] == "latent row, all 61 layers"


def test_float32_config_is_estimated_in_the_engine_dtype(tmp_path: Path) -> None:
    data = json.loads((PUBLIC / "mixtral-8x7b-v0.1" / "config.json").read_text())
    data["torch_dtype"] = "float32"
    (tmp_path / "config.json").write_text(json.dumps(data))
    vllm = inspect_json(tmp_path)["memory"]
    assert vllm["dtype"] == "bfloat16"
    assert any("_resolve_auto_dtype" in n for n in vllm["notes"])
    sglang = inspect_json(tmp_path, "--engine", "sglang==0.5.23")["memory"]
    assert sglang["dtype"] == "float16"


def _prediction(reserved: int) -> MemoryPrediction:
    pool = PredictedPool("global", reserved, 1, reserved, 3)
    return MemoryPrediction("bfloat16", [PolicyPrediction("shared", [pool], [])])


def test_a_prediction_replaces_the_graph_estimate_and_the_budget_follows() -> None:
    mib = 1 << 20
    memory = MemoryEstimate(
        dtype="bfloat16",
        target_weight_bytes=0,
        draft_weight_bytes=0,
        weights_source="x",
        kv_bytes_per_token_target=1024,
        kv_bytes_per_token_draft=0,
        largest_capture_tokens=512,
        target_logits_bytes=None,
        draft_logits_bytes=None,
        draft_transient_peak_bytes=None,
        dedicated_pool_extra_bytes=None,
        graph_memory_bytes=700 * mib,
        graph_memory_in_kv_budget=True,
        kv_budget_bytes=1000 * mib,
        kv_budget_tokens=1000 * 1024,
    )
    apply_prediction(memory, _prediction(300 * mib), "shared")
    assert memory.graph_memory_bytes == 300 * mib
    assert memory.kv_budget_bytes == 1400 * mib
    assert memory.kv_budget_tokens == 1400 * 1024
    assert memory.graph_memory_source.startswith("predicted (shared pool")
    assert "replaces the estimate of 700.00 MiB" in memory.graph_memory_source


def test_sizing_survives_a_saved_run(tmp_path: Path) -> None:
    from eaglegraph.results.registry import load_run
    from eaglegraph.results.sizing import SizingFacts

    path = tmp_path / "run.json"
    path.write_text(json.dumps(inspect_json(PUBLIC / "gpt-oss-20b")))
    report = load_run(path)
    assert isinstance(report.target.sizing, SizingFacts)
    assert report.target.sizing.layer_kinds == {"sliding_attention": 12, "full_attention": 12}
