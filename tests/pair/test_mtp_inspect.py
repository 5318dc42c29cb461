"""`inspect` on MTP and DFlash layouts: identified with evidence, described, checked against
the target, never called EAGLE; MLA parameter and latent-KV estimates from config alone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize

MTP_CONFIGS = Path(__file__).parents[1] / "fixtures" / "configs" / "mtp"


def _inspect(model: str | Path, *extra: str) -> dict:  # type: ignore[type-arg]
    result = CliRunner().invoke(
        cli, ["inspect", str(model), "--json", "--fail-on", "never", *extra]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def _alone(name: str, tmp_path: Path) -> Path:
    shutil.copy(MTP_CONFIGS / name, tmp_path / "config.json")
    return tmp_path


def test_in_checkpoint_mtp_is_split_from_its_target_by_headers() -> None:
    doc = _inspect("tiny-deepseek-mtp")
    target, draft = doc["target"], doc["draft"]
    assert draft["kind"] == "mtp" and draft["supported"] is True
    assert not any(f["id"] == "unsupported-draft-kind" for f in doc["findings"])
    rows = dict(draft["kind_facts"])
    assert rows["MTP modules"].startswith("1 (num_nextn_predict_layers)")
    assert "model.layers.4." in rows["MTP modules"] and "mla attention" in rows["layout"]
    # the checkpoint's 147 tensors: 103 the target's, 44 the MTP module's
    assert (target["weights"]["tensor_count"], draft["weights"]["tensor_count"]) == (103, 44)
    # the MLA count matches the headers; the module's embed/head copies are shared, not counted
    assert target["estimated_parameter_count"] == target["weights"]["parameter_count"]
    copies = 2 * 256 * 64
    assert draft["estimated_parameter_count"] == draft["weights"]["parameter_count"] - copies
    # latent KV: one 32+16 row per layer and token, bf16
    assert doc["memory"]["kv_bytes_per_token_target"] == 4 * 48 * 2
    assert doc["memory"]["kv_bytes_per_token_draft"] == 1 * 48 * 2
    assert target["geometry"]["mla"]["kv_lora_rank"] == 32


def test_deepseek_r1_config_alone_counts_671b_and_its_mtp_module(tmp_path: Path) -> None:
    doc = _inspect(_alone("deepseek-r1-target.json", tmp_path))
    assert round(doc["target"]["estimated_parameter_count"] / 1e9) == 671
    assert 11.0e9 < doc["draft"]["estimated_parameter_count"] < 12.0e9
    assert doc["memory"]["kv_bytes_per_token_target"] == 61 * 576 * 2


def test_glm5_uses_the_mla_dims_not_head_dim(tmp_path: Path) -> None:
    doc = _inspect(_alone("glm-5.1-target.json", tmp_path))
    mla = doc["target"]["geometry"]["mla"]
    assert (mla["qk_nope_head_dim"] + mla["qk_rope_head_dim"], mla["v_head_dim"]) == (256, 256)
    assert doc["target"]["geometry"]["head_dim"] == 64
    # no head_dim warning for MLA layers, and the shared folder is reported once
    # (and GLM-5.1 does not fit one H100: the layout finding says so)
    assert [f["id"] for f in doc["findings"]] == ["missing-weights", "layout-does-not-fit"]
    assert "qk 256 (192+64 rope), v 256" in dict(doc["draft"]["kind_facts"])["MLA"]
    layers = doc["target"]["geometry"]["num_hidden_layers"]
    assert doc["memory"]["kv_bytes_per_token_target"] == layers * (512 + 64) * 2
    text = CliRunner().invoke(cli, ["inspect", str(tmp_path), "--no-color"]).output
    assert "MLA qk 256" in text and "EAGLE" not in text.split("Capture plan")[0]


def test_specforge_qwen35_mtp_draft_is_mtp_with_its_shared_head(tmp_path: Path) -> None:
    doc = _inspect(_alone("specforge-qwen3.5-4b-mtp-draft.json", tmp_path))
    draft = doc["draft"]
    assert draft["kind"] == "mtp" and draft["style"] == "specforge-qwen"
    assert any("Qwen3_5MTPDraftModel" in e for e in draft["evidence"])
    rows = dict(draft["kind_facts"])
    assert rows["lm_head"] == "the target's (mtp_config.share_lm_head)"
    assert "a separate draft folder, standard attention" in rows["layout"]


@pytest.mark.parametrize("preset", ["tiny-qwen3-mtp", "tiny-qwen3-dflash"])
def test_separate_drafts_are_checked_against_their_target(preset: str, tmp_path: Path) -> None:
    folder = tmp_path / "pair"
    shutil.copytree(materialize(preset), folder)
    assert not any(f.severity.value == "error" for f in load_pair(folder).findings)
    cfg_path = folder / "draft" / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["hidden_size"] = 96
    if preset.endswith("dflash"):
        cfg["dflash_config"]["target_layer_ids"] = [1, 3, 5]  # 5 + 1 is past 6 layers
        cfg["dflash_config"]["mask_token_id"] = 999
    cfg_path.write_text(json.dumps(cfg))
    ids = {f.id for f in load_pair(folder).findings}
    if preset.endswith("dflash"):
        assert {"aux-ids-out-of-range", "dflash-mask-token"} <= ids
    else:
        assert "hidden-mismatch" in ids


def test_dflash_plan_has_one_block_graph_per_size_and_no_decodes() -> None:
    doc = _inspect("tiny-qwen3-dflash", "--max-num-seqs", "4", "--capture-sizes", "4,8,16")
    phases = {p["phase"]: p for p in doc["plan"]["phases"]}
    assert phases["draft_prefill"]["mode"] == "FULL_DECODE_ONLY"
    assert [reqs for _, reqs in phases["draft_prefill"]["descriptors"]] == [1, 2, 4]
    assert phases["draft_decode"]["descriptor_count"] == 0
    rows = dict(doc["draft"]["kind_facts"])
    assert "outputs of layers [1, 3, 4] (entering [2, 4, 5])" in rows["target taps"]


def test_reduced_real_geometry_preset_says_what_the_cut_changes() -> None:
    doc = _inspect("deepseek-v3-mtp-4l")
    reduced = [f for f in doc["findings"] if f["id"] == "reduced-geometry"]
    assert len(reduced) == 1
    assert "4 of 61 layers and 16 of 256 routed experts" in reduced[0]["message"]
    assert doc["target"]["geometry"]["hidden_size"] == 7168
    assert materialize("deepseek-v3-mtp-4l").exists()


def test_sglang_dflash_drafts_through_the_target_verify_graphs() -> None:
    doc = _inspect("tiny-qwen3-dflash", "--behavior", "sglang-current", "--max-num-seqs", "4")
    phases = {p["phase"]: p for p in doc["plan"]["phases"]}
    target = [d for d, m in zip(phases["target"]["descriptors"],
                                phases["target"]["descriptor_modes"], strict=True) if m == "FULL"]  # fmt: skip
    assert phases["draft_prefill"]["descriptors"] == target and target
    assert "target-verify runner" in phases["draft_prefill"]["notes"][0]


# real configs: (file, count key, modules, where module 0 lives, why the rig does not build it)
REAL_MTP = [
    ("deepseek-r1-target.json", "num_nextn_predict_layers", 1, "model.layers.61.", None),
    ("glm-5.1-target.json", "num_nextn_predict_layers", 1, "model.layers.78.", None),
    ("qwen3.6-27b-target.json", "mtp_num_hidden_layers", 1, "mtp.",
     "48 linear-attention (Gated DeltaNet) layers of 64"),
    ("minimax-m2.5-target.json", "num_mtp_modules", 3, "model.layers.62.",
     "skip MiniMax-M2's MTP layers"),
    ("mimo-7b-target.json", "num_nextn_predict_layers", 1, "model.mtp_layers.0.",
     "not standard-attention modules at model.mtp_layers.0.*"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "key", "modules", "prefix", "why"), REAL_MTP)
def test_real_in_checkpoint_mtp_configs_are_classified_with_evidence(
    name: str, key: str, modules: int, prefix: str, why: str | None, tmp_path: Path
) -> None:
    """Every real config's MTP is found, with the key it was declared by, where module 0
    lives, and, for what the rig does not build, the one-line reason; capture refuses those
    with that line (exit 2) before building anything."""
    folder = _alone(name, tmp_path)
    doc = _inspect(folder)
    draft = doc["draft"]
    assert draft["kind"] == "mtp", draft
    assert f"config {key} = {modules}" in draft["evidence"]
    rows = dict(draft["kind_facts"])
    assert rows["MTP modules"] == f"{modules} ({key}), module 0 at {prefix}*"
    assert "EAGLE" not in json.dumps(draft)
    if why is None:
        assert "rig" not in rows
        return
    assert rows["rig"].startswith("not built: ") and why in rows["rig"]
    result = CliRunner().invoke(
        cli, ["capture", str(folder), "--random-weights", "--device", "cpu"]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1 and rows["rig"] in result.output
