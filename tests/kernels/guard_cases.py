"""One small scenario per guarded kernel: valid inputs, a planted violation, its expected log.

Every buffer is carved out of a larger arena (see ``memcheck.carve``), so the access recorder
can tell a read just outside a buffer from a legal one without the process crashing. Each
case plants one violation per metadata role the kernel checks (with values of both signs,
including probe-style sentinels far outside every range) and lists the exact
``(kernel, role, row, value)`` entries the guard must log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from eaglegraph.kernels.attention import (
    block_table_meta,
    build_csr_page_indices,
    csr_decode_meta,
    csr_meta,
    paged_attention,
)
from eaglegraph.kernels.block_table import (
    compute_slot_mappings,
    compute_slot_mappings_padded_rows,
    gather_block_tables,
)
from eaglegraph.kernels.eagle import prepare_eagle_inputs
from eaglegraph.kernels.gather import gather_rows
from eaglegraph.kernels.guard import Guard
from eaglegraph.kernels.kv_cache import write_kv

from .memcheck import carve
from .reference import Req, csr_from_reqs, disjoint_pages, randint, randn, scale_for

BIG = 2**30  # a probe-style sentinel: outside every index range
Buffers = dict[str, torch.Tensor]


@dataclass
class Case:
    """A guarded kernel call over fixed buffers, and what planting a violation should log."""

    name: str
    kernel: str
    buffers: Buffers
    outputs: list[str]
    launch: Callable[[Buffers, Guard | None], None]
    plant: Callable[[Buffers], None]
    expected: list[tuple[str, int, int]]  # (role, row, value)
    fallback: Callable[[Buffers], None] | None = None
    roles: list[str] = field(default_factory=list)

    def run(self, guard: Guard | None = None) -> None:
        self.launch(self.buffers, guard)

    def snapshot(self) -> dict[str, torch.Tensor]:
        return {k: v.clone() for k, v in self.buffers.items()}

    def restore(self, snap: dict[str, torch.Tensor]) -> None:
        for k, v in snap.items():
            self.buffers[k].copy_(v)


def _t(values: list[int], dtype: torch.dtype, device: torch.device, fill: int = 0) -> torch.Tensor:
    return carve(torch.tensor(values, dtype=dtype, device=device), fill)


def _kv(
    gen: torch.Generator, device: torch.device, num_blocks: int, bs: int, nkv: int, hd: int
) -> tuple[torch.Tensor, ...]:
    shape = (num_blocks, bs, nkv, hd)
    return carve(randn(shape, gen, torch.float32, device)), carve(
        randn(shape, gen, torch.float32, device)
    )


def write_kv_case(device: torch.device, gen: torch.Generator) -> Case:
    nb, bs, nkv, hd, T = 6, 4, 1, 16, 5
    k_cache, v_cache = _kv(gen, device, nb, bs, nkv, hd)
    b = {
        "k": carve(randn((T, nkv, hd), gen, torch.float32, device)),
        "v": carve(randn((T, nkv, hd), gen, torch.float32, device)),
        "k_cache": k_cache,
        "v_cache": v_cache,
        "slot_mapping": _t([3, 9, -1, 17, 22], torch.int64, device),
    }

    def launch(b: Buffers, guard: Guard | None) -> None:
        write_kv(b["k"], b["v"], b["k_cache"], b["v_cache"], b["slot_mapping"], T, guard=guard)

    def plant(b: Buffers) -> None:
        b["slot_mapping"][1] = nb * bs  # one past the last slot
        b["slot_mapping"][3] = -5  # below PAD_SLOT_ID
        b["slot_mapping"][4] = BIG

    before = b["k_cache"].clone()

    def fallback(b: Buffers) -> None:
        # Only token 0 (slot 3) is written; bad and padded slots write nothing.
        changed = (b["k_cache"] != before).flatten(1).any(1).nonzero().flatten().tolist()
        assert changed == [0]
        assert torch.equal(b["k_cache"][0, 3], b["k"][0])

    expected = [("slot_mapping", 1, nb * bs), ("slot_mapping", 3, -5), ("slot_mapping", 4, BIG)]
    return Case(
        "write_kv", "write_kv", b, ["k_cache", "v_cache"], launch, plant, expected, fallback
    )


def varlen_case(device: torch.device, gen: torch.Generator, nh: int = 2, nkv: int = 1) -> Case:
    nb, bs, hd, n_cols = 24, 4, 16, 4
    reqs = [Req(0, 3, 7, []), Req(3, 1, 9, []), Req(4, 2, 2, [])]
    for r, p in zip(reqs, disjoint_pages(nb, [n_cols] * 3, gen), strict=True):
        r.pages = p
    T = 8
    k_cache, v_cache = _kv(gen, device, nb, bs, nkv, hd)
    b = {
        "q": carve(randn((T, nh, hd), gen, torch.float32, device)),
        "k_cache": k_cache,
        "v_cache": v_cache,
        "out": carve(torch.zeros((T, nh, hd), device=device)),
        "qsl": _t([0, 3, 4, 6, 6], torch.int32, device),
        "seq_lens": _t([r.kv_len for r in reqs] + [0], torch.int32, device),
        "block_table": _t([r.pages for r in reqs] + [[0] * n_cols], torch.int32, device),
    }

    def launch(b: Buffers, guard: Guard | None) -> None:
        meta = block_table_meta(b["qsl"], b["seq_lens"], b["block_table"], 3)
        paged_attention(
            b["q"],
            b["k_cache"],
            b["v_cache"],
            b["out"],
            meta,
            max_query_len=3,
            scale=scale_for(hd),
            guard=guard,
        )

    def plant(b: Buffers) -> None:
        b["block_table"][0, 1] = nb  # page read by request 0
        b["seq_lens"][1] = n_cols * bs + 1  # longer than the block table row
        b["qsl"][3] = -BIG  # end of request 2 before its start

    def fallback(b: Buffers) -> None:
        out = b["out"]
        assert torch.all(out[3:] == 0)  # requests 1 and 2 skipped: rows untouched
        assert torch.isfinite(out[:3]).all() and torch.all(out[:3] != 0)

    expected = [
        ("block_table", 0 * n_cols + 1, nb),
        ("seq_lens", 1, n_cols * bs + 1),
        ("query_start_loc", 3, -BIG),
    ]
    return Case(
        "varlen_paged_attention",
        "varlen_paged_attention",
        b,
        ["out"],
        launch,
        plant,
        expected,
        fallback,
    )


def csr_prefill_case(device: torch.device, gen: torch.Generator, nh: int = 2, nkv: int = 1) -> Case:
    nb, bs, hd = 24, 4, 16
    reqs = [Req(0, 2, 6, []), Req(2, 3, 8, []), Req(5, 1, 1, [])]
    for r, p in zip(reqs, disjoint_pages(nb, [2, 2, 1], gen), strict=True):
        r.pages = p
    indptr, indices, last = csr_from_reqs(reqs, bs)
    T = 7
    k_cache, v_cache = _kv(gen, device, nb, bs, nkv, hd)
    b = {
        "q": carve(randn((T, nh, hd), gen, torch.float32, device)),
        "k_cache": k_cache,
        "v_cache": v_cache,
        "out": carve(torch.zeros((T, nh, hd), device=device)),
        "qo": _t([0, 2, 5, 6], torch.int32, device),
        "kv_indptr": _t(indptr, torch.int32, device),
        "kv_indices": _t(indices, torch.int32, device),
        "last_page_len": _t(last, torch.int32, device),
    }

    def launch(b: Buffers, guard: Guard | None) -> None:
        meta = csr_meta(b["qo"], b["kv_indptr"], b["kv_indices"], b["last_page_len"], 3)
        paged_attention(
            b["q"],
            b["k_cache"],
            b["v_cache"],
            b["out"],
            meta,
            max_query_len=3,
            scale=scale_for(hd),
            guard=guard,
        )

    def plant(b: Buffers) -> None:
        b["kv_indices"][1] = -3  # second page of request 0
        b["last_page_len"][1] = 0  # request 1 has pages
        b["qo"][3] = T + 2  # past the query rows

    def fallback(b: Buffers) -> None:
        out = b["out"]
        assert torch.all(out[2:] == 0)  # requests 1 and 2 skipped
        assert torch.isfinite(out[:2]).all() and torch.all(out[:2] != 0)

    expected = [("kv_indices", 1, -3), ("last_page_len", 1, 0), ("qo_indptr", 3, T + 2)]
    return Case(
        "csr_paged_prefill", "csr_paged_prefill", b, ["out"], launch, plant, expected, fallback
    )


def csr_decode_case(device: torch.device, gen: torch.Generator, nh: int = 2, nkv: int = 1) -> Case:
    """The PIECEWISE draft decode of vLLM #39773: 3 requests, a batch of 6 token rows."""
    nb, bs, hd = 24, 4, 16
    reqs = [Req(0, 1, 5, []), Req(1, 1, 3, []), Req(2, 1, 8, [])]
    for r, p in zip(reqs, disjoint_pages(nb, [2, 1, 2], gen), strict=True):
        r.pages = p
    indptr, indices, last = csr_from_reqs(reqs, bs)
    batch = 6
    k_cache, v_cache = _kv(gen, device, nb, bs, nkv, hd)
    n = indptr[-1]
    b = {
        "q": carve(randn((batch, nh, hd), gen, torch.float32, device)),
        "k_cache": k_cache,
        "v_cache": v_cache,
        "out": carve(torch.zeros((batch, nh, hd), device=device)),
        # Valid build for all 6 rows (FULL-style padding: empty rows) ...
        "kv_indptr": _t([*indptr, n, n, n], torch.int32, device),
        "kv_indices": _t(indices, torch.int32, device),
        "last_page_len": _t([*last, 0, 0, 0], torch.int32, device),
    }

    def launch(b: Buffers, guard: Guard | None) -> None:
        meta = csr_decode_meta(b["kv_indptr"], b["kv_indices"], b["last_page_len"], batch)
        paged_attention(
            b["q"],
            b["k_cache"],
            b["v_cache"],
            b["out"],
            meta,
            max_query_len=1,
            scale=scale_for(hd),
            guard=guard,
        )

    def plant(b: Buffers) -> None:
        # ... then a PIECEWISE build only wrote [0..num_reqs]; the tail is poisoned.
        b["kv_indptr"][4:] = BIG
        b["last_page_len"][3:] = -BIG
        b["last_page_len"][1] = BIG  # a real row with a poisoned length
        b["kv_indices"][0] = nb

    def fallback(b: Buffers) -> None:
        out = b["out"]
        assert torch.all(out[1] == 0) and torch.all(out[3:] == 0)  # skipped rows untouched
        assert torch.isfinite(out[[0, 2]]).all() and torch.all(out[[0, 2]] != 0)

    expected = [
        ("kv_indptr", 4, BIG),
        ("kv_indptr", 5, BIG),
        ("kv_indptr", 6, BIG),
        ("last_page_len", 3, -BIG),
        ("last_page_len", 4, -BIG),
        ("last_page_len", 5, -BIG),
        ("last_page_len", 1, BIG),
        ("kv_indices", 0, nb),
    ]
    return Case(
        "csr_paged_decode", "csr_paged_decode", b, ["out"], launch, plant, expected, fallback
    )


def page_indices_case(device: torch.device, gen: torch.Generator) -> Case:
    n_cols = 4
    b = {
        "kv_indices": carve(torch.full((16,), -9, dtype=torch.int32, device=device)),
        "block_table": carve(randint(1, 50, (4, n_cols), gen, torch.int32, device)),
        "kv_indptr": _t([0, 2, 6, 7, 9], torch.int32, device),
    }

    def launch(b: Buffers, guard: Guard | None) -> None:
        build_csr_page_indices(b["kv_indices"], b["block_table"], b["kv_indptr"], 4, guard=guard)

    def plant(b: Buffers) -> None:
        b["kv_indptr"][0] = -3
        b["kv_indptr"][2] = 17  # past kv_indices (16 entries)
        b["kv_indptr"][4] = 7 + n_cols + 1  # request 3: more pages than the table has columns

    def fallback(b: Buffers) -> None:
        # indptr [-3, 2, 17, 7, 12]: every request has a bad entry and copies nothing.
        assert torch.all(b["kv_indices"] == -9)

    expected = [("kv_indptr", 0, -3), ("kv_indptr", 2, 17), ("kv_indptr", 4, 12)]
    return Case(
        "build_csr_page_indices",
        "build_csr_page_indices",
        b,
        ["kv_indices"],
        launch,
        plant,
        expected,
        fallback,
    )


def gather_block_tables_case(device: torch.device, gen: torch.Generator) -> Case:
    S, n_cols = 5, 6
    b = {
        "src": carve(randint(1, 50, (S, n_cols), gen, torch.int32, device)),
        "idx_mapping": _t([4, 1, 0, 2], torch.int32, device),
        "dst": carve(randint(1, 50, (5, n_cols), gen, torch.int32, device)),
    }

    def launch(b: Buffers, guard: Guard | None) -> None:
        gather_block_tables(b["src"], b["idx_mapping"], b["dst"], 4, 5, guard=guard)

    def plant(b: Buffers) -> None:
        b["idx_mapping"][1] = S
        b["idx_mapping"][3] = -BIG

    def fallback(b: Buffers) -> None:
        assert torch.all(b["dst"][1] == 0) and torch.all(b["dst"][3] == 0)

    expected = [("idx_mapping", 1, S), ("idx_mapping", 3, -BIG)]
    return Case(
        "gather_block_tables", "gather_block_tables", b, ["dst"], launch, plant, expected, fallback
    )


def slot_mappings_case(device: torch.device, gen: torch.Generator) -> Case:
    bs, n_cols, nb, T = 4, 3, 20, 12
    b = {
        "block_table": carve(randint(0, nb, (3, n_cols), gen, torch.int32, device)),
        "qsl": _t([0, 2, 5, 7], torch.int32, device),
        "positions": _t([0, 5, 3, 4, 11, 9, 1, 0, 0, 0, 0, 0], torch.int64, device),
        "slot_mapping": carve(torch.full((T,), 99, dtype=torch.int64, device=device)),
    }

    def launch(b: Buffers, guard: Guard | None) -> None:
        compute_slot_mappings(
            b["block_table"],
            b["qsl"],
            b["positions"],
            b["slot_mapping"],
            3,
            10,
            bs,
            nb,
            guard=guard,
        )

    def plant(b: Buffers) -> None:
        b["positions"][1] = n_cols * bs  # request 0: past its block-table row
        b["block_table"][1, 2] = nb  # request 1, column 2: only token 4 (pos 11) reads it
        b["qsl"][3] = T + 1  # end of request 2 past the buffers

    def fallback(b: Buffers) -> None:
        assert b["slot_mapping"][1] == -1 and b["slot_mapping"][4] == -1

    expected = [
        ("positions", 1, n_cols * bs),
        ("block_table", 1 * n_cols + 2, nb),
        ("query_start_loc", 3, T + 1),
    ]
    return Case(
        "compute_slot_mappings",
        "compute_slot_mappings",
        b,
        ["slot_mapping"],
        launch,
        plant,
        expected,
        fallback,
    )


def padded_rows_case(device: torch.device, gen: torch.Generator) -> Case:
    """SGLang-style replay: every padded row's stale position becomes a slot (sglang #10892)."""
    bs, n_cols, nb = 4, 3, 20
    b = {
        "block_table": carve(randint(0, nb, (6, n_cols), gen, torch.int32, device)),
        "positions": _t([1, 7, 11, 0, 4, 2], torch.int64, device),
        "slot_mapping": carve(torch.full((6,), 99, dtype=torch.int64, device=device)),
    }

    def launch(b: Buffers, guard: Guard | None) -> None:
        compute_slot_mappings_padded_rows(
            b["block_table"], b["positions"], b["slot_mapping"], 6, bs, nb, guard=guard
        )

    def plant(b: Buffers) -> None:
        b["positions"][5] = -1
        b["positions"][4] = BIG
        b["block_table"][2, 2] = -4  # row 2 reads column 11 // 4 = 2

    def fallback(b: Buffers) -> None:
        assert b["slot_mapping"][[2, 4, 5]].tolist() == [-1, -1, -1]
        assert torch.all(b["slot_mapping"][[0, 1, 3]] >= 0)

    expected = [("positions", 5, -1), ("positions", 4, BIG), ("block_table", 2 * n_cols + 2, -4)]
    return Case(
        "compute_slot_mappings_padded_rows",
        "compute_slot_mappings_padded_rows",
        b,
        ["slot_mapping"],
        launch,
        plant,
        expected,
        fallback,
    )


def prepare_inputs_case(device: torch.device, gen: torch.Generator) -> Case:
    T, R = 12, 4
    b = {
        "qsl": _t([0, 4, 8, 10, 10], torch.int32, device),
        "seq_lens": _t([20, 30, 5, 0], torch.int32, device),
        "input_ids": carve(randint(1, 99, (T,), gen, torch.int32, device)),
        "positions": carve(randint(1, 99, (T,), gen, torch.int64, device)),
        "num_rejected": _t([1, 0, 1, 0], torch.int32, device),
        "next_tokens": _t([101, 102, 103, 104], torch.int64, device),
        "e_input_ids": carve(torch.full((T,), 7, dtype=torch.int32, device=device)),
        "e_positions": carve(torch.full((T,), 7, dtype=torch.int64, device=device)),
        "e_qsl": carve(torch.full((R + 1,), 7, dtype=torch.int32, device=device)),
        "e_seq_lens": carve(torch.full((R,), 7, dtype=torch.int32, device=device)),
        "lti": carve(torch.full((R,), 7, dtype=torch.int64, device=device)),
        "step": carve(torch.tensor([3], dtype=torch.int64, device=device)),
    }

    def launch(b: Buffers, guard: Guard | None) -> None:
        prepare_eagle_inputs(
            b["qsl"],
            b["seq_lens"],
            b["input_ids"],
            b["positions"],
            b["num_rejected"],
            b["next_tokens"],
            b["e_input_ids"],
            b["e_positions"],
            b["e_qsl"],
            b["e_seq_lens"],
            b["lti"],
            b["step"],
            3,
            R,
            guard=guard,
        )

    def plant(b: Buffers) -> None:
        b["num_rejected"][0] = 4  # the whole query rejected: last index would be qs - 1
        b["qsl"][2] = BIG  # end of request 1 (and start of request 2)

    def fallback(b: Buffers) -> None:
        # Requests 0 and 1 write nothing; request 2 (qs = BIG) is skipped unlogged.
        assert b["lti"][:3].tolist() == [7, 7, 7]
        assert torch.all(b["e_input_ids"] == 7) and torch.all(b["e_positions"] == 7)
        assert b["lti"][3] == 0 and b["e_qsl"][3:].tolist() == [10, 10]

    expected = [("num_rejected", 0, 4), ("target_query_start_loc", 2, BIG)]
    outputs = ["e_input_ids", "e_positions", "e_qsl", "e_seq_lens", "lti", "step"]
    return Case(
        "prepare_eagle_inputs",
        "prepare_eagle_inputs",
        b,
        outputs,
        launch,
        plant,
        expected,
        fallback,
    )


def gather_rows_case(device: torch.device, gen: torch.Generator) -> Case:
    """The FULL draft-prefill gather of vLLM #39773: stale indices past the graph's rows."""
    n_src, H = 6, 24
    b = {
        "src": carve(randn((n_src, H), gen, torch.float32, device)),
        "indices": _t([2, 5, 0, 3], torch.int64, device),
        "out": carve(torch.zeros((4, H), device=device)),
    }

    def launch(b: Buffers, guard: Guard | None) -> None:
        gather_rows(b["src"], b["indices"], b["out"], 4, n_src, guard=guard)

    def plant(b: Buffers) -> None:
        b["indices"][2] = n_src  # a stale last_token_indices row == num_tokens
        b["indices"][3] = -1

    def fallback(b: Buffers) -> None:
        assert torch.isnan(b["out"][2:]).all() and not torch.isnan(b["out"][:2]).any()

    expected = [("last_token_indices", 2, n_src), ("last_token_indices", 3, -1)]
    return Case("gather_rows", "gather_rows", b, ["out"], launch, plant, expected, fallback)


CASES: dict[str, Callable[..., Case]] = {
    "write_kv": write_kv_case,
    "varlen_paged_attention": varlen_case,
    "csr_paged_prefill": csr_prefill_case,
    "csr_paged_decode": csr_decode_case,
    "build_csr_page_indices": page_indices_case,
    "gather_block_tables": gather_block_tables_case,
    "compute_slot_mappings": slot_mappings_case,
    "compute_slot_mappings_padded_rows": padded_rows_case,
    "prepare_eagle_inputs": prepare_inputs_case,
    "gather_rows": gather_rows_case,
}
