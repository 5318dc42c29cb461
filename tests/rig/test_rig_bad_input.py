"""The rig refuses pairs it cannot build with one clear line, before allocating anything."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import torch

from eaglegraph.errors import BadInput
from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.options import PlanChoices, resolve_plan_options
from eaglegraph.rig.step import Rig
from tests.helpers import tiny_eagle1_config, tiny_eagle3_config, tiny_target_config, write_config

CONFIGS = Path(__file__).parents[1] / "fixtures" / "configs"


def _config(**kw: object) -> RigConfig:
    return RigConfig(
        resolve_plan_options(PlanChoices(max_num_seqs=4)),
        torch.device("cpu"),
        max_model_len=256,
        **kw,
    )  # type: ignore[arg-type]


def _no_allocation(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("the rig allocated before refusing the pair")

    monkeypatch.setattr("eaglegraph.rig.step.build_models", boom)
    monkeypatch.setattr("eaglegraph.rig.step.allocate_kv_caches", boom)


def test_unsupported_draft_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_allocation(monkeypatch)
    shutil.copytree(materialize("tiny-llama-eagle3") / "target", tmp_path / "target")
    (tmp_path / "draft").mkdir()
    # a DSpark block drafter: recognised (as "other"), not built by the rig
    cfg = json.loads((CONFIGS / "specforge-qwen3-8b-dflash-draft-not-eagle.json").read_text())
    cfg["architectures"] = ["DSparkDraftModel"]
    (tmp_path / "draft" / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(BadInput, match="other is recognised but not supported"):
        Rig(load_pair(tmp_path), _config(random_weights=True))


def test_widths_that_do_not_fit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_allocation(monkeypatch)
    write_config(tmp_path / "target", tiny_target_config())
    write_config(tmp_path / "draft", tiny_eagle3_config(target_hidden_size=96))
    with pytest.raises(BadInput, match="cannot be built: hidden-mismatch"):
        Rig(load_pair(tmp_path), _config(random_weights=True))


def test_config_only_needs_random_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_allocation(monkeypatch)
    with pytest.raises(BadInput, match="--random-weights"):
        Rig(load_pair(materialize("llama3.1-8b-eagle1")), _config())


def test_max_model_len_beyond_the_target(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_allocation(monkeypatch)
    config = RigConfig(
        resolve_plan_options(PlanChoices(max_num_seqs=4)), torch.device("cpu"), max_model_len=4096
    )
    with pytest.raises(BadInput, match="exceeds the target's max_position_embeddings"):
        Rig(load_pair(materialize("tiny-llama-eagle1")), config)


def _mla_target_eagle_draft(root: Path) -> Path:
    from eaglegraph.pair.presets import PRESETS

    write_config(root / "target", dict(PRESETS["tiny-deepseek-mtp"].target))
    write_config(root / "draft", tiny_eagle1_config())
    return root


def _widths_that_do_not_fit(root: Path) -> Path:
    write_config(root / "target", tiny_target_config())
    write_config(root / "draft", tiny_eagle3_config(target_hidden_size=96))
    return root


UNBUILDABLE = {
    "mla target, eagle draft": (_mla_target_eagle_draft, True, "MLA target with a eagle1"),
    "config only": (lambda _: materialize("llama3.1-8b-eagle1"), False, "--random-weights"),
    "widths": (_widths_that_do_not_fit, True, "hidden-mismatch"),
}


@pytest.mark.parametrize("case", sorted(UNBUILDABLE))
def test_preflight_and_builder_refuse_alike(case: str, tmp_path: Path) -> None:
    """One home for "can this pair be built": the preflight (before any worker) and the model
    builder refuse the same pair with the same line."""
    from eaglegraph.probes.preflight import preflight
    from eaglegraph.rig.model_setup import build_models

    make, random_weights, names = UNBUILDABLE[case]
    pair = load_pair(make(tmp_path))
    config = _config(random_weights=random_weights)
    with pytest.raises(BadInput, match=re.escape(names)) as before:
        preflight(pair, config, memory=False)
    with pytest.raises(BadInput) as built:
        build_models(pair, torch.float32, torch.device("cpu"), random_weights=random_weights)
    assert str(before.value) == str(built.value)
