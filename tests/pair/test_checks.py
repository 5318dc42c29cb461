"""Each pair check fires on the mismatch it names, and stays quiet on a consistent pair."""

from __future__ import annotations

from pathlib import Path

from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from tests.helpers import (
    eagle1_shapes,
    eagle3_shapes,
    target_shapes,
    tiny_eagle1_config,
    tiny_eagle3_config,
    tiny_target_config,
    write_config,
    write_tensors,
)


def _pair(
    tmp_path: Path, target_cfg: dict, draft_cfg: dict, draft_shapes=None, target_shapes_=None
):  # type: ignore[no-untyped-def]
    t = write_config(tmp_path / "target", target_cfg)
    d = write_config(tmp_path / "draft", draft_cfg)
    if target_shapes_ is not None:
        write_tensors(t / "model.safetensors", target_shapes_)
    if draft_shapes is not None:
        write_tensors(d / "model.safetensors", draft_shapes)
    return load_pair(tmp_path)


def _ids(pair) -> set[str]:  # type: ignore[no-untyped-def]
    return {f.id for f in pair.findings}


def test_tiny_presets_are_consistent() -> None:
    for name in ("tiny-llama-eagle1", "tiny-llama-eagle3"):
        pair = load_pair(materialize(name))
        assert not [f for f in pair.findings if f.severity.value == "error"], pair.findings


def test_hidden_mismatch_eagle3(tmp_path: Path) -> None:
    pair = _pair(tmp_path, tiny_target_config(), tiny_eagle3_config(target_hidden_size=96))
    f = next(f for f in pair.findings if f.id == "hidden-mismatch")
    assert "96" in f.message and "64" in f.message and f.ref


def test_hidden_mismatch_eagle1(tmp_path: Path) -> None:
    pair = _pair(tmp_path, tiny_target_config(), tiny_eagle1_config(hidden_size=128))
    assert "hidden-mismatch" in _ids(pair)


def test_fc_width_mismatch_from_tensor(tmp_path: Path) -> None:
    cfg = tiny_eagle3_config()
    shapes = eagle3_shapes(cfg, n_aux=2)  # fc over 2 aux states, target emits 3
    pair = _pair(tmp_path, tiny_target_config(), cfg, draft_shapes=shapes)
    f = next(f for f in pair.findings if f.id == "fc-width-mismatch")
    assert "128" in f.message and "192" in f.message


def test_vocab_and_t2d_mismatch(tmp_path: Path) -> None:
    cfg = tiny_eagle3_config(vocab_size=300)
    shapes = eagle3_shapes(cfg)
    pair = _pair(tmp_path, tiny_target_config(), cfg, draft_shapes=shapes)
    assert {"vocab-mismatch", "t2d-length-mismatch"} <= _ids(pair)


def test_lm_head_rows_and_d2t_length(tmp_path: Path) -> None:
    cfg = tiny_eagle3_config()
    shapes = eagle3_shapes(cfg)
    shapes["lm_head.weight"] = (100, 64)
    shapes["d2t"] = (100,)
    pair = _pair(tmp_path, tiny_target_config(), cfg, draft_shapes=shapes)
    ids = _ids(pair)
    assert {"lm-head-rows-mismatch", "d2t-length-mismatch", "tensor-shape-mismatch"} <= ids


def test_aux_ids_out_of_range_and_sglang_shift(tmp_path: Path) -> None:
    cfg = tiny_eagle3_config(
        eagle_config={"eagle_aux_hidden_state_layer_ids": [1, 4, 9], "use_aux_hidden_state": True}
    )
    pair = _pair(tmp_path, tiny_target_config(), cfg)
    f = next(f for f in pair.findings if f.id == "aux-ids-out-of-range")
    assert "[9]" in f.message
    cfg = tiny_eagle3_config(
        eagle_config={"eagle_aux_hidden_state_layer_ids": [1, 4, 7], "use_aux_hidden_state": True}
    )
    assert "aux-ids-sglang-shift" in _ids(_pair(tmp_path / "b", tiny_target_config(), cfg))


def test_draft_max_positions_below_target(tmp_path: Path) -> None:
    pair = _pair(
        tmp_path,
        tiny_target_config(max_position_embeddings=131072),
        tiny_eagle3_config(max_position_embeddings=2048),
    )
    f = next(f for f in pair.findings if f.id == "draft-max-positions")
    assert "2048" in f.message and "vllm-project/vllm#21986" in (f.ref or "")


def test_explicit_head_dim(tmp_path: Path) -> None:
    pair = _pair(tmp_path, tiny_target_config(head_dim=32), tiny_eagle3_config(head_dim=32))
    assert "explicit-head-dim" in _ids(pair)


def test_eagle1_fc_bias_cases(tmp_path: Path) -> None:
    cfg = tiny_eagle1_config(bias=False)
    pair = _pair(
        tmp_path / "a", tiny_target_config(), cfg, draft_shapes=eagle1_shapes(cfg, bias=True)
    )
    assert next(f for f in pair.findings if f.id == "eagle1-fc-bias").severity.value == "error"
    cfg = tiny_eagle1_config()
    del cfg["bias"]
    pair = _pair(
        tmp_path / "b", tiny_target_config(), cfg, draft_shapes=eagle1_shapes(cfg, bias=True)
    )
    assert next(f for f in pair.findings if f.id == "eagle1-fc-bias").severity.value == "warning"
    pair = _pair(
        tmp_path / "c", tiny_target_config(), cfg, draft_shapes=eagle1_shapes(cfg, bias=False)
    )
    assert "no fc.bias" in next(f for f in pair.findings if f.id == "eagle1-fc-bias").message
    cfg = tiny_eagle1_config(bias=False)
    pair = _pair(
        tmp_path / "d", tiny_target_config(), cfg, draft_shapes=eagle1_shapes(cfg, bias=False)
    )
    assert "eagle1-fc-bias" not in _ids(pair)


def test_tensor_shapes_disagreeing_with_config(tmp_path: Path) -> None:
    cfg = tiny_target_config()
    shapes = target_shapes(cfg)
    for i in range(cfg["num_hidden_layers"]):
        shapes[f"model.layers.{i}.mlp.gate_proj.weight"] = (96, 64)
    pair = _pair(tmp_path, cfg, tiny_eagle3_config(), target_shapes_=shapes)
    f = [f for f in pair.findings if f.id == "tensor-shape-mismatch"]
    assert len(f) == 1  # one finding per tensor family, not per layer
    assert "gate_proj" in f[0].message and "[128, 64]" in f[0].message and "7 more" in f[0].message
