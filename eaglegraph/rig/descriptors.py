"""Batch descriptors and dispatch, as vLLM MRV2's `CudaGraphManager` builds and picks them.

A descriptor is the key of one captured graph. PIECEWISE descriptors never pad the request
count (num_reqs None); FULL ones do. Dispatch pads a batch up to the next capture size and
returns the first compatible descriptor there, decode descriptors first.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.rig.modes import Mode


@dataclass(frozen=True)
class BatchDescriptor:
    mode: Mode
    num_tokens: int
    num_reqs: int | None
    uniform_token_count: int | None = None

    def label(self) -> str:
        reqs = "—" if self.num_reqs is None else str(self.num_reqs)
        uniform = f", uniform={self.uniform_token_count}" if self.uniform_token_count else ""
        return f"{self.mode.name}(tokens={self.num_tokens}, reqs={reqs}{uniform})"

    def to_json(self) -> dict[str, object]:
        return {
            "mode": self.mode.name,
            "num_tokens": self.num_tokens,
            "num_reqs": self.num_reqs,
            "uniform_token_count": self.uniform_token_count,
        }


def is_compatible(
    desc: BatchDescriptor, num_reqs: int, num_tokens: int, uniform_token_count: int | None
) -> bool:
    return (
        (desc.uniform_token_count is None or desc.uniform_token_count == uniform_token_count)
        and (desc.num_reqs is None or desc.num_reqs >= num_reqs)
        and desc.num_tokens >= num_tokens
    )


def uniform_token_count(num_reqs: int, num_tokens: int, max_query_len: int) -> int | None:
    """max_query_len iff every request has exactly that many tokens."""
    return max_query_len if num_reqs and num_tokens == max_query_len * num_reqs else None


def build_descriptors(
    mode: Mode, capture_sizes: list[int], max_num_reqs: int, decode_query_len: int
) -> dict[int, list[BatchDescriptor]]:
    """`_init_candidates`: per capture size, decode descriptor first, then mixed."""
    out: dict[int, list[BatchDescriptor]] = {}
    if not mode or not capture_sizes:
        return out
    decode, mixed, separate = mode.decode_mode(), mode.mixed_mode(), mode.separate_routine()
    max_decode_tokens = max_num_reqs * decode_query_len
    for n in sorted(capture_sizes):
        descs = []
        if separate and decode and decode_query_len <= n <= max_decode_tokens:
            descs.append(BatchDescriptor(decode, n, n // decode_query_len, decode_query_len))
        if mixed:
            reqs = min(n, max_num_reqs) if mixed is Mode.FULL else None
            descs.append(BatchDescriptor(mixed, n, reqs))
        out[n] = descs
    return out


class Dispatcher:
    """Pad-to-next-size lookup over the descriptors of one manager."""

    def __init__(self, by_size: dict[int, list[BatchDescriptor]]) -> None:
        self.by_size = by_size
        self.sizes = sorted(by_size)

    @property
    def descriptors(self) -> list[BatchDescriptor]:
        return [d for n in self.sizes for d in self.by_size[n]]

    def dispatch(self, num_reqs: int, num_tokens: int, uniform: int | None) -> BatchDescriptor:
        for n in self.sizes:
            if n < num_tokens:
                continue
            for desc in self.by_size[n]:
                if is_compatible(desc, num_reqs, num_tokens, uniform):
                    return desc
            break  # vLLM looks at the candidates of the next size only
        return BatchDescriptor(Mode.NONE, num_tokens, num_reqs)

    def capture_order(self) -> list[BatchDescriptor]:
        """PIECEWISE-like modes first, then FULL; largest num_tokens first within each."""
        descs = self.descriptors
        segmented = [d for d in descs if d.mode.is_segmented()]
        full = [d for d in descs if d.mode is Mode.FULL]
        key = lambda d: (-d.num_tokens, -(d.num_reqs or 0))  # noqa: E731
        return sorted(segmented, key=key) + sorted(full, key=key)
