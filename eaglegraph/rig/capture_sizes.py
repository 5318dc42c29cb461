"""Capture-size lists as vLLM and SGLang compute them.

vLLM builds one token-count list in `VllmConfig._set_cudagraph_sizes`: 1, 2, 4, multiples of 8
below 256 and of 16 from 256, up to a maximum of min(max_num_seqs·(K+1)·2, ceiling), capped by
max_num_batched_tokens (which is added when it fits, from 0.21). Newer releases add the
uniform-decode sizes n·(K+1) for a request-count grid, kept under the ceiling. Old releases then
round every size up to a multiple of K+1 for all managers (0.20: only when decode graphs are
FULL); newer ones round per FULL uniform descriptor only (see `descriptors.build_descriptors`).
Which release does what is profile data (known/).
SGLang captures batch sizes (requests), not tokens, capped at max_running_requests and a
GPU-memory-dependent maximum; its prefill graphs use a token ladder.
"""

from __future__ import annotations

from eaglegraph.errors import BadInput


def _token_grid(limit: int, small: tuple[int, ...] = (1, 2, 4)) -> list[int]:
    """1, 2, 4, then multiples of 8 below 256, then multiples of 16 from 256, all <= limit."""
    sizes = [s for s in small if s <= limit]
    sizes += list(range(8, min(limit + 1, 256), 8))
    sizes += list(range(256, limit + 1, 16))
    return sizes


def request_counts(max_reqs: int, ceiling: int) -> list[int]:
    """The request-count grid whose n·(K+1) multiples become decode capture sizes."""
    limit = min(max_reqs, ceiling)
    return sorted({*_token_grid(limit), limit})


def vllm_default_sizes(
    max_num_seqs: int,
    num_spec_tokens: int,
    max_num_batched_tokens: int,
    max_capture_size: int | None = None,
    *,
    ceiling: int = 512,
    decode_sizes: bool = False,
    add_max_num_batched_tokens: bool = True,
) -> list[int]:
    """The default list; `decode_sizes` adds n·(K+1) sizes that fit under the maximum,
    `add_max_num_batched_tokens` the token budget itself when it is under the maximum."""
    query_len = 1 + num_spec_tokens
    extra: list[int] = []
    if max_capture_size is None:
        max_capture_size = min(max_num_seqs * query_len * 2, ceiling)
        if decode_sizes and query_len > 1:
            extra = [
                n * query_len
                for n in request_counts(max_num_seqs, ceiling)
                if n * query_len <= max_capture_size
            ]
    max_capture_size = min(max_capture_size, max_num_batched_tokens)
    if max_capture_size < 1:
        raise BadInput("the largest capture size must be at least 1")
    sizes = _token_grid(max_capture_size)
    if add_max_num_batched_tokens and max_num_batched_tokens <= max_capture_size:
        sizes.append(max_num_batched_tokens)
    sizes += [s for s in extra if s <= max_num_batched_tokens]
    return sorted(set(sizes))


def user_sizes(sizes: list[int], max_num_batched_tokens: int) -> list[int]:
    bad = [s for s in sizes if s <= 0]
    if bad:
        raise BadInput(f"capture sizes must be positive, found {bad}")
    kept = sorted({s for s in sizes if s <= max_num_batched_tokens})
    if not kept:
        raise BadInput(f"no capture size is <= max_num_batched_tokens ({max_num_batched_tokens})")
    return kept


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def round_for_spec_decode(sizes: list[int], decode_query_len: int) -> list[int]:
    """`adjust_cudagraph_sizes_for_spec_decode`: multiples of K+1, none above the old max."""
    if decode_query_len <= 1 or not sizes:
        return list(sizes)
    limit = max(sizes)
    rounded = sorted(
        {round_up(s, decode_query_len) for s in sizes if round_up(s, decode_query_len) <= limit}
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


def sglang_prefill_tokens(max_tokens: int) -> list[int]:
    """SGLang's prefill (breakable) graph token ladder up to `max_tokens`."""
    ladder = list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32))
    ladder += list(range(576, 1025, 64)) + list(range(1280, 4097, 256))
    ladder += list(range(4608, max_tokens + 1, 512))
    return [s for s in ladder if s <= max_tokens]
