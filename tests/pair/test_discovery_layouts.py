"""The layouts the README lists beyond `target/` + `draft/`, on real public configs: a target at
the root with its draft in any subfolder, Hugging Face cache folders, drafts naming their
verifier, sharded indexes, and what discovery skips (symlink loops, unreadable folders)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from eaglegraph.errors import BadInput
from eaglegraph.pair import load_pair
from tests.helpers import (
    eagle3_shapes,
    tiny_eagle3_config,
    tiny_target_config,
    write_config,
    write_tensors,
)

CONFIGS = Path(__file__).parents[1] / "fixtures" / "configs"
QWEN3_8B = CONFIGS / "qwen3-8b-target.json"
QWEN3_8B_EAGLE3 = CONFIGS / "specforge-qwen3-8b-eagle3-draft.json"
DEEPSEEK_R1 = CONFIGS / "mtp" / "deepseek-r1-target.json"
DEEPSEEK_EAGLE3 = CONFIGS / "specforge-deepseek-v3-671b-eagle3-draft.json"


def _place(config: Path | dict[str, Any], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(config, Path):
        shutil.copy(config, folder / "config.json")
    else:
        (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def _hf_cache(hub: Path, name: str, config: Path | dict[str, Any], rev: str = "0" * 40) -> Path:
    """A Hugging Face cache folder as `huggingface_hub` writes it: the file in blobs/, the
    snapshot's config.json a relative symlink to it, refs/main naming the revision."""
    repo = hub / ("models--" + name.replace("/", "--"))
    blob = _place(config, repo / "blobs") / "config.json"
    blob = blob.rename(repo / "blobs" / f"blob-{rev[:8]}")
    snapshot = repo / "snapshots" / rev
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").symlink_to(Path("../../blobs") / blob.name)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(rev, encoding="utf-8")
    return repo


@pytest.mark.parametrize("sub", ["draft", "eagle", "mtp", "EAGLE3-Qwen3-8B"])
def test_target_at_root_draft_in_any_subfolder(tmp_path: Path, sub: str) -> None:
    _place(QWEN3_8B, tmp_path)
    _place(QWEN3_8B_EAGLE3, tmp_path / sub)
    (tmp_path / "tokenizer").mkdir()  # a subfolder without config.json is not a model
    pair = load_pair(tmp_path)
    assert pair.layout == f"target at the root + draft in {sub}/"
    assert pair.target is not None and pair.target.path == tmp_path
    assert pair.draft is not None and pair.draft.path == tmp_path / sub
    assert pair.kind == "eagle3" and pair.missing is None


def test_mla_target_at_root_with_its_eagle3_head(tmp_path: Path) -> None:
    _place(DEEPSEEK_R1, tmp_path)
    _place(DEEPSEEK_EAGLE3, tmp_path / "eagle")
    pair = load_pair(tmp_path)
    assert pair.kind == "eagle3" and pair.layout == "target at the root + draft in eagle/"
    assert pair.target is not None and pair.target.geometry.num_hidden_layers == 61


def test_target_at_root_with_two_drafts_asks_which(tmp_path: Path) -> None:
    _place(QWEN3_8B, tmp_path)
    _place(QWEN3_8B_EAGLE3, tmp_path / "eagle3")
    _place(CONFIGS / "specforge-qwen3-8b-dflash-draft-not-eagle.json", tmp_path / "dflash")
    with pytest.raises(BadInput, match=r"several drafts \(dflash/, eagle3/\).*--draft DIR"):
        load_pair(tmp_path)


def test_target_at_root_alone_still_says_so(tmp_path: Path) -> None:
    _place(QWEN3_8B, tmp_path)
    pair = load_pair(tmp_path)
    assert pair.layout == "target only" and pair.missing and "no draft found" in pair.missing


def test_hugging_face_cache_folder(tmp_path: Path) -> None:
    repo = _hf_cache(tmp_path / "hub", "Qwen/Qwen3-8B", QWEN3_8B, rev="a" * 40)
    pair = load_pair(repo)
    assert pair.layout == "Hugging Face cache, target only"
    assert pair.target is not None and pair.target.path == repo / "snapshots" / ("a" * 40)
    assert pair.target.geometry.vocab_size == 151936  # read through the blob symlink


def test_hugging_face_cache_without_refs_takes_the_newest_snapshot(tmp_path: Path) -> None:
    repo = _hf_cache(tmp_path / "hub", "Qwen/Qwen3-8B", QWEN3_8B, rev="a" * 40)
    (repo / "refs" / "main").unlink()
    newer = _place(QWEN3_8B, repo / "snapshots" / ("b" * 40))
    os.utime(repo / "snapshots" / ("a" * 40), (1, 1))
    pair = load_pair(repo)
    assert pair.target is not None and pair.target.path == newer
    skipped = [f for f in pair.findings if f.id == "layout-skipped"]
    assert skipped and "2 snapshots and no refs/main" in skipped[0].message


def test_hub_folder_of_two_cache_folders(tmp_path: Path) -> None:
    hub = tmp_path / "hub"
    _hf_cache(hub, "Qwen/Qwen3-8B", QWEN3_8B)
    _hf_cache(hub, "lmsys/Qwen3-8B-EAGLE3", QWEN3_8B_EAGLE3)
    pair = load_pair(hub)
    assert pair.layout == "model subfolders" and pair.kind == "eagle3"
    assert pair.target is not None and "models--Qwen--Qwen3-8B" in str(pair.target.path)


def test_draft_naming_its_verifier_in_the_same_cache(tmp_path: Path) -> None:
    hub = tmp_path / "hub"
    _hf_cache(hub, "Qwen/Qwen3-8B", QWEN3_8B)
    draft_cfg = json.loads(QWEN3_8B_EAGLE3.read_text()) | {
        "base_model_name_or_path": "Qwen/Qwen3-8B"
    }
    repo = _hf_cache(hub, "lmsys/Qwen3-8B-EAGLE3", draft_cfg)
    pair = load_pair(repo)
    assert pair.layout == "Hugging Face cache, draft naming its verifier"
    assert pair.target is not None and "models--Qwen--Qwen3-8B" in str(pair.target.path)
    assert "verifier-mismatch" not in {f.id for f in pair.findings}


def test_draft_naming_its_verifier_by_base_model_key(tmp_path: Path) -> None:
    _place(QWEN3_8B, tmp_path / "Qwen3-8B")
    draft_cfg = json.loads(QWEN3_8B_EAGLE3.read_text()) | {
        "base_model_name_or_path": "Qwen/Qwen3-8B"
    }
    pair = load_pair(_place(draft_cfg, tmp_path / "eagle3-head"))
    assert pair.layout == "draft naming its verifier"
    assert pair.target is not None and pair.target.path.name == "Qwen3-8B"


def test_explicit_draft_given_as_cache_folder(tmp_path: Path) -> None:
    target = _place(QWEN3_8B, tmp_path / "t")
    repo = _hf_cache(tmp_path / "hub", "lmsys/Qwen3-8B-EAGLE3", QWEN3_8B_EAGLE3)
    pair = load_pair(None, target=target, draft=repo)
    assert pair.kind == "eagle3" and pair.draft is not None
    assert pair.draft.path.parent.name == "snapshots"


def test_sharded_draft_under_root_target(tmp_path: Path) -> None:
    write_config(tmp_path, tiny_target_config())
    cfg = tiny_eagle3_config()
    draft = write_config(tmp_path / "eagle", cfg)
    shapes = eagle3_shapes(cfg)
    names = sorted(shapes)
    half = len(names) // 2
    shards = {"model-00001-of-00002.safetensors": names[:half]}
    shards["model-00002-of-00002.safetensors"] = names[half:]
    for shard, members in shards.items():
        write_tensors(draft / shard, {n: shapes[n] for n in members})
    index = {"weight_map": {n: s for s, members in shards.items() for n in members}}
    (draft / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")
    pair = load_pair(tmp_path)
    assert pair.layout == "target at the root + draft in eagle/"
    assert pair.draft is not None and pair.draft.weights.files == sorted(shards)
    assert pair.draft.weights.tensor_count == len(shapes)
    assert pair.draft_facts is not None and pair.draft_facts.d2t_shape == [128]


def test_symlink_loops_are_skipped_with_a_named_warning(tmp_path: Path) -> None:
    _place(QWEN3_8B, tmp_path / "Qwen3-8B")
    _place(QWEN3_8B_EAGLE3, tmp_path / "head")
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    pair = load_pair(tmp_path)
    assert pair.kind == "eagle3"
    skipped = sorted(f.message for f in pair.findings if f.id == "layout-skipped")
    assert skipped == [f"skipped {tmp_path / n}: a symlink loop" for n in ("a", "b", "loop")]


def test_config_symlink_into_a_missing_blob_is_named(tmp_path: Path) -> None:
    """A cache snapshot whose config.json points at a blob a partial download never wrote."""
    hub = tmp_path / "hub"
    _hf_cache(hub, "Qwen/Qwen3-8B", QWEN3_8B)
    repo = _hf_cache(hub, "lmsys/Qwen3-8B-EAGLE3", QWEN3_8B_EAGLE3)
    for blob in (repo / "blobs").iterdir():
        blob.unlink()
    pair = load_pair(hub)
    assert pair.draft is None and pair.target is not None
    skipped = [f.message for f in pair.findings if f.id == "layout-skipped"]
    assert skipped == [f"skipped {repo}: its config.json is a broken symlink"]
    with pytest.raises(BadInput, match="its config.json is a broken symlink"):
        load_pair(repo)


def test_symlink_loop_given_as_model_dir(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to("loop")
    with pytest.raises(BadInput, match="is a symlink loop"):
        load_pair(tmp_path / "loop")


def test_only_loops_says_what_was_skipped(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to("loop")
    with pytest.raises(BadInput, match=r"no config\.json .*skipped .*loop: a symlink loop"):
        load_pair(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads folders whatever their mode")
def test_unreadable_subfolder_is_skipped_with_a_named_warning(tmp_path: Path) -> None:
    _place(QWEN3_8B, tmp_path)
    _place(QWEN3_8B_EAGLE3, tmp_path / "draft")
    locked = _place(QWEN3_8B_EAGLE3, tmp_path / "locked")
    locked.chmod(0)
    try:
        pair = load_pair(tmp_path)
    finally:
        locked.chmod(0o755)
    assert pair.kind == "eagle3"
    assert any("locked" in f.message for f in pair.findings if f.id == "layout-skipped")


def test_unreadable_subfolder_seen_as_any_user_sees_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same skip where the tests run as root (who reads every folder): stat() refuses the
    folder as it does for a user without permission."""
    import eaglegraph.pair.discovery as discovery

    _place(QWEN3_8B, tmp_path)
    _place(QWEN3_8B_EAGLE3, tmp_path / "draft")
    locked = _place(QWEN3_8B_EAGLE3, tmp_path / "locked")
    real_stat = os.stat

    def stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(discovery.os, "stat", stat)
    pair = load_pair(tmp_path)
    assert pair.layout == "target at the root + draft in draft/"
    skipped = [f.message for f in pair.findings if f.id == "layout-skipped"]
    assert skipped == [f"skipped {locked}: permission denied"]
