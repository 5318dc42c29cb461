"""Metadata invariants of one probed step, derived from the schedule alone.

Each invariant is a named check on the buffer it guards, run after the phase that builds it
(all checks of a phase in one launch, `kernels.invariants`). Expected values come from the
host's view of the batch — query lengths, start positions, owned blocks, accepted counts —
never from the rig's own arithmetic, so a plausible but wrong value inside the valid extent
is caught where guards and poison see nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from eaglegraph.kernels.invariants import EQ, REL_EQ, REL_IN, Check, Outcome, run_checks
from eaglegraph.rig.descriptors import uniform_token_count
from eaglegraph.rig.speculators import DraftFacts
from eaglegraph.rig.workload import ScheduledRequest

if TYPE_CHECKING:
    from eaglegraph.rig.step import Rig


@dataclass
class StepView:
    """The host's facts about the probed step: what every expected value is computed from."""

    rig: Rig
    batch: list[ScheduledRequest]
    accepted: list[int] | None = None
    draft_step: int = 1  # the draft decode whose slot mapping is checked

    @property
    def rb(self) -> int:
        return len(self.batch)

    @property
    def qsl(self) -> list[int]:
        return np.concatenate([[0], np.cumsum([len(b.query) for b in self.batch])]).tolist()

    @property
    def tb(self) -> int:
        return self.qsl[-1]

    @property
    def seq_lens(self) -> list[int]:
        return [b.start_pos + len(b.query) for b in self.batch]

    def table_rows(self) -> list[int]:
        mb = self.rig.max_blocks
        out: list[int] = []
        for b in self.batch:
            row = list(b.blocks[:mb])
            out += row + [0] * (mb - len(row))
        return out

    def slots(self) -> list[int]:
        bs, out = self.rig.block_size, []
        for b in self.batch:
            for p in range(b.start_pos, b.start_pos + len(b.query)):
                out.append(b.blocks[p // bs] * bs + p % bs)
        return out

    def target_padded_tokens(self) -> int:
        return self._target_pad().num_tokens

    def target_padded_reqs(self) -> int:
        return self._target_pad().num_reqs

    def _target_pad(self) -> Any:
        rb, tb = self.rb, self.tb
        max_q = max(len(b.query) for b in self.batch)
        return self.rig.runners["target"].pad(rb, tb, uniform_token_count(rb, tb, max_q))

    def decode_slots(self) -> list[int] | None:
        """The slots the real rows of draft decode `draft_step` write (None where a request
        reaches the end of the context, which the rig clamps)."""
        assert self.accepted is not None
        bs, mml = self.rig.block_size, self.rig.max_model_len
        out = []
        for b, s, a in zip(self.batch, self.seq_lens, self.accepted, strict=True):
            p = s - (b.num_drafts - a) + self.draft_step - 1
            if p + 1 >= mml:
                return None
            out.append(b.blocks[p // bs] * bs + p % bs)
        return out

    def decode_padded_tokens(self) -> int:
        return self.rig.runners["draft_decode"].pad(self.rb, self.rb, 1).num_tokens

    def decode_lens(self) -> list[int]:
        """Each request's KV length at the last draft-decode step."""
        assert self.accepted is not None
        k, mml = self.rig.num_speculative_tokens, self.rig.max_model_len
        out = []
        for b, s, a in zip(self.batch, self.seq_lens, self.accepted, strict=True):
            out.append(min(s - (b.num_drafts - a) + k - 1, mml))
        return out

    def csr(self, lens: list[int]) -> tuple[list[int], list[int], list[int]]:
        """(indptr, indices, last_page_len) a FlashInfer build over `lens` must produce."""
        bs = self.rig.block_size
        indptr, indices, last = [0], [], []
        for b, n in zip(self.batch, lens, strict=True):
            pages = -(-n // bs)
            indptr.append(indptr[-1] + pages)
            indices += b.blocks[:pages]
            last.append(0 if n == 0 else (n % bs or bs))
        return indptr, indices, last


Build = Callable[[StepView, Any], Check | None]


@dataclass(frozen=True)
class Invariant:
    """A named check: the buffer it guards, the phase after which it holds, the kernel (or
    host routine) that writes the buffer, how to build it from the step's facts, and what a
    speculator's drafting must do for the check to apply (`Speculator.facts`)."""

    name: str
    phase: str
    buffer: str
    writer: str
    build: Build
    what: str
    needs: DraftFacts = DraftFacts.NONE
    # "launch": checked right before the phase's graph or kernels run (a bad slot must be
    # named before the write it steers can kill the device); "after": once the phase is done
    at: str = "after"


def _eq(t: torch.Tensor, values: list[int]) -> Check | None:
    return Check(t, len(values), EQ, tuple(int(v) for v in values)) if values else None


def _builder(rig: Rig, owner: str) -> Any:
    md = rig.metadata
    return md.target_builder if owner == "target" else md.draft_builder


def _csr(owner: str, part: int) -> Build:
    def build(v: StepView, bufs: Any) -> Check | None:
        b = _builder(v.rig, "target" if owner == "target" else "draft")
        if b is None or not hasattr(b, "kv_indptr"):
            return None
        lens = v.seq_lens if owner == "target" else v.decode_lens()
        values = v.csr(lens)[part]
        tensor = (b.kv_indptr, b.kv_indices, b.last_page_len)[part]
        return _eq(tensor, values)

    return build


def _state_rows(v: StepView, bufs: Any) -> Check | None:
    # the rows of the persistent table this step's requests use, against their own blocks
    rows = torch.stack([bufs.state_block_table[b.slot] for b in v.batch]).reshape(-1)
    return _eq(rows, v.table_rows())


def _padding_slots(bufs: Any, valid: int, pad: int) -> Check | None:
    """The slot mapping's padding rows [valid, pad) write no KV: each holds -1."""
    if pad <= valid:
        return None
    return Check(bufs.slot_mapping[valid:pad], pad - valid, EQ, (-1,) * (pad - valid))


def _pad_table_rows(v: StepView, bufs: Any) -> Check | None:
    """Padded rows [num_reqs, padded) of the gathered block table are zero: a row past the
    batch never takes a request's blocks (a `<=` for `<` in the gather would)."""
    rows = bufs.block_table[v.rb : v.target_padded_reqs()].reshape(-1)
    return Check(rows, rows.numel(), EQ, (0,) * rows.numel()) if rows.numel() else None


def _pad_slots(v: StepView, bufs: Any) -> Check | None:
    return _padding_slots(bufs, v.tb, v.target_padded_tokens())


def _decode_pad_slots(v: StepView, bufs: Any) -> Check | None:
    return _padding_slots(bufs, v.rb, v.decode_padded_tokens())


def _decode_slots(v: StepView, bufs: Any) -> Check | None:
    slots = v.decode_slots()
    return None if slots is None else _eq(bufs.slot_mapping, slots)


def _decode_seq_lens(v: StepView, bufs: Any) -> Check | None:
    return _eq(bufs.eagle_seq_lens, v.decode_lens())


def _decode_positions(v: StepView, bufs: Any) -> Check | None:
    mml = v.rig.max_model_len
    lens = v.decode_lens()
    if any(n >= mml for n in lens):
        return None  # both clamp at the end of the context
    return Check(bufs.eagle_seq_lens, v.rb, REL_EQ, (1,) * v.rb, ref=bufs.decode_positions)


# DFlash's block builds its own inputs, not eagle.*; multi-module MTP's window moves
# last_token_indices along as its modules run, so only EAGLE's point at the accepted token
EAGLE_INPUTS = DraftFacts.EAGLE_INPUTS

INVARIANTS: tuple[Invariant, ...] = (
    Invariant("qsl-prefix-sums", "target", "target.query_start_loc", "prepare_inputs",
              lambda v, b: _eq(b.query_start_loc, v.qsl),
              "query_start_loc is monotone and ends at num_tokens"),
    Invariant("seq-lens", "target", "target.seq_lens", "prepare_inputs",
              lambda v, b: _eq(b.seq_lens, v.seq_lens), "seq_lens = start position + query length"),
    Invariant("positions", "target", "target.positions", "prepare_inputs",
              lambda v, b: _eq(b.positions, [p for r in v.batch for p in
                                             range(r.start_pos, r.start_pos + len(r.query))]),
              "positions run from each request's start"),
    Invariant("idx-mapping-slots", "target", "target.idx_mapping", "prepare_inputs",
              lambda v, b: _eq(b.idx_mapping, [r.slot for r in v.batch]),
              "each batch row maps to its own request's slot"),
    Invariant("block-table-pad-rows", "target", "block_table", "gather_block_tables",
              _pad_table_rows, "padded rows of the block table read no request's blocks"),
    Invariant("state-table-from-host", "target", "state.block_table", "block_table_upload",
              _state_rows, "the device block table equals the host's"),
    Invariant("block-table-rows", "target", "block_table", "gather_block_tables",
              lambda v, b: _eq(b.block_table, v.table_rows()),
              "each request's block-table row lists the blocks it owns"),
    Invariant("slot-mapping", "target", "slot_mapping", "compute_slot_mappings",
              lambda v, b: _eq(b.slot_mapping, v.slots()),
              "slots = owned block · block size + offset", at="launch"),
    Invariant("pad-slots", "target", "slot_mapping", "compute_slot_mappings", _pad_slots,
              "padded tokens' slots are the pad slot", at="launch"),
    Invariant("csr-offsets", "target", "target.kv_indptr", "build_csr_page_indices",
              _csr("target", 0), "kv_indptr = prefix sums of the pages each request owns"),
    Invariant("csr-pages", "target", "target.kv_indices", "build_csr_page_indices",
              _csr("target", 1), "kv_indices list each request's own pages"),
    Invariant("csr-last-page", "target", "target.last_page_len", "build_csr_page_indices",
              _csr("target", 2), "last_page_len matches seq_lens"),
    Invariant("eagle-qsl", "draft_prefill", "eagle.query_start_loc", "prepare_eagle_inputs",
              lambda v, b: _eq(b.eagle_qsl, v.qsl),
              "the draft's query starts are the target's", EAGLE_INPUTS),
    Invariant("last-token-in-query", "draft_prefill", "eagle.last_token_indices",
              "prepare_eagle_inputs",
              lambda v, b: Check(b.last_token_indices, v.rb, REL_IN, ref=b.query_start_loc),
              "last_token_indices[r] in [qsl[r], qsl[r+1])", EAGLE_INPUTS),
    Invariant("last-token-accepted", "draft_prefill", "eagle.last_token_indices",
              "prepare_eagle_inputs",
              lambda v, b: _eq(b.last_token_indices, [
                  q + len(r.query) - 1 - (r.num_drafts - a)
                  for q, r, a in zip(v.qsl, v.batch, v.accepted or [], strict=False)]),
              "last_token_indices point at each request's last accepted token",
              DraftFacts.ACCEPTED_LAST_TOKEN),
    Invariant("decode-seq-lens", "draft_decode", "eagle.seq_lens", "update_eagle_draft_inputs",
              _decode_seq_lens, "draft seq_lens grow by one per draft position"),
    Invariant("decode-seq-lens-positions", "draft_decode", "eagle.seq_lens",
              "update_eagle_draft_inputs", _decode_positions,
              "seq_lens = position + 1 for decode rows"),
    Invariant("decode-slots", "draft_decode", "slot_mapping", "compute_slot_mappings",
              _decode_slots, "each draft row writes its own request's next position",
              DraftFacts.DECODE_SLOTS_BY_QUERY, at="launch"),
    Invariant("decode-pad-slots", "draft_decode", "slot_mapping", "compute_slot_mappings",
              _decode_pad_slots, "padded decode rows' slots are the pad slot",
              DraftFacts.DECODE_SLOTS_BY_QUERY, at="launch"),
    Invariant("decode-csr-offsets", "draft_decode", "draft.kv_indptr", "build_csr_page_indices",
              _csr("draft", 0), "kv_indptr = prefix sums of the pages each request owns"),
    Invariant("decode-csr-last-page", "draft_decode", "draft.last_page_len",
              "build_csr_page_indices", _csr("draft", 2), "last_page_len matches seq_lens"),
)  # fmt: skip


def _when(inv: Invariant, rig: Rig) -> str:
    """When `inv` is checked: a fused draft-decode graph computes its slots inside the graph,
    so its slot checks wait until the phase is done (they then see the last decode's slots)."""
    if inv.at == "launch" and inv.phase == "draft_decode" and rig.fused_draft_decode:
        return "after"
    return inv.at


def phase_checks(view: StepView, phase: str, at: str = "after") -> list[tuple[Invariant, Check]]:
    """The invariants of `phase` checked `at` ("launch": before its kernels run; "after")
    that apply to this step, each with its device check."""
    if phase != "target" and view.accepted is None:
        view.accepted = view.rig.bufs.num_accepted[: view.rb].tolist()
    if at == "after" and phase == "draft_decode":
        view.draft_step = view.rig.num_speculative_tokens - 1
    picked: list[tuple[Invariant, Check]] = []
    for inv in INVARIANTS:
        if inv.phase != phase or _when(inv, view.rig) != at:
            continue
        if phase == "draft_decode" and view.rig.num_speculative_tokens < 2:
            continue
        if inv.needs not in view.rig.speculator.facts:
            continue
        check = inv.build(view, view.rig.bufs)
        if check is not None:
            picked.append((inv, check))
    return picked


def violated(
    phase: str, picked: list[tuple[Invariant, Check]], outcomes: list[Outcome]
) -> list[dict[str, Any]]:
    """The broken invariants among `picked`, as plain records."""
    out = []
    for (inv, check), o in zip(picked, outcomes, strict=True):
        if o.violations:
            want = check.expected[o.first] if check.op == EQ else None
            out.append(
                {
                    "invariant": inv.name, "phase": phase, "buffer": inv.buffer,
                    "kernel": inv.writer, "what": inv.what, "violations": o.violations,
                    "element": o.first, "value": o.value, "expected": want,
                }
            )  # fmt: skip
    return out


def check_phase(view: StepView, phase: str, at: str = "after") -> list[dict[str, Any]]:
    """Every invariant of `phase` checked `at`, in one launch; the violated ones, as plain
    records (the read of the results synchronises: they are in hand before anything runs on)."""
    picked = phase_checks(view, phase, at)
    return violated(phase, picked, run_checks([c for _, c in picked], view.rig.config.device))
