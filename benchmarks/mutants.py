"""Planted bugs for the mutation benchmark: small, realistic mistakes in the rig, one at a time.

Each mutant wraps one kernel wrapper or host routine the rig calls (monkeypatch level, so the
rig's code is untouched) and leaves a wrong but plausible value where the real bug would: a
row one off inside the batch, a length carried over from the previous draft position, a CSR
offset left from the previous build, a device table not refreshed from the host, a padded row
writing a real request's slot. `phase` and `buffer` say where a finding must point.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import torch

from eaglegraph.rig import attention as rig_attention
from eaglegraph.rig import mtp_window as rig_mtp_window
from eaglegraph.rig import routines as rig_routines
from eaglegraph.rig import step as rig_step
from eaglegraph.rig.attention import AttentionRuntime, FlashInferBuilder
from eaglegraph.rig.kv_cache import BlockAllocator
from eaglegraph.rig.speculators import block as rig_block
from eaglegraph.rig.speculators import eagle as rig_eagle
from eaglegraph.rig.speculators import window as rig_window
from eaglegraph.rig.step import Rig


@dataclass(frozen=True)
class Mutant:
    name: str
    phase: str
    buffers: tuple[str, ...]  # a finding naming any of these (in `phase`) points at the bug
    backend: str
    what: str
    patch: Callable[[], contextlib.AbstractContextManager[Any]]
    # modes in which the bug cannot change anything the probed schedule runs, and why; where
    # the mutant counts its own firings (`tracked`), the benchmark checks the claim
    equivalent: Mapping[str, str] = field(default_factory=dict)
    tracked: bool = False
    preset: str = "tiny-llama-eagle3"  # the pair it is probed on (MTP window bugs: an MTP one)
    plan: Mapping[str, Any] = field(default_factory=dict)  # plan options beyond the benchmark's
    # written before the probe was tuned on it, and never tuned on since: reported apart
    held_out: bool = False


# how often a tracked mutant changed a value since the last reset (the benchmark resets it
# once the graphs are captured: dummy capture batches are not the schedule)
ACTIVITY = {"fired": 0}


# the rig's modules that call kernel wrappers and host routines: the step and its speculators
RIG_CALLERS = (rig_step, rig_eagle, rig_window, rig_block, rig_routines)


def _wrap(
    module: Any, name: str, after: Callable[..., None], before: Callable[..., Any] | None = None
) -> Any:
    """Patch `name` where the rig calls it so `after(state, *args)` runs after the original
    (`state` from `before(*args)`): in `module` and in every other rig module that imported
    the same function (the step and each speculator call the slot-mapping kernel)."""
    orig = getattr(module, name)
    wrapper = _wrapper(orig, after, before)
    stack = contextlib.ExitStack()
    for caller in {module, *(m for m in RIG_CALLERS if getattr(m, name, None) is orig)}:
        stack.enter_context(mock.patch.object(caller, name, wrapper))
    return stack


def _wrapper(
    orig: Callable[..., Any], after: Callable[..., None], before: Callable[..., Any] | None
) -> Callable[..., Any]:

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        state = before(*args) if before is not None else None
        out = orig(*args, **kwargs)
        after(state, *args)
        return out

    return wrapper


def _block_table_row_off() -> Any:
    def after(_: Any, src: Any, idx: Any, dst: torch.Tensor, n: int, *rest: Any) -> None:
        if n > 1:
            dst[:n].copy_(dst[:n].roll(1, 0))

    return _wrap(rig_step, "gather_block_tables", after)


def _rows(
    slots: torch.Tensor, qsl: torch.Tensor, n: int, pad_until: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(real rows, padded rows) masks of a slot mapping, from device values only: the slot
    kernels run inside captured graphs (the fused draft decode), where a host read such as
    ``int(qsl[n])`` is refused, so a planted bug must stay on the device as a real one would."""
    idx = torch.arange(slots.numel(), device=slots.device)
    end = qsl[n].to(idx.dtype)
    return idx < end, (idx >= end) & (idx < pad_until)


def _slot_one_off() -> Any:
    def after(_: Any, bt: Any, qsl: torch.Tensor, pos: Any, slots: torch.Tensor, n: int, pad_until: int, *r: Any) -> None:  # fmt: skip
        real, _ = _rows(slots, qsl, n, pad_until)
        slots.add_(real.to(slots.dtype))

    return _wrap(rig_step, "compute_slot_mappings", after)


def _pad_row_writes_real_slot() -> Any:
    def after(_: Any, bt: Any, qsl: torch.Tensor, pos: Any, slots: torch.Tensor, n: int, pad_until: int, *r: Any) -> None:  # fmt: skip
        _, pad = _rows(slots, qsl, n, pad_until)
        slots.copy_(torch.where(pad, slots[0], slots))

    return _wrap(rig_step, "compute_slot_mappings", after)


def _last_token_one_off() -> Any:
    def after(_: Any, *args: Any) -> None:
        lti, n = args[10], args[12]
        lti[:n] = (lti[:n] - 1).clamp(min=0)

    return _wrap(rig_eagle, "prepare_eagle_inputs", after)


def _rejected_not_counted() -> Any:
    def after(_: Any, *args: Any) -> None:
        args[6][: args[3]] = 0  # num_rejected: as if every draft were kept

    return _wrap(rig_step, "greedy_verify", after)


def _full_acceptance_one_short() -> Any:
    def after(_: Any, *args: Any) -> None:
        n, num_spec, acc, rej = args[3], args[4], args[5], args[6]
        full = (acc[:n] == num_spec[:n]) & (num_spec[:n] > 0)
        acc[:n] -= full.to(acc.dtype)
        rej[:n] += full.to(rej.dtype)

    return _wrap(rig_step, "greedy_verify", after)


def _draft_seq_len_carried() -> Any:
    def before(*args: Any) -> torch.Tensor:
        return args[6].clone()  # eagle seq_lens before the update

    def after(saved: torch.Tensor, *args: Any) -> None:
        args[6].copy_(saved)

    return _wrap(rig_routines, "update_eagle_draft_inputs", after, before)


def _draft_position_carried() -> Any:
    def before(*args: Any) -> torch.Tensor:
        return args[5].clone()  # positions before the update

    def after(saved: torch.Tensor, *args: Any) -> None:
        args[5].copy_(saved)

    return _wrap(rig_routines, "update_eagle_draft_inputs", after, before)


def _target_seq_lens_short() -> Any:
    orig = rig_step.h2d
    state = {"r": 0}

    def h2d(dst: torch.Tensor, values: Any) -> None:
        # the full-width int32 seq_lens upload (query_start_loc has one entry more)
        if dst.dim() == 1 and dst.dtype == torch.int32 and dst.numel() == state["r"]:
            values = [max(v - 1, 0) for v in list(values)]
        orig(dst, values)

    init = Rig.__init__

    def rig_init(self: Rig, *a: Any, **k: Any) -> None:
        init(self, *a, **k)
        state["r"] = self.max_num_seqs

    stack = contextlib.ExitStack()
    stack.enter_context(mock.patch.object(rig_step, "h2d", h2d))
    stack.enter_context(mock.patch.object(Rig, "__init__", rig_init))
    return stack


def _device_table_not_refreshed() -> Any:
    allocate = Rig.allocate

    def patched(self: Rig, request: Any, num_tokens: int) -> None:
        dirty = self._bt_dirty
        allocate(self, request, num_tokens)
        if getattr(self, "steps_seen", False):
            self._bt_dirty = dirty

    step = Rig.step

    def counting(self: Rig, batch: Any) -> Any:
        out = step(self, batch)
        self.steps_seen = True  # type: ignore[attr-defined]
        return out

    stack = contextlib.ExitStack()
    stack.enter_context(mock.patch.object(Rig, "allocate", patched))
    stack.enter_context(mock.patch.object(Rig, "step", counting))
    return stack


def _stale_csr_offsets() -> Any:
    csr = FlashInferBuilder.csr
    last: dict[int, list[int]] = {}

    def patched(self: FlashInferBuilder, seq_lens: list[int]) -> tuple[list[int], list[int]]:
        indptr, lp = csr(self, seq_lens)
        prev = last.get(id(self))
        last[id(self)] = indptr
        if prev is not None and len(prev) > len(indptr):
            if prev[: len(indptr)] != indptr:
                ACTIVITY["fired"] += 1
            indptr = prev[: len(indptr)]  # offsets kept from the previous (larger) build
        return indptr, lp

    return mock.patch.object(FlashInferBuilder, "csr", patched)


def _csr_pages_from_previous_table() -> Any:
    orig = rig_attention.build_csr_page_indices
    saved: dict[str, torch.Tensor] = {}

    def patched(kv_indices: Any, block_table: torch.Tensor, *rest: Any, **kw: Any) -> None:
        old = saved.get("table")
        saved["table"] = block_table.clone()
        orig(kv_indices, old if old is not None else block_table, *rest, **kw)

    return mock.patch.object(rig_attention, "build_csr_page_indices", patched)


def _last_page_len_off() -> Any:
    csr = FlashInferBuilder.csr

    def patched(self: FlashInferBuilder, seq_lens: list[int]) -> tuple[list[int], list[int]]:
        indptr, lp = csr(self, seq_lens)
        if self.owner != "target":
            lp = [max(n - 1, 0) if n > 1 else n for n in lp]
        return indptr, lp

    return mock.patch.object(FlashInferBuilder, "csr", patched)


def _decode_pad_row_writes_committed_kv() -> Any:
    stack = contextlib.ExitStack()
    seen: dict[str, torch.Tensor] = {}
    init = Rig.__init__

    def rig_init(self: Rig, *a: Any, **k: Any) -> None:
        init(self, *a, **k)
        seen["decode_positions"] = self.bufs.decode_positions

    def after(_: Any, bt: torch.Tensor, qsl: torch.Tensor, pos: Any, slots: torch.Tensor, n: int, pad_until: int, block_size: int, *r: Any) -> None:  # fmt: skip
        # only the draft decodes' slot mappings (they alone read decode_positions), and the
        # same inside a captured fused decode graph: a Python flag would be baked in at capture
        if pos is not seen.get("decode_positions"):
            return
        _, pad = _rows(slots, qsl, n, pad_until)  # real rows end at qsl[n] (fused: padded, empty)
        pad &= qsl[n] > 0
        first = bt[0, 0].to(slots.dtype) * block_size  # request 0's position 0
        slots.copy_(torch.where(pad, first, slots))

    stack.enter_context(mock.patch.object(Rig, "__init__", rig_init))
    stack.enter_context(_wrap(rig_step, "compute_slot_mappings", after))
    return stack


def _pad_slot_zero() -> Any:
    def after(_: Any, bt: Any, qsl: torch.Tensor, pos: Any, slots: torch.Tensor, n: int, pad_until: int, *r: Any) -> None:  # fmt: skip
        _, pad = _rows(slots, qsl, n, pad_until)
        slots.masked_fill_(pad, 0)  # slot 0 of the null block instead of the pad slot -1

    return _wrap(rig_step, "compute_slot_mappings", after)


def _decode_draft_row_off() -> Any:
    def before(*args: Any) -> None:
        sampled, r = args[0], args[8]
        if r > 1:
            sampled[:r].copy_(sampled[:r].roll(1, 0))  # each row takes its neighbour's token

    return _wrap(rig_routines, "update_eagle_draft_inputs", lambda *_: None, before)


def _decode_hidden_row_off() -> Any:
    def after(_: Any, *args: Any) -> None:
        hidden, r = args[4], args[8]
        if r > 1:
            hidden[:r].copy_(hidden[:r].roll(1, 0))

    return _wrap(rig_routines, "update_eagle_draft_inputs", after)


def _next_token_row_off() -> Any:
    def after(_: Any, *args: Any) -> None:
        n, nxt = args[3], args[7]
        if n > 1:
            nxt[:n].copy_(nxt[:n].roll(1, 0))

    return _wrap(rig_step, "greedy_verify", after)


def _kv_write_one_short() -> Any:
    orig = rig_attention.write_kv

    def patched(k: Any, v: Any, kc: Any, vc: Any, slots: Any, n: int, *rest: Any) -> None:
        orig(k, v, kc, vc, slots, max(n - 1, 0), *rest)

    return mock.patch.object(rig_attention, "write_kv", patched)


def _draft_kv_write_one_short() -> Any:
    """The draft layers' KV writes stop one row short (the target's are right): only the
    draft's cache is wrong, and only where a last row's KV is read later."""
    orig_write, run, init = rig_attention.write_kv, AttentionRuntime.run, Rig.__init__
    state = {"target_layers": 1 << 30, "draft": False}

    def rig_init(self: Rig, *a: Any, **k: Any) -> None:
        init(self, *a, **k)
        state["target_layers"] = self.models.target.num_layers

    def patched_run(self: AttentionRuntime, layer: int, *a: Any) -> None:
        # a Python decision per layer, so a captured graph records it per call site too
        state["draft"] = layer >= state["target_layers"]
        try:
            run(self, layer, *a)
        finally:
            state["draft"] = False

    def write(k: Any, v: Any, kc: Any, vc: Any, slots: Any, n: int, *rest: Any) -> None:
        orig_write(k, v, kc, vc, slots, max(n - 1, 0) if state["draft"] else n, *rest)

    stack = contextlib.ExitStack()
    stack.enter_context(mock.patch.object(Rig, "__init__", rig_init))
    stack.enter_context(mock.patch.object(AttentionRuntime, "run", patched_run))
    stack.enter_context(mock.patch.object(rig_attention, "write_kv", write))
    return stack


def _draft_kv_into_target_layer() -> Any:
    """The draft layers' K/V written into the first target layer's cache (a global layer
    index not offset by the target's layer count): a later phase overwrites K/V rows the
    target wrote right, so the end-of-step compare sees the target's K/V wrong."""
    orig_write, run, init = rig_attention.write_kv, AttentionRuntime.run, Rig.__init__
    state: dict[str, Any] = {"target_layers": 1 << 30, "into": None}

    def rig_init(self: Rig, *a: Any, **k: Any) -> None:
        init(self, *a, **k)
        state["target_layers"] = self.models.target.num_layers

    def patched_run(self: AttentionRuntime, layer: int, *a: Any) -> None:
        # a Python decision per layer, so a captured graph records it per call site too
        if layer >= state["target_layers"]:
            state["into"] = self.kv_caches[0]
        try:
            run(self, layer, *a)
        finally:
            state["into"] = None

    def write(k: Any, v: Any, kc: Any, vc: Any, slots: Any, n: int, *rest: Any) -> None:
        into = state["into"]
        if into is not None and into[0].shape == kc.shape and into[0] is not into[1]:
            kc, vc = into
        orig_write(k, v, kc, vc, slots, n, *rest)

    stack = contextlib.ExitStack()
    stack.enter_context(mock.patch.object(Rig, "__init__", rig_init))
    stack.enter_context(mock.patch.object(AttentionRuntime, "run", patched_run))
    stack.enter_context(mock.patch.object(rig_attention, "write_kv", write))
    return stack


def _draft_shifts_hidden_in_place() -> Any:
    """The draft prefill's input preparation shifts the hidden rows one token up (EAGLE
    pairs token t+1 with hidden row t) in the target's own buffer instead of its copy: the
    target's hidden rows are wrong after the target wrote them right."""
    init = Rig.__init__
    seen: dict[str, torch.Tensor] = {}

    def rig_init(self: Rig, *a: Any, **k: Any) -> None:
        init(self, *a, **k)
        seen["hidden"] = self.bufs.target_hidden

    def after(_: Any, *args: Any) -> None:
        qsl, rb, hidden = args[0], args[12], seen["hidden"]
        idx = torch.arange(hidden.shape[0], device=hidden.device)
        inside = (idx < qsl[rb].to(idx.dtype) - 1)[:, None]  # device-only: also under capture
        hidden.copy_(torch.where(inside, hidden.roll(-1, 0), hidden))

    stack = contextlib.ExitStack()
    stack.enter_context(mock.patch.object(Rig, "__init__", rig_init))
    stack.enter_context(_wrap(rig_eagle, "prepare_eagle_inputs", after))
    return stack


def _draft_csr_len_carried() -> Any:
    build = FlashInferBuilder.build
    last: dict[int, list[int]] = {}

    def patched(self: FlashInferBuilder, common: Any, guard: Any = None) -> Any:
        prev = last.get(id(self))
        last[id(self)] = list(common.seq_lens_cpu)
        decode = self.owner != "target" and common.max_query_len <= 1
        if decode and prev is not None and len(prev) == len(common.seq_lens_cpu):
            common = dataclasses.replace(common, seq_lens_cpu=prev)  # the previous position's
        return build(self, common, guard)

    return mock.patch.object(FlashInferBuilder, "build", patched)


def _by_row(module: Any, name: str, position: int) -> Any:
    """`name` called with its idx_mapping argument (at `position`) replaced by the batch rows
    0..n-1: per-request state read by batch row instead of request slot, which is the same
    only while every request's slot equals its row."""
    orig = getattr(module, name)

    def patched(*args: Any, **kwargs: Any) -> Any:
        idx = args[position]
        rows = torch.arange(idx.numel(), dtype=idx.dtype, device=idx.device)
        return orig(*args[:position], rows, *args[position + 1 :], **kwargs)

    stack = contextlib.ExitStack()
    for caller in {
        module,
        *(m for m in (*RIG_CALLERS, rig_mtp_window) if getattr(m, name, None) is orig),
    }:
        stack.enter_context(mock.patch.object(caller, name, patched))
    return stack


def _block_table_by_row() -> Any:
    return _by_row(rig_step, "gather_block_tables", 1)


def _mtp_cache_by_row() -> Any:
    stack = contextlib.ExitStack()
    stack.enter_context(_by_row(rig_mtp_window, "prepare_mtp_window", 7))
    stack.enter_context(_by_row(rig_mtp_window, "cache_mtp_window", 4))
    return stack


def _mtp_window_not_cached() -> Any:
    """The window's tail is never cached: a re-prefill after a rejection reads the rows an
    earlier step left (the draft KV of rejected positions is not shifted back)."""
    return mock.patch.object(rig_mtp_window, "cache_mtp_window", lambda *a, **k: None)


def _mtp_window_one_short() -> Any:
    """The window re-prefills one rejected row fewer than it should (shifted one row short):
    the draft KV of that row keeps what the rejected draft left."""
    orig: Any = rig_mtp_window.prepare_mtp_window

    def patched(*args: Any, **kwargs: Any) -> Any:
        rejected = (args[5] - 1).clamp(min=0)
        return orig(*args[:5], rejected, *args[6:], **kwargs)

    return mock.patch.object(rig_mtp_window, "prepare_mtp_window", patched)


def _host_table_by_rid() -> Any:
    """The host block table's row taken by request id, not slot (the same while they agree)."""
    allocate = Rig.allocate

    def patched(self: Rig, request: Any, num_tokens: int) -> None:
        slot = request.slot
        request.slot = request.rid % self.max_num_seqs
        try:
            allocate(self, request, num_tokens)
        finally:
            request.slot = slot

    return mock.patch.object(Rig, "allocate", patched)


def _idx_mapping_sorted() -> Any:
    """idx_mapping uploaded in slot order, not batch-row order."""
    orig = rig_step.h2d
    state: dict[str, int] = {}

    def h2d(dst: torch.Tensor, values: Any) -> None:
        if dst.data_ptr() == state.get("idx") and isinstance(values, list):
            values = sorted(values)
        orig(dst, values)

    init = Rig.__init__

    def rig_init(self: Rig, *a: Any, **k: Any) -> None:
        init(self, *a, **k)
        state["idx"] = self.bufs.idx_mapping.data_ptr()

    stack = contextlib.ExitStack()
    stack.enter_context(mock.patch.object(rig_step, "h2d", h2d))
    stack.enter_context(mock.patch.object(Rig, "__init__", rig_init))
    return stack


def _release_keeps_table_row() -> Any:
    """A finished request's host table row is not cleared (its slot's next owner rewrites the
    whole row when it allocates, before any step reads it)."""
    release = Rig.release

    def patched(self: Rig, request: Any) -> None:
        row = self._bt_host[request.slot].copy()
        release(self, request)
        self._bt_host[request.slot] = row

    return mock.patch.object(Rig, "release", patched)


def _mtp_cache_written_by_row() -> Any:
    return _by_row(rig_mtp_window, "cache_mtp_window", 4)


def _gather_one_row_past() -> Any:
    orig = rig_step.gather_block_tables

    def patched(src: Any, idx: Any, dst: torch.Tensor, n: int, padded: int, *rest: Any) -> None:
        # `i <= num_reqs` for `i < num_reqs`: one row past the batch is treated as a request
        n = min(n + 1, dst.shape[0])
        orig(src, idx, dst, n, max(padded, n), *rest)

    return mock.patch.object(rig_step, "gather_block_tables", patched)


def _shared_block_freed_early() -> Any:
    """A finished request frees every block it held, shared ones too (a reference count
    ignored): the next arrival is given a block another request still reads as its prefix."""
    release = BlockAllocator.release

    def patched(self: BlockAllocator, blocks: list[int]) -> None:
        for block in blocks:
            self.sharers.pop(block, None)
        release(self, blocks)

    return mock.patch.object(BlockAllocator, "release", patched)


def _hit_shares_partial_block() -> Any:
    """A prefix hit also takes its owner's next, partly filled block (no copy-on-write): the
    new request's prefill writes its own tokens into the block the owner is still using."""
    share = Rig.share

    def patched(self: Rig, request: Any, owner: Any) -> None:
        share(self, request, owner)
        if len(owner.blocks) > len(request.blocks):
            request.blocks.append(owner.blocks[len(request.blocks)])
            self._bt_host[request.slot, len(request.blocks) - 1] = request.blocks[-1]

    return mock.patch.object(Rig, "share", patched)


def _draft_positions_not_clamped() -> Any:
    """The drafter's position update without its max_model_len clamp: a request near the
    end drafts at positions past its block-table row."""
    unclamped = 1 << 30
    prepare: Any = rig_eagle.prepare_eagle_decode
    update: Any = rig_routines.update_eagle_draft_inputs

    def prepare_patched(*args: Any) -> Any:
        return prepare(*args[:9], unclamped, *args[10:])

    def update_patched(*args: Any) -> Any:
        return update(*args[:10], unclamped, *args[11:])

    stack = contextlib.ExitStack()
    stack.enter_context(mock.patch.object(rig_eagle, "prepare_eagle_decode", prepare_patched))
    stack.enter_context(
        mock.patch.object(rig_routines, "update_eagle_draft_inputs", update_patched)
    )
    return stack


MUTANTS: tuple[Mutant, ...] = (
    Mutant("block-table-row-off", "target", ("block_table", "kv_cache"), "flash_attn",
           "each request gathers the block-table row of its neighbour", _block_table_row_off),
    Mutant("slot-one-off", "target", ("slot_mapping", "kv_cache"), "flash_attn",
           "slot mapping one slot past each token's own", _slot_one_off),
    Mutant("pad-row-writes-real-slot", "target", ("slot_mapping", "kv_cache"), "flash_attn",
           "padded tokens get the first request's slot instead of the pad slot",
           _pad_row_writes_real_slot, {"NONE": "eager steps have no padded rows"}),
    Mutant("last-token-one-off", "draft_prefill", ("eagle.last_token_indices",
           "eagle.draft_tokens"), "flash_attn",
           "last_token_indices one row before the last accepted token", _last_token_one_off),
    Mutant("rejected-not-counted", "target", ("verify.num_rejected", "eagle.last_token_indices",
           "eagle.draft_tokens"), "flash_attn",
           "num_rejected left at zero: the draft continues from rejected tokens",
           _rejected_not_counted),
    Mutant("full-acceptance-one-short", "target", ("verify.num_accepted",
           "eagle.last_token_indices"), "flash_attn",
           "a request that accepts every draft is counted one short", _full_acceptance_one_short),
    Mutant("draft-seq-len-carried", "draft_decode", ("eagle.seq_lens", "eagle.draft_tokens"),
           "flash_attn", "draft seq_lens carried over from the previous draft position",
           _draft_seq_len_carried),
    Mutant("draft-position-carried", "draft_decode", ("eagle.seq_lens", "eagle.positions",
           "eagle.draft_tokens"), "flash_attn",
           "draft positions carried over from the previous draft position",
           _draft_position_carried),
    Mutant("target-seq-lens-short", "target", ("target.seq_lens", "kv_cache", "target.hidden"),
           "flash_attn", "seq_lens uploaded before the step's last token is counted",
           _target_seq_lens_short),
    Mutant("device-table-not-refreshed", "target", ("state.block_table", "block_table",
           "kv_cache"), "flash_attn",
           "blocks allocated after the first step never reach the device table",
           _device_table_not_refreshed),
    Mutant("stale-csr-offsets", "target", ("target.kv_indptr", "draft.kv_indptr", "kv_cache"),
           "flashinfer", "kv_indptr kept from the previous, larger build", _stale_csr_offsets,
           # not equivalent under FULL_AND_PIECEWISE (as it was claimed before the live
           # schedules): the live schedule's first mixed build follows larger capture builds,
           # and the target's K/V of step 0 differs from the reference (bench --equivalent)
           tracked=True),
    Mutant("csr-pages-previous-table", "target", ("target.kv_indices", "draft.kv_indices"),
           "flashinfer", "kv_indices built from the previous build's block table",
           _csr_pages_from_previous_table),
    Mutant("draft-last-page-len-off", "draft_decode", ("draft.last_page_len",
           "eagle.draft_tokens"), "flashinfer",
           "the draft's last_page_len one short", _last_page_len_off),
    Mutant("decode-pad-row-writes-committed-kv", "draft_decode", ("slot_mapping", "kv_cache"),
           "flash_attn", "padded draft-decode rows get request 0's first slot, not the pad slot",
           _decode_pad_row_writes_committed_kv, {"NONE": "eager steps have no padded rows"}),
    Mutant("pad-slot-zero", "target", ("slot_mapping", "kv_cache"), "flash_attn",
           "padded tokens write slot 0 (the null block) instead of skipping (-1)", _pad_slot_zero,
           {"NONE": "eager steps have no padded rows"}),
    Mutant("decode-draft-row-off", "draft_decode", ("eagle.draft_tokens", "eagle.input_ids"),
           "flash_attn", "each request takes its neighbour's sampled draft token",
           _decode_draft_row_off),
    Mutant("decode-hidden-row-off", "draft_decode", ("eagle.hidden", "eagle.draft_tokens"),
           "flash_attn", "draft hidden rows one request off after each decode step",
           _decode_hidden_row_off),
    Mutant("next-token-row-off", "target", ("verify.next_tokens", "eagle.draft_tokens"),
           "flash_attn", "the bonus token goes to the neighbouring request", _next_token_row_off),
    Mutant("kv-write-one-short", "target", ("kv_cache", "target.hidden"), "flash_attn",
           "KV writes stop one token short of num_tokens", _kv_write_one_short),
    Mutant("draft-kv-write-one-short", "draft_prefill", ("kv_cache",), "flash_attn",
           "the draft layers' KV writes stop one row short (the target's are whole)",
           _draft_kv_write_one_short),
    # a later phase corrupts what an earlier one wrote right (issue 27: findings that locate)
    Mutant("draft-kv-into-target-layer", "draft_prefill", ("kv_cache",), "flash_attn",
           "the draft layers write their K/V into the first target layer's cache",
           _draft_kv_into_target_layer),
    Mutant("draft-shifts-hidden-in-place", "draft_prefill", ("target.hidden",), "flash_attn",
           "the draft prefill shifts the target's hidden rows in place, not in its copy",
           _draft_shifts_hidden_in_place),
    Mutant("draft-csr-len-carried", "draft_decode", ("draft.last_page_len", "draft.kv_indptr",
           "eagle.draft_tokens"), "flashinfer",
           "the draft's CSR built from the previous draft position's lengths",
           _draft_csr_len_carried),
    # request identity (issue 27): invisible while batch row = request slot
    Mutant("block-table-by-row", "target", ("block_table", "kv_cache", "target.hidden"),
           "flash_attn", "the block table gathered by batch row instead of request slot",
           _block_table_by_row),
    Mutant("mtp-cache-by-row", "draft_prefill", ("mtp.cached_ids", "mtp.cached_hidden",
           "eagle.draft_tokens", "kv_cache"), "flash_attn",
           "the MTP window's per-request cache read and written by batch row, not slot",
           _mtp_cache_by_row, preset="tiny-deepseek-mtp2",
           plan={"num_speculative_tokens": 2}),  # two modules: K a multiple of 2
    Mutant("mtp-window-not-cached", "draft_prefill", ("mtp.cached_ids", "mtp.cached_hidden",
           "eagle.draft_tokens", "kv_cache"), "flash_attn",
           "the MTP window's tail is not cached: re-prefilled draft KV is not shifted back",
           _mtp_window_not_cached, preset="tiny-deepseek-mtp2",
           plan={"num_speculative_tokens": 2}),
    Mutant("mtp-window-one-short", "draft_prefill", ("eagle.draft_tokens", "kv_cache",
           "eagle.last_token_indices"), "flash_attn",
           "the MTP window shifted back one rejected row short", _mtp_window_one_short,
           preset="tiny-deepseek-mtp2", plan={"num_speculative_tokens": 2}),
    # held out (issue 27): written before any tuning, evaluated as they are
    Mutant("host-table-by-rid", "target", ("state.block_table", "block_table", "kv_cache"),
           "flash_attn", "the host block table row taken by request id instead of slot",
           _host_table_by_rid, held_out=True),
    Mutant("idx-mapping-sorted", "target", ("target.idx_mapping", "block_table", "kv_cache"),
           "flash_attn", "idx_mapping uploaded in slot order instead of batch-row order",
           _idx_mapping_sorted, held_out=True),
    Mutant("release-keeps-table-row", "target", ("state.block_table",), "flash_attn",
           "a finished request's host table row is left in place", _release_keeps_table_row,
           {"NONE": "the slot's next owner rewrites the whole row before a step reads it",
            "FULL_AND_PIECEWISE": "the slot's next owner rewrites the whole row first"},
           held_out=True),
    Mutant("mtp-cache-written-by-row", "draft_prefill", ("mtp.cached_ids", "mtp.cached_hidden",
           "eagle.draft_tokens", "kv_cache"), "flash_attn",
           "the MTP window's tail cached by batch row, read back by slot",
           _mtp_cache_written_by_row, preset="tiny-deepseek-mtp2",
           plan={"num_speculative_tokens": 2}, held_out=True),
    Mutant("gather-one-row-past", "target", ("target.idx_mapping", "block_table"),
           "flash_attn", "`<=` for `<`: gather_block_tables treats the row past the batch as "
           "a request, reading idx_mapping's padding", _gather_one_row_past),
    # prefix-cache hits that share blocks (issue 27)
    Mutant("shared-block-freed-early", "target", ("kv_cache",), "flash_attn",
           "a finished request frees the blocks it shares with a running one",
           _shared_block_freed_early),
    Mutant("hit-shares-partial-block", "target", ("kv_cache",), "flash_attn",
           "a prefix hit also takes its owner's partly filled block (no copy-on-write)",
           _hit_shares_partial_block),
    # requests reaching max_model_len (issue 27)
    Mutant("draft-positions-not-clamped", "draft_decode", ("eagle.positions", "block_table",
           "slot_mapping", "kv_cache"), "flash_attn",
           "draft positions advance past max_model_len - 1 (no clamp)",
           _draft_positions_not_clamped),
)  # fmt: skip


def by_name(name: str) -> Mutant:
    return next(m for m in MUTANTS if m.name == name)


@contextlib.contextmanager
def planted(mutant: Mutant) -> Iterator[None]:
    with mutant.patch():
        yield
