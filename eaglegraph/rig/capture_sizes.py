"""Capture-size lists as vLLM and SGLang compute them.

vLLM (research vllm-mrv2.md §7, §1.2): default list up to min(max_num_seqs·(1+K)·2, 512),
capped by max_num_batched_tokens, then — for spec decode — every size rounded up to a
multiple of K+1 (the rounding the target, EAGLE-prefill and EAGLE-decode managers share).
SGLang (research sglang.md §1.2): a batch-size list, capped at max_running_requests (48 by
default for EAGLE), captured in requests, not tokens.
"""

from __future__ import annotations

from eaglegraph.errors import BadInput


def vllm_default_sizes(
    max_num_seqs: int,
    num_spec_tokens: int,
    max_num_batched_tokens: int,
    max_capture_size: int | None = None,
) -> list[int]:
    if max_capture_size is None:
        max_capture_size = min(max_num_seqs * (1 + num_spec_tokens) * 2, 512)
    max_capture_size = min(max_capture_size, max_num_batched_tokens)
    sizes = [s for s in (1, 2, 4) if s <= max_capture_size]
    sizes += list(range(8, min(max_capture_size, 255) + 1, 8))
    sizes += list(range(256, max_capture_size + 1, 16))
    if max_num_batched_tokens <= max_capture_size:
        sizes.append(max_num_batched_tokens)
    return sorted(set(sizes))


def user_sizes(sizes: list[int], max_num_batched_tokens: int) -> list[int]:
    bad = [s for s in sizes if s <= 0]
    if bad:
        raise BadInput(f"capture sizes must be positive, found {bad}")
    kept = sorted({s for s in sizes if s <= max_num_batched_tokens})
    if not kept:
        raise BadInput(f"no capture size is <= max_num_batched_tokens ({max_num_batched_tokens})")
    return kept


def round_for_spec_decode(sizes: list[int], decode_query_len: int) -> list[int]:
    """`adjust_cudagraph_sizes_for_spec_decode`: multiples of K+1, none above the old max."""
    if decode_query_len <= 1 or not sizes:
        return list(sizes)
    limit = max(sizes)
    rounded = sorted(
        {
            -(-s // decode_query_len) * decode_query_len
            for s in sizes
            if -(-s // decode_query_len) * decode_query_len <= limit
        }
    )
    if rounded:
        return rounded
    if decode_query_len <= limit:
        return [decode_query_len]
    raise BadInput(
        f"no capture size survives rounding to multiples of K+1={decode_query_len} "
        f"(largest size {limit}); raise the capture sizes or lower K"
    )


def sglang_batch_sizes(
    num_spec_tokens: int, max_bs: int = 256, max_running_requests: int = 48
) -> list[int]:
    """SGLang's speculative list (1–8, 10–32/2, 40–64/4, 72–256/8, 272–max/16), capped."""
    sizes = list(range(1, 9)) + list(range(10, 33, 2)) + list(range(40, 65, 4))
    sizes += list(range(72, 257, 8)) + list(range(272, max_bs + 1, 16))
    sizes = [s for s in sizes if s <= max_bs]
    if max_bs not in sizes:
        sizes.append(max_bs)
    capped = [s for s in sizes if s <= max_running_requests]
    if max(sizes) > max_running_requests and max_running_requests not in capped:
        capped.append(max_running_requests)
    return sorted(set(capped))
