"""Random weights from configs alone: deterministic per seed, finite through a deep bf16 stack."""

from __future__ import annotations

import torch

from eaglegraph.models import DraftArch, DraftStep, Eagle3Draft, random_draft, random_target
from tests.models.cpu_only import cpu_only
from tests.models.models_support import DenseAttention, geometry_of

pytestmark = cpu_only

DEEP = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 24,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 200,
    "max_position_embeddings": 512,
    "rope_theta": 1e6,
}
DRAFT = {
    **DEEP,
    "architectures": ["LlamaForCausalLMEagle3"],
    "model_type": "llama",
    "num_hidden_layers": 1,
}
ARCH = DraftArch(kind="eagle3", target_hidden_size=64, num_aux=3, draft_vocab_size=80)


def _state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {**dict(module.named_parameters()), **dict(module.named_buffers())}


def test_same_seed_same_weights_other_seed_differs() -> None:
    small = {**DEEP, "num_hidden_layers": 2}
    g = geometry_of(small)
    a, b, c = (random_target(g, "bfloat16", "cpu", seed) for seed in (3, 3, 4))
    sa, sb, sc = _state(a), _state(b), _state(c)
    assert sa.keys() == sb.keys()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not torch.equal(sa["embed_tokens.weight"], sc["embed_tokens.weight"])
    da = random_draft(geometry_of(DRAFT), ARCH, a, "bfloat16", "cpu", seed=9)
    db = random_draft(geometry_of(DRAFT), ARCH, b, "bfloat16", "cpu", seed=9)
    assert all(torch.equal(v, _state(db)[k]) for k, v in _state(da).items())


def test_norms_one_biases_zero_matrices_scaled() -> None:
    model = random_target(geometry_of({**DEEP, "num_hidden_layers": 1}), "float32", "cpu", 0)
    layer = model.layers[0]
    assert layer.self_attn.qkv_bias is not None  # qwen2 always has q/k/v biases
    assert torch.equal(layer.self_attn.qkv_bias, torch.zeros_like(layer.self_attn.qkv_bias))
    assert torch.equal(layer.input_layernorm.weight, torch.ones(64))
    std = layer.mlp.gate_up_weight.std().item()
    assert 0.015 < std < 0.025


def test_deep_bf16_stack_stays_finite_and_d2t_is_valid() -> None:
    target = random_target(geometry_of(DEEP), "bfloat16", "cpu", seed=1)
    draft = random_draft(geometry_of(DRAFT), ARCH, target, "bfloat16", "cpu", seed=2)
    assert isinstance(draft, Eagle3Draft) and draft.layer_offset == 24
    t = 12
    ids = torch.randint(0, 200, (t,), generator=torch.Generator().manual_seed(0))
    pos = torch.arange(t, dtype=torch.int64)
    with torch.no_grad():
        hidden, aux = target(ids, pos, DenseAttention(), aux_layer_ids=(2, 12, 21))
        logits = target.compute_logits(hidden)
        normed, prenorm = draft(DraftStep(ids, pos, aux, DenseAttention()))
        draft_logits = draft.compute_logits(normed)
    assert aux is not None and aux.dtype == torch.bfloat16
    for tensor in (hidden, aux, logits, normed, prenorm, draft_logits):
        assert torch.isfinite(tensor).all()
    assert logits.std() > 0.1 and draft_logits.shape == (t, 80)
    target_ids = draft.draft_to_target(torch.arange(80))
    assert (target_ids[1:] > target_ids[:-1]).all()
    assert int(target_ids.min()) >= 0 and int(target_ids.max()) < 200
    assert (draft.d2t[1:] >= draft.d2t[:-1]).all()
