"""write_kv against an index_put reference: padded (-1) slots skipped, strided k/v."""

from __future__ import annotations

import pytest
import torch

from eaglegraph.kernels.kv_cache import PAD_SLOT_ID, write_kv

from .reference import randn

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def check_write_kv(device: torch.device, dtype: torch.dtype, gen: torch.Generator) -> None:
    num_blocks, bs, nkv, hd, T = 10, 4, 2, 16, 9
    num_tokens = 7  # rows 7, 8 are beyond num_tokens: never written even with valid slots
    k_cache = randn((num_blocks, bs, nkv, hd), gen, dtype, device)
    v_cache = randn((num_blocks, bs, nkv, hd), gen, dtype, device)
    kv = randn((T, 2 * nkv * hd + 8), gen, dtype, device)  # fused projection, strided views
    k = kv[:, : nkv * hd].view(T, nkv, hd)
    v = kv[:, nkv * hd : 2 * nkv * hd].view(T, nkv, hd)
    slots = torch.randperm(num_blocks * bs, generator=gen)[:T]
    slots[2] = PAD_SLOT_ID
    slots[5] = PAD_SLOT_ID
    slot_mapping = slots.to(device)
    expected_k, expected_v = k_cache.clone(), v_cache.clone()
    for t in range(num_tokens):
        s = int(slots[t])
        if s >= 0:
            expected_k[s // bs, s % bs] = k[t]
            expected_v[s // bs, s % bs] = v[t]
    write_kv(k, v, k_cache, v_cache, slot_mapping, num_tokens)
    assert torch.equal(k_cache, expected_k)
    assert torch.equal(v_cache, expected_v)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_write_kv(device: torch.device, dtype: torch.dtype, gen: torch.Generator) -> None:
    check_write_kv(device, dtype, gen)


def test_write_kv_converts_to_cache_dtype(device: torch.device, gen: torch.Generator) -> None:
    k_cache = torch.zeros((4, 2, 1, 16), dtype=torch.float32, device=device)
    v_cache = torch.zeros_like(k_cache)
    k = randn((3, 1, 16), gen, torch.float16, device)
    v = randn((3, 1, 16), gen, torch.float16, device)
    write_kv(k, v, k_cache, v_cache, torch.tensor([7, 0, 3], device=device), 3)
    assert torch.equal(k_cache[3, 1], k[0].float())
    assert torch.equal(v_cache[1, 1], v[2].float())


def test_write_kv_zero_tokens_is_noop(device: torch.device, gen: torch.Generator) -> None:
    k_cache = randn((2, 2, 1, 16), gen, torch.float32, device)
    before = k_cache.clone()
    k = randn((1, 1, 16), gen, torch.float32, device)
    write_kv(k, k, k_cache, k_cache, torch.tensor([0], device=device), 0)
    assert torch.equal(k_cache, before)
