"""EAGLE-1 and EAGLE-3 drafts: every naming variant loads to the same outputs, forwards match
an independent reference (fp32, max abs diff <= 1e-5), and bad files give one-line BadInput."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from eaglegraph.errors import BadInput
from eaglegraph.models import (
    DraftArch,
    DraftStep,
    Eagle1Draft,
    Eagle3Draft,
    TargetModel,
    load_draft,
)
from tests.models.cpu_only import cpu_only
from tests.models.draft_support import (
    VD,
    H,
    V,
    draft_config,
    eagle1_tensors,
    eagle3_tensors,
    make_target,
    ref_eagle1,
    ref_eagle3,
    rename,
)
from tests.models.models_support import DenseAttention, geometry_of, write_checkpoint

pytestmark = cpu_only

TOL = 1e-5
T = 9


@pytest.fixture(scope="module")
def target() -> TargetModel:
    return make_target()


def _inputs(width: int, seed: int = 11) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, V, (T,), generator=gen)
    positions = torch.arange(T, dtype=torch.int64) + 3
    hidden = torch.randn(T, width, generator=gen)
    return ids, positions, hidden


def _load(
    folder: Path, config: dict[str, Any], arch: DraftArch, target: TargetModel, offset: int = 4
) -> Any:
    return load_draft(folder, geometry_of(config), arch, target, "float32", "cpu", offset)


# ---------------------------------------------------------------- EAGLE-1


E1 = DraftArch(kind="eagle1", target_hidden_size=H, num_aux=0)


@pytest.mark.parametrize("layers", [1, 2])
def test_eagle1_matches_reference(tmp_path: Path, target: TargetModel, layers: int) -> None:
    config = draft_config("eagle1", layers=layers, bias=True)
    g = geometry_of(config)
    sd = eagle1_tensors(g, fc_bias=True)
    draft = _load(write_checkpoint(tmp_path, config, sd), config, E1, target)
    assert isinstance(draft, Eagle1Draft) and draft.extra_tensors == ()
    ids, pos, hidden = _inputs(H)
    attn = DenseAttention()
    with torch.no_grad():
        for_logits, for_next = draft(DraftStep(ids, pos, hidden, attn))
        logits = draft.compute_logits(for_logits)
    assert for_logits is for_next
    assert attn.calls == [4 + i for i in range(layers)]
    want = ref_eagle1(sd, g, target.embed_tokens.weight, ids, pos, hidden)
    torch.testing.assert_close(for_logits, want, atol=TOL, rtol=0)
    torch.testing.assert_close(logits, target.compute_logits(want), atol=TOL, rtol=0)
    assert torch.equal(draft.draft_to_target(ids), ids)


def test_eagle1_naming_variants_load_identically(tmp_path: Path, target: TargetModel) -> None:
    config = draft_config("eagle1")
    g = geometry_of(config)
    base = eagle1_tensors(g, fc_bias=False)
    with_embed = {**base, "embed_tokens.weight": target.embed_tokens.weight.clone()}
    variants = {
        "bare": base,
        "model-prefix": rename(base, model_prefix=True),
        "embed-copy": with_embed,
        "embed-copy-prefixed": rename(with_embed, model_prefix=True),
        "sharded": base,
    }
    ids, pos, hidden = _inputs(H)
    outputs = {}
    for name, tensors in variants.items():
        folder = write_checkpoint(
            tmp_path / name, config, tensors, shards=3 if name == "sharded" else 1
        )
        draft = _load(folder, config, E1, target)
        assert draft.fc_bias is None and draft.extra_tensors == ()
        with torch.no_grad():
            outputs[name] = draft(DraftStep(ids, pos, hidden, DenseAttention()))[0]
    for name, out in outputs.items():
        assert torch.equal(out, outputs["bare"]), name
    want = ref_eagle1(base, g, target.embed_tokens.weight, ids, pos, hidden)
    torch.testing.assert_close(outputs["bare"], want, atol=TOL, rtol=0)


def test_eagle1_shape_error_names_tensor(tmp_path: Path, target: TargetModel) -> None:
    config = draft_config("eagle1")
    sd = eagle1_tensors(geometry_of(config), fc_bias=False)
    sd["fc.weight"] = torch.randn(H, 3 * H)
    write_checkpoint(tmp_path, config, sd)
    with pytest.raises(BadInput, match=r"'fc\.weight' has shape \[64, 192\], expected \[64, 128\]"):
        _load(tmp_path, config, E1, target)


# ---------------------------------------------------------------- EAGLE-3


E3 = DraftArch(kind="eagle3", target_hidden_size=H, num_aux=3, draft_vocab_size=VD)


def _run_eagle3(
    draft: Eagle3Draft, ids: torch.Tensor, pos: torch.Tensor, aux: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Prefill on aux states, then one decode step on the draft's own hidden_out."""
    with torch.no_grad():
        normed, prenorm = draft(DraftStep(ids, pos, aux, DenseAttention()))
        normed2, prenorm2 = draft(DraftStep(ids, pos + 1, prenorm, DenseAttention()))
        logits = draft.compute_logits(normed)
    return {
        "normed": normed,
        "prenorm": prenorm,
        "normed2": normed2,
        "prenorm2": prenorm2,
        "logits": logits,
    }


def _check_eagle3(
    draft: Eagle3Draft,
    sd: dict[str, torch.Tensor],
    config: dict[str, Any],
    arch: DraftArch,
    embed: torch.Tensor,
) -> dict[str, torch.Tensor]:
    g = geometry_of(config)
    ids, pos, aux = _inputs(arch.num_aux * arch.target_hidden_size)
    got = _run_eagle3(draft, ids, pos, aux)
    normed, prenorm = ref_eagle3(sd, g, arch, embed, ids, pos, aux)
    normed2, prenorm2 = ref_eagle3(sd, g, arch, embed, ids, pos + 1, prenorm)
    lm_head = sd.get("lm_head.weight", draft.target.lm_head_weight)
    want = {
        "normed": normed,
        "prenorm": prenorm,
        "normed2": normed2,
        "prenorm2": prenorm2,
        "logits": normed @ lm_head.T,
    }
    for key, value in want.items():
        torch.testing.assert_close(got[key], value, atol=TOL, rtol=0, msg=key)
    return got


def test_eagle3_matches_reference_and_maps_vocab(tmp_path: Path, target: TargetModel) -> None:
    config = draft_config("eagle3", draft_vocab_size=VD)
    sd = eagle3_tensors(geometry_of(config), E3, target)
    draft = _load(write_checkpoint(tmp_path, config, rename(sd, midlayer=True)), config, E3, target)
    assert isinstance(draft, Eagle3Draft) and draft.extra_tensors == ()
    assert draft.embed_tokens is None and draft.lm_head is not None
    got = _check_eagle3(draft, sd, config, E3, target.embed_tokens.weight)
    assert got["logits"].shape == (T, VD) and got["logits"].dtype == torch.float32
    draft_ids = torch.arange(VD)
    target_ids = draft.draft_to_target(draft_ids)
    assert torch.equal(target_ids, draft_ids + sd["d2t"])
    assert torch.equal(sd["t2d"].nonzero().flatten(), target_ids)


def test_eagle3_naming_variants_load_identically(tmp_path: Path, target: TargetModel) -> None:
    config = draft_config("eagle3", draft_vocab_size=VD)
    base = eagle3_tensors(geometry_of(config), E3, target)
    embed = {**base, "embed_tokens.weight": target.embed_tokens.weight.clone()}
    no_t2d = {k: v for k, v in base.items() if k != "t2d"}
    variants = {
        "layers0": base,
        "midlayer": rename(base, midlayer=True),
        "nemo": rename(embed, model_prefix=True),
        "nemo-midlayer": rename(base, model_prefix=True, midlayer=True),
        "specforge-hf-embed": rename(embed, midlayer=True),
        "no-t2d": no_t2d,
        "sharded": base,
    }
    ids, pos, aux = _inputs(3 * H)
    outputs = {}
    for name, tensors in variants.items():
        folder = write_checkpoint(
            tmp_path / name, config, tensors, shards=2 if name == "sharded" else 1
        )
        draft = _load(folder, config, E3, target)
        assert draft.extra_tensors == (), name
        assert (draft.embed_tokens is not None) == ("embed_tokens.weight" in str(list(tensors)))
        outputs[name] = _run_eagle3(draft, ids, pos, aux)
    for name, out in outputs.items():
        for key, value in out.items():
            assert torch.equal(value, outputs["layers0"][key]), f"{name}: {key}"


def test_eagle3_full_vocab_shares_target_head_without_d2t(
    tmp_path: Path, target: TargetModel
) -> None:
    arch = DraftArch(kind="eagle3", target_hidden_size=H, num_aux=3, draft_vocab_size=None)
    config = draft_config("eagle3")
    sd = eagle3_tensors(geometry_of(config), arch, target, own_lm_head=False)
    assert "d2t" not in sd and "lm_head.weight" not in sd
    draft = _load(write_checkpoint(tmp_path, config, sd), config, arch, target)
    assert draft.lm_head is None and draft.draft_vocab_size == V
    got = _check_eagle3(draft, sd, config, arch, target.embed_tokens.weight)
    torch.testing.assert_close(got["logits"], target.compute_logits(got["normed"]), atol=0, rtol=0)
    ids = torch.arange(V)
    assert torch.equal(draft.draft_to_target(ids), ids)


def test_eagle31_fc_norm_bias_norm_before_residual_two_layers(
    tmp_path: Path, target: TargetModel
) -> None:
    arch = DraftArch(
        kind="eagle3",
        target_hidden_size=H,
        num_aux=3,
        draft_vocab_size=VD,
        fc_bias=True,
        fc_norm=True,
        norm_before_residual=True,
    )
    config = draft_config("eagle3", layers=2, draft_vocab_size=VD, fc_norm=True)
    sd = eagle3_tensors(geometry_of(config), arch, target)
    draft = _load(
        write_checkpoint(tmp_path, config, rename(sd, model_prefix=True)),
        config,
        arch,
        target,
        offset=10,
    )
    assert draft.fc_bias is not None and draft.fc_norm is not None and len(draft.layers) == 1
    _check_eagle3(draft, sd, config, arch, target.embed_tokens.weight)
    attn = DenseAttention()
    ids, pos, aux = _inputs(3 * H)
    with torch.no_grad():
        draft(DraftStep(ids, pos, aux, attn))
    assert attn.calls == [10, 11]


def test_speculators_narrow_draft_with_own_embedding_and_input_norm(
    tmp_path: Path, target: TargetModel
) -> None:
    """Draft width 32 < target width 64: fc maps 2 aux taps of 64 to 32; own embed_tokens."""
    arch = DraftArch(
        kind="eagle3", target_hidden_size=H, num_aux=2, draft_vocab_size=VD, norm_before_fc=True
    )
    config = draft_config("eagle3", hidden=32, draft_vocab_size=VD)
    g = geometry_of(config)
    sd = eagle3_tensors(g, arch, target)
    sd["embed_tokens.weight"] = 0.08 * torch.randn(
        V, 32, generator=torch.Generator().manual_seed(3)
    )
    draft = _load(write_checkpoint(tmp_path, config, sd), config, arch, target)
    assert draft.embed_tokens is not None and draft.input_norm is not None
    got = _check_eagle3(draft, sd, config, arch, sd["embed_tokens.weight"])
    assert got["prenorm"].shape == (T, 32)


def test_eagle3_without_embedding_needs_matching_width(tmp_path: Path, target: TargetModel) -> None:
    arch = DraftArch(kind="eagle3", target_hidden_size=H, num_aux=3, draft_vocab_size=VD)
    config = draft_config("eagle3", hidden=32, draft_vocab_size=VD)
    write_checkpoint(tmp_path, config, eagle3_tensors(geometry_of(config), arch, target))
    with pytest.raises(BadInput, match="no embed_tokens"):
        _load(tmp_path, config, arch, target)


@pytest.mark.parametrize(
    ("mutate", "pattern"),
    [
        (
            lambda sd: sd.update({"fc.weight": torch.randn(H, 2 * H)}),
            r"'fc\.weight' has shape \[64, 128\], expected \[64, 192\]",
        ),
        (
            lambda sd: sd.update({"lm_head.weight": torch.randn(V, H)}),
            r"'lm_head\.weight' has shape \[160, 64\], expected \[96, 64\]",
        ),
        (
            lambda sd: sd.update({"layers.0.self_attn.q_proj.weight": torch.randn(H, H)}),
            r"'layers\.0\.self_attn\.q_proj\.weight' has shape \[64, 64\], expected \[64, 128\]",
        ),
        (
            lambda sd: sd.update({"t2d": torch.zeros(V + 1, dtype=torch.bool)}),
            r"'t2d' has shape \[161\], expected \[160\]",
        ),
        (lambda sd: sd.update({"d2t": torch.full((VD,), V)}), r"d2t maps draft ids to"),
        (
            lambda sd: sd.update({"fc.weight": torch.zeros(H, 3 * H, dtype=torch.int8)}),
            r"'fc\.weight' has dtype I8",
        ),
        (
            lambda sd: (sd.pop("norm.weight"), sd.pop("d2t")),
            r"missing 2 required tensor\(s\): norm\.weight, d2t",
        ),
    ],
    ids=["fc", "lm_head", "q_proj", "t2d", "d2t-range", "dtype", "missing"],
)
def test_eagle3_bad_files_are_bad_input(
    tmp_path: Path, target: TargetModel, mutate: Any, pattern: str
) -> None:
    config = draft_config("eagle3", draft_vocab_size=VD)
    sd = eagle3_tensors(geometry_of(config), E3, target)
    mutate(sd)
    write_checkpoint(tmp_path, config, sd)
    with pytest.raises(BadInput, match=pattern):
        _load(tmp_path, config, E3, target)


def test_extra_tensors_are_ignored_and_reported(tmp_path: Path, target: TargetModel) -> None:
    config = draft_config("eagle3", draft_vocab_size=VD)
    sd = eagle3_tensors(geometry_of(config), E3, target)
    sd["some_head.proj.weight"] = torch.randn(4, 4)
    sd["layers.0.self_attn.rotary_emb.inv_freq"] = torch.randn(8)
    draft = _load(write_checkpoint(tmp_path, config, sd), config, E3, target)
    assert draft.extra_tensors == (
        "layers.0.self_attn.rotary_emb.inv_freq",
        "some_head.proj.weight",
    )
