"""The rope and embedding kernels against torch references, including poisoned rows."""

from __future__ import annotations

import pytest
import torch

from eaglegraph.kernels.embedding import embedding_lookup
from eaglegraph.kernels.rope import apply_rotary
from tests.models.cpu_only import cpu_only

pytestmark = cpu_only


def _cache(max_pos: int, hd: int) -> torch.Tensor:
    inv = 1.0 / (10000.0 ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    freqs = torch.outer(torch.arange(max_pos, dtype=torch.float32), inv)
    return torch.cat([freqs.cos(), freqs.sin()], dim=-1)


def _ref_rope(x: torch.Tensor, pos: torch.Tensor, cache: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    cos, sin = cache[pos, :half][:, None, :], cache[pos, half:][:, None, :]
    x1, x2 = x[..., :half].float(), x[..., half:].float()
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(x.dtype)


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float32, 1e-6), (torch.bfloat16, 1e-2)])
def test_rope_matches_reference_on_strided_views(dtype: torch.dtype, tol: float) -> None:
    torch.manual_seed(0)
    t, nh, nkv, hd, max_pos = 7, 6, 2, 24, 64  # head counts and half-dim not powers of two
    qkv = torch.randn(t, (nh + 2 * nkv) * hd, dtype=dtype)
    q = qkv[:, : nh * hd].view(t, nh, hd)
    k = qkv[:, nh * hd : (nh + nkv) * hd].view(t, nkv, hd)
    v_before = qkv[:, (nh + nkv) * hd :].clone()
    pos = torch.randint(0, max_pos, (t,), dtype=torch.int64)
    cache = _cache(max_pos, hd)
    want_q, want_k = _ref_rope(q, pos, cache), _ref_rope(k, pos, cache)
    apply_rotary(q, k, pos, cache, t)
    torch.testing.assert_close(q, want_q, atol=tol, rtol=tol)
    torch.testing.assert_close(k, want_k, atol=tol, rtol=tol)
    assert torch.equal(qkv[:, (nh + nkv) * hd :], v_before), "v must not be touched"


def test_rope_invalid_positions_poison_rows_and_tail_is_untouched() -> None:
    torch.manual_seed(1)
    t, nh, nkv, hd, max_pos = 6, 4, 2, 16, 32
    q = torch.randn(t, nh, hd)
    k = torch.randn(t, nkv, hd)
    pos = torch.tensor([0, -1, 5, 32, 1 << 40, 3], dtype=torch.int64)
    cache = _cache(max_pos, hd)
    q0, k0 = q.clone(), k.clone()
    apply_rotary(q, k, pos, cache, num_tokens=5)  # row 5 is past num_tokens
    for row in (1, 3, 4):
        assert torch.isnan(q[row]).all() and torch.isnan(k[row]).all()
    for row in (0, 2):
        torch.testing.assert_close(
            q[row], _ref_rope(q0[row : row + 1], pos[row : row + 1], cache)[0]
        )
        torch.testing.assert_close(
            k[row], _ref_rope(k0[row : row + 1], pos[row : row + 1], cache)[0]
        )
    assert torch.equal(q[5], q0[5]) and torch.equal(k[5], k0[5])


@pytest.mark.parametrize("id_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_embedding_matches_reference_and_poisons_bad_ids(
    id_dtype: torch.dtype, dtype: torch.dtype
) -> None:
    torch.manual_seed(2)
    vocab, hidden = 50, 40
    weight = torch.randn(vocab, hidden, dtype=dtype)
    ids = torch.tensor([3, 49, -1, 50, 0, 17, 2], dtype=id_dtype)
    out = torch.randn(8, hidden, dtype=dtype)
    tail = out[6:].clone()
    embedding_lookup(weight, ids, out, num_tokens=6)
    for row, tok in enumerate(ids[:6].tolist()):
        if 0 <= tok < vocab:
            assert torch.equal(out[row], weight[tok])
        else:
            assert torch.isnan(out[row]).all()
    assert torch.equal(out[6:], tail)


def test_embedding_wide_rows_use_several_blocks() -> None:
    torch.manual_seed(3)
    weight = torch.randn(10, 5000)
    ids = torch.tensor([9, 0, 4])
    out = torch.empty(3, 5000)
    embedding_lookup(weight, ids, out, 3)
    assert torch.equal(out, weight[ids])
