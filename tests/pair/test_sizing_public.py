"""Public checkpoints sized from their config alone (tests/fixtures/configs/public/SOURCES.md
cites each config, published parameter count and checkpoint size)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eaglegraph.pair.config import Config
from eaglegraph.pair.geometry import geometry_from_config
from eaglegraph.pair.layer_kinds import FULL, LINEAR, MAMBA, SLIDING
from eaglegraph.pair.sizing import size_model
from eaglegraph.results.sizing import SizingFacts

pytestmark = pytest.mark.fast

PUBLIC = Path(__file__).parents[1] / "fixtures" / "configs" / "public"
GIB = 1 << 30

# folder -> (published total parameters, the model's own; with MTP where the card counts it)
PUBLISHED = {
    "qwen3-next-80b-a3b-instruct": 80e9,
    "deepseek-v3": 671e9,
    "deepseek-v3.2-exp": 685e9,  # the card's figure includes the MTP module
    "qwen3-30b-a3b": 30.5e9,
    "mixtral-8x7b-v0.1": 46.7e9,
    "gpt-oss-20b": 20.91e9,
    "llama-4-scout-17b-16e-instruct": 109e9,
    "llama-3.1-8b-instruct-awq-int4": 8.03e9,
}
HELD_OUT = {
    "gpt-oss-120b": 116.83e9,
    "gemma-3-27b-it": 27.4e9,
    "glm-4.5-air": 106e9,
    "jamba-v0.1": 52e9,
    "llama-3.1-8b-instruct-fp4": 8.03e9,
}
WITH_MTP = {"deepseek-v3.2-exp"}
# the released checkpoints' sizes (bytes) where a public source gives them
CHECKPOINT_BYTES = {
    "deepseek-v3": 688_586_727_753,
    "gpt-oss-20b": 12.8 * GIB,
    "gpt-oss-120b": 60.8 * GIB,
}


def sized(name: str, engine: str = "vllm") -> SizingFacts:
    folder = PUBLIC / name
    cfg = Config.read(folder / "config.json")
    return size_model(geometry_from_config(cfg), cfg, folder, engine)


def test_held_out_list_is_the_one_in_sources() -> None:
    text = (PUBLIC / "SOURCES.md").read_text()
    held = text.split("## Held out", 1)[1]
    assert {line[2:].strip() for line in held.splitlines() if line.startswith("- ")} == set(
        HELD_OUT
    )
    assert set(PUBLISHED) | set(HELD_OUT) == {p.name for p in PUBLIC.iterdir() if p.is_dir()}


@pytest.mark.parametrize("name", sorted(PUBLISHED | HELD_OUT))
def test_parameters_within_2_percent_of_published(name: str) -> None:
    s = sized(name)
    count = s.parameters + (s.mtp_parameters if name in WITH_MTP else 0)
    published = (PUBLISHED | HELD_OUT)[name]
    assert abs(count / published - 1) < 0.02, f"{name}: {count / 1e9:.2f}B"


@pytest.mark.parametrize("name", sorted(CHECKPOINT_BYTES))
def test_weight_bytes_within_5_percent_of_the_checkpoint(name: str) -> None:
    s = sized(name)
    assert abs(s.checkpoint_weight_bytes / CHECKPOINT_BYTES[name] - 1) < 0.05


def test_qwen3_next_counts_its_512_experts_and_36_linear_layers() -> None:
    s = sized("qwen3-next-80b-a3b-instruct")
    assert s.parameters > 75e9  # was "~3.04B" when only n_routed_experts was read
    assert s.moe is not None and "512 experts (num_experts)" in s.moe
    assert s.layer_kinds == {FULL: 12, LINEAR: 36}
    assert s.layer_kinds_source == "full_attention_interval"
    assert s.state_bytes_per_request_layer > 0


def test_deepseek_fp8_block_is_sized_as_fp8() -> None:
    s = sized("deepseek-v3.2-exp")
    assert s.quantization == "FP8 block 128×128"
    # about one byte per parameter, not two (bf16 would be 1.37 TB)
    assert 0.95 < s.checkpoint_weight_bytes / (s.parameters + s.mtp_parameters) < 1.05
    assert "FP8 block 128×128" in s.weight_bytes_source


def test_mxfp4_covers_only_the_experts() -> None:
    s = sized("gpt-oss-20b")
    assert s.layer_kinds == {SLIDING: 12, FULL: 12} and s.sliding_window == 128
    assert "on experts," in s.weight_bytes_source


def test_awq_int4_with_group_size() -> None:
    s = sized("llama-3.1-8b-instruct-awq-int4")
    assert s.quantization == "AWQ int4, group 128"
    # 7B linear weights at ~0.52 byte plus the fp16 embedding and head
    assert 5.3e9 < s.weight_bytes < 6.0e9


def test_modelopt_nvfp4_from_hf_quant_config_json() -> None:
    s = sized("llama-3.1-8b-instruct-fp4")
    assert s.quantization == "ModelOpt NVFP4 (group 16)"
    assert s.weight_bytes < 0.4 * s.parameters * 2


def test_multimodal_counts_the_vision_tower_not_as_kv() -> None:
    s = sized("llama-4-scout-17b-16e-instruct")
    assert 0.3e9 < s.vision_parameters < 1.5e9
    assert s.layer_kinds == {FULL: 48}
    g = sized("gemma-3-27b-it")
    assert g.layer_kinds == {SLIDING: 52, FULL: 10} and g.sliding_window == 1024


def test_jamba_attention_every_eighth_layer_rest_mamba() -> None:
    s = sized("jamba-v0.1")
    assert s.layer_kinds == {MAMBA: 28, FULL: 4}
    assert s.moe is not None and "16 of 32 layers routed" in s.moe


def test_float32_config_is_sized_as_each_engine_loads_it(tmp_path: Path) -> None:
    data = json.loads((PUBLIC / "qwen3-30b-a3b" / "config.json").read_text())
    data["torch_dtype"] = "float32"
    (tmp_path / "config.json").write_text(json.dumps(data))
    cfg = Config.read(tmp_path / "config.json")
    g = geometry_from_config(cfg)
    vllm = size_model(g, cfg, tmp_path, "vllm")
    sglang = size_model(g, cfg, tmp_path, "sglang")
    assert vllm.load_dtype == "bfloat16" and sglang.load_dtype == "float16"
    assert vllm.weight_bytes == 2 * vllm.parameters  # not 4 bytes a parameter
    assert "_resolve_auto_dtype" in vllm.load_dtype_source
    assert "_get_and_verify_dtype" in sglang.load_dtype_source


def test_layer_plan_spellings(tmp_path: Path) -> None:
    from eaglegraph.pair.layer_kinds import DENSE, MOE, NONE, layer_plan

    nemotron = Config({"hybrid_override_pattern": "M-M*-E", "num_local_experts": 8}, "nemotron-h")
    plan = layer_plan(nemotron, 6)
    assert plan.mixers == [MAMBA, NONE, MAMBA, FULL, NONE, NONE]
    assert plan.mlps == [NONE, DENSE, NONE, NONE, DENSE, MOE]
    bamba = layer_plan(Config({"attn_layer_indices": [1]}, "bamba"), 3)
    assert bamba.mixers == [MAMBA, FULL, MAMBA]
    qwen2 = Config(
        {"sliding_window": 4096, "use_sliding_window": True, "max_window_layers": 2}, "qwen2"
    )
    assert layer_plan(qwen2, 4).mixers == [FULL, FULL, SLIDING, SLIDING]
    mistral = layer_plan(Config({"sliding_window": 4096}, "mistral"), 2)
    assert mistral.mixers == [SLIDING, SLIDING] and mistral.sliding_window == 4096
    qwen_moe = Config({"num_experts": 4, "decoder_sparse_step": 2, "mlp_only_layers": [3]}, "q")
    assert layer_plan(qwen_moe, 4).mlps == [DENSE, MOE, DENSE, DENSE]
    llama4 = Config({"num_local_experts": 16, "interleave_moe_layer_step": 2}, "llama4")
    assert layer_plan(llama4, 4).mlps == [DENSE, MOE, DENSE, MOE]
    odd = layer_plan(Config({"layer_types": ["full_attention", "something_new"]}, "x"), 2)
    assert odd.mixers == [FULL, FULL]  # unknown kinds may hold KV: counted as attention


def test_compressed_tensors_nvfp4_and_fp8_per_tensor() -> None:
    from eaglegraph.pair.quantization import EXPERTS, read_quantization

    ct = Config(
        {
            "quantization_config": {
                "quant_method": "compressed-tensors",
                "config_groups": {
                    "group_0": {"weights": {"num_bits": 4, "type": "float", "group_size": 16}}
                },
                "ignore": ["lm_head", "model.layers.0.linear_attn"],
            }
        },
        "ct",
    )
    q = read_quantization(ct)
    assert q is not None and q.description == "compressed-tensors NVFP4"
    assert q.bytes_per_param[EXPERTS] == 0.5 + 1 / 16 and "attention" not in q.bytes_per_param
    fp8 = read_quantization(Config({"quantization_config": {"quant_method": "fp8"}}, "fp8"))
    assert fp8 is not None and fp8.description == "FP8 per-tensor"
