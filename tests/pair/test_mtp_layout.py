"""MTP and DFlash layouts from real configs (tests/fixtures/configs/mtp) and from headers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from eaglegraph.pair import load_pair
from eaglegraph.pair.config import Config
from eaglegraph.pair.mla import mla_dims, moe_dims
from eaglegraph.pair.mtp_layout import dflash_layout, in_target_mtp, separate_mtp_draft
from eaglegraph.pair.tensors import read_checkpoint

MTP_CONFIGS = Path(__file__).parents[1] / "fixtures" / "configs" / "mtp"
SHARED = Path(__file__).parents[1] / "fixtures" / "configs"


def _cfg(name: str) -> Config:
    return Config.read(MTP_CONFIGS / name)


def test_deepseek_r1_in_target_mtp_with_mla_dims() -> None:
    layout = in_target_mtp(_cfg("deepseek-r1-target.json"), None)
    assert layout is not None and layout.in_target and layout.style == "deepseek"
    assert (layout.modules, layout.count_key) == (1, "num_nextn_predict_layers")
    assert layout.prefix == "model.layers.61." and layout.attention == "mla"
    assert layout.mla is not None and layout.mla.cache_width == 576
    moe = moe_dims(_cfg("deepseek-r1-target.json"))
    assert moe is not None and moe.is_moe_layer(61) and not moe.is_moe_layer(2)


def test_glm5_uses_mla_dims_not_head_dim() -> None:
    cfg = _cfg("glm-5.1-target.json")
    mla = mla_dims(cfg)
    assert mla is not None and (mla.qk_head_dim, mla.v_head_dim) == (256, 256)
    layout = in_target_mtp(cfg, None)
    assert layout is not None and layout.prefix == "model.layers.78."
    assert any("head_dim 64 is not the attention's" in n for n in layout.notes)


def test_separate_qwen_mtp_drafts_are_mtp() -> None:
    small = separate_mtp_draft(_cfg("specforge-qwen3.5-4b-mtp-draft.json"), set())
    assert small is not None and small.style == "specforge-qwen" and not small.in_target
    assert small.share_lm_head is True
    assert any("Qwen3_5MTPDraftModel" in e for e in small.evidence)
    moe = separate_mtp_draft(_cfg("specforge-qwen3.5-122b-a10b-mtp-draft.json"), set())
    assert moe is not None and any("Qwen3MoeForCausalLMMTP" in e for e in moe.evidence)
    # an EAGLE-3 config is not an MTP draft
    eagle3 = Config.read(SHARED / "specforge-llama3.1-8b-eagle3-draft.json")
    assert separate_mtp_draft(eagle3, set()) is None


def test_dflash_layout_reads_taps_block_and_mask() -> None:
    layout = dflash_layout(_cfg("specforge-qwen3-4b-dflash-draft.json"), None)
    assert layout.target_layer_ids == [1, 9, 17, 25, 33]
    assert (layout.block_size, layout.mask_token_id, layout.num_target_layers) == (16, 151669, 36)
    assert layout.num_layers == 5 and layout.non_causal


def test_in_target_mtp_from_headers(tmp_path: Path) -> None:
    """Weights past the declared stack are found, and the eh_proj shape is read."""
    config = {"num_hidden_layers": 2, "hidden_size": 8, "num_nextn_predict_layers": 1}
    (tmp_path / "config.json").write_text(json.dumps(config))
    save_file(
        {
            "model.layers.1.input_layernorm.weight": torch.ones(8),
            "model.layers.2.eh_proj.weight": torch.zeros(8, 16),
            "model.layers.2.enorm.weight": torch.ones(8),
        },
        str(tmp_path / "model.safetensors"),
    )
    layout = in_target_mtp(Config.read(tmp_path / "config.json"), read_checkpoint(tmp_path))
    assert layout is not None and layout.eh_proj_shape == [8, 16]
    assert any("2 tensors past layer 1" in e for e in layout.evidence) and not layout.notes

    stripped = dict(config)
    (tmp_path / "config.json").write_text(json.dumps(stripped))
    save_file({"model.layers.1.x": torch.ones(2)}, str(tmp_path / "model.safetensors"))
    layout = in_target_mtp(Config.read(tmp_path / "config.json"), read_checkpoint(tmp_path))
    assert layout is not None and any("stripped" in n for n in layout.notes)


def test_no_mtp_in_a_plain_target() -> None:
    assert in_target_mtp(Config.read(SHARED / "qwen3-8b-target.json"), None) is None


@pytest.mark.parametrize(
    ("name", "kind", "evidence"),
    [
        ("deepseek-r1-target.json", "mtp", "num_nextn_predict_layers = 1"),
        ("glm-5.1-target.json", "mtp", "num_nextn_predict_layers = 1"),
        ("specforge-qwen3.5-4b-mtp-draft.json", "mtp", "Qwen3_5MTPDraftModel"),
        ("specforge-qwen3.5-122b-a10b-mtp-draft.json", "mtp", "Qwen3MoeForCausalLMMTP"),
        ("specforge-qwen3-4b-dflash-draft.json", "dflash", "DFlashDraftModel"),
    ],
)
def test_inspect_never_calls_mtp_or_dflash_eagle(
    name: str, kind: str, evidence: str, tmp_path: Path
) -> None:
    shutil.copy(MTP_CONFIGS / name, tmp_path / "config.json")
    pair = load_pair(tmp_path)
    assert pair.kind == kind
    assert pair.draft_facts is not None and any(evidence in e for e in pair.draft_facts.evidence)
