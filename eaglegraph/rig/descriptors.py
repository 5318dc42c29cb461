"""Batch descriptors and dispatch, as vLLM MRV2's `CudaGraphManager` builds and picks them.

A descriptor is the key of one captured graph. PIECEWISE descriptors never pad the request
count (num_reqs None); FULL ones do. Dispatch pads a batch up to the next capture size and
returns the first compatible descriptor there, decode descriptors first.

The padding rule — what (num_reqs, num_tokens) a batch runs at once a descriptor is picked —
is `BatchDescriptor.pad`, and nothing else writes it out: the rig's step, its speculators,
the probe's invariants and the reports all ask it.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.rig.capture_sizes import round_up
from eaglegraph.rig.modes import Mode


@dataclass(frozen=True)
class BatchDescriptor:
    mode: Mode
    num_tokens: int
    num_reqs: int | None
    uniform_token_count: int | None = None

    def pad(self, num_reqs: int, num_tokens: int) -> PaddedBatch:
        """The shape a batch of `num_reqs`/`num_tokens` runs at under this descriptor.

        NONE (eager) runs the batch as it is; every captured mode runs the descriptor's token
        count; only FULL graphs pad the request count, since only they bake per-request
        metadata into the graph (segmented modes run attention eagerly on the live batch)."""
        reqs = self.num_reqs if self.mode is Mode.FULL and self.num_reqs else num_reqs
        tokens = self.num_tokens if self.mode is not Mode.NONE else num_tokens
        return PaddedBatch(self, reqs, tokens, num_reqs, num_tokens)

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


@dataclass(frozen=True)
class PaddedBatch:
    """A dispatched batch: its descriptor, the padded shape it runs at, and its real size."""

    desc: BatchDescriptor
    num_reqs: int
    num_tokens: int
    real_reqs: int
    real_tokens: int

    @property
    def mode(self) -> Mode:
        return self.desc.mode

    @property
    def full(self) -> bool:
        return self.desc.mode is Mode.FULL


def graph_max_query_len(desc: BatchDescriptor, max_query_len: int) -> int:
    """A FULL graph bakes max_query_len into its launch grid: uniform descriptors know it
    exactly, mixed ones must cover any batch they may be padded to (num_tokens)."""
    if desc.mode is not Mode.FULL:
        return max_query_len
    return desc.uniform_token_count or desc.num_tokens


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
    mode: Mode,
    capture_sizes: list[int],
    max_num_reqs: int,
    decode_query_len: int,
    *,
    round_uniform: bool = False,
    max_capture_size: int | None = None,
    segmented: Mode = Mode.PIECEWISE,
    pad_segmented_reqs: bool = False,
) -> dict[int, list[BatchDescriptor]]:
    """`_init_candidates`: per token count, the uniform-decode descriptor first, then mixed.

    Releases that round the whole list to multiples of K+1 keep a decode descriptor at n only
    when K+1 <= n <= max_num_reqs·(K+1). Later ones (`round_uniform`) round each size up to a
    multiple of K+1 for the FULL decode descriptor alone, drop it past max_num_reqs·(K+1), the
    largest capture size or max_num_reqs requests, and keep the mixed descriptors at the raw
    sizes. `segmented` names the runtime mode of mixed PIECEWISE descriptors (BREAKABLE under
    breakable graphs); `pad_segmented_reqs` makes them pad requests like FULL ones.
    """
    out: dict[int, list[BatchDescriptor]] = {}
    if not mode or not capture_sizes:
        return out
    decode, mixed, separate = mode.decode_mode(), mode.mixed_mode(), mode.separate_routine()
    max_decode_tokens = max_num_reqs * decode_query_len
    limit = max(capture_sizes) if max_capture_size is None else max_capture_size
    for n in sorted(capture_sizes):
        if separate and decode:
            if round_uniform:
                t = round_up(n, decode_query_len)
                reqs = t // decode_query_len
                if t <= max_decode_tokens and t <= limit and reqs <= max_num_reqs:
                    desc = BatchDescriptor(decode, t, reqs, decode_query_len)
                    if desc not in out.get(t, []):
                        out.setdefault(t, []).insert(0, desc)
            elif decode_query_len <= n <= max_decode_tokens:
                desc = BatchDescriptor(decode, n, n // decode_query_len, decode_query_len)
                out.setdefault(n, []).append(desc)
        if mixed:
            runtime = mixed if mixed is Mode.FULL else segmented
            pad = mixed is Mode.FULL or pad_segmented_reqs
            out.setdefault(n, []).append(
                BatchDescriptor(runtime, n, min(n, max_num_reqs) if pad else None)
            )
    return out


def describe_padding(descs: list[BatchDescriptor], framework: str) -> str:
    """`BatchDescriptor.pad` in words, for the descriptors of one phase (plans and reports)."""
    if not descs:
        return "eager: no graphs, no padding"
    kinds = []
    uniform = [
        d.uniform_token_count for d in descs if d.mode is Mode.FULL and d.uniform_token_count
    ]
    if uniform:
        u = uniform[0]
        if framework == "sglang":
            kinds.append("FULL: bs → next captured bs; padded rows seq_len 1, req_pool_index 0")
        else:
            kinds.append(f"FULL: tokens → next size, reqs → tokens/{u} (uniform {u}/request only)")
    if any(d.mode is Mode.FULL and not d.uniform_token_count for d in descs):
        kinds.append("FULL: tokens → next size, reqs → min(size, max_num_seqs)")
    seg = sorted({d.mode.name for d in descs if d.mode.is_segmented()})
    if seg:
        kinds.append(f"{'/'.join(seg)}: tokens → next size, reqs NOT padded")
    return "; ".join(kinds)


class Dispatcher:
    """Pad-to-next-size lookup over the descriptors of one manager.

    Older releases key the candidates by the union of all descriptor sizes: a batch looks only
    at the next size that has any descriptor. Newer ones (`per_mode_ranges`) give each runtime
    mode its own ranges: a batch sees the next FULL size and the next PIECEWISE size, FULL first.
    """

    def __init__(
        self, by_size: dict[int, list[BatchDescriptor]], per_mode_ranges: bool = False
    ) -> None:
        self.by_size = by_size
        self.sizes = sorted(by_size)
        self.per_mode_ranges = per_mode_ranges

    @property
    def descriptors(self) -> list[BatchDescriptor]:
        return [d for n in self.sizes for d in self.by_size[n]]

    def candidates(self, num_tokens: int) -> list[BatchDescriptor]:
        if not self.per_mode_ranges:
            nxt = next((n for n in self.sizes if n >= num_tokens), None)
            return [] if nxt is None else list(self.by_size[nxt])
        out: list[BatchDescriptor] = []
        for full in (True, False):
            group = [d for d in self.descriptors if (d.mode is Mode.FULL) == full]
            nxt = next((d.num_tokens for d in group if d.num_tokens >= num_tokens), None)
            out += [d for d in group if d.num_tokens == nxt]
        return out

    def dispatch(self, num_reqs: int, num_tokens: int, uniform: int | None) -> BatchDescriptor:
        if num_tokens > 0:
            for desc in self.candidates(num_tokens):
                if is_compatible(desc, num_reqs, num_tokens, uniform):
                    return desc
        return BatchDescriptor(Mode.NONE, num_tokens, num_reqs)

    def pad(self, num_reqs: int, num_tokens: int, uniform: int | None) -> PaddedBatch:
        """Dispatch, then the padded shape the batch runs at (`BatchDescriptor.pad`)."""
        return self.dispatch(num_reqs, num_tokens, uniform).pad(num_reqs, num_tokens)

    def capture_order(self) -> list[BatchDescriptor]:
        """PIECEWISE-like modes first, then FULL; largest num_tokens first within each."""
        descs = self.descriptors
        segmented = [d for d in descs if d.mode.is_segmented()]
        full = [d for d in descs if d.mode is Mode.FULL]
        key = lambda d: (-d.num_tokens, -(d.num_reqs or 0))  # noqa: E731
        return sorted(segmented, key=key) + sorted(full, key=key)
