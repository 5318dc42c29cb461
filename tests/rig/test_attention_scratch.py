"""FA3's per-call split-KV scratch: where vLLM configures it (the recording test is in
tests/probes/test_memory_predict.py)."""

from __future__ import annotations

from eaglegraph.known.attention_workspace import SplitKvScratch, split_kv_scratch


def test_only_vllm_fa3_on_hopper_with_full_graphs_caps_the_splits() -> None:
    hopper = split_kv_scratch("vllm", "flash_attn", 9, True, 498)
    assert hopper is not None and hopper.splits(83, 498) == 32
    assert hopper.splits(83, 499) == 0  # above the largest capture size: FA3's heuristic
    assert hopper.splits(993, 993) == 0  # FA3 turns splitting off past 992 requests
    no_full = split_kv_scratch("vllm", "flash_attn", 9, False, 498)
    assert no_full is not None and no_full.splits(1, 6) == 0
    assert split_kv_scratch("vllm", "flash_attn", 8, True, 498) is None  # FA2
    assert split_kv_scratch("vllm", "flashinfer", 9, True, 498) is None
    assert split_kv_scratch("sglang", "flash_attn", 9, True, 498) is None
    assert SplitKvScratch.shapes(32, 32, 498, 128) == [(32, 498), (32, 32, 498, 128), (32, 32, 498)]
    assert SplitKvScratch.shapes(0, 32, 498, 128) == [(32, 498)]
