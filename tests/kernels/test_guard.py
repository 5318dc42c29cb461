"""Guards: every planted violation is logged exactly, valid inputs give identical outputs
with the guard on or off, and a guarded kernel never touches memory outside its buffers."""

from __future__ import annotations

import contextlib

import pytest
import torch

from eaglegraph.kernels._triton import interpreting
from eaglegraph.kernels.gather import gather_rows
from eaglegraph.kernels.guard import KERNEL_IDS, KERNEL_NAMES, Guard, GuardLog, Violation

from .guard_cases import CASES, Case
from .memcheck import AccessLog, record_accesses

needs_interpreter = pytest.mark.skipif(
    not interpreting(), reason="memory-access recording needs Triton's CPU interpreter"
)


def role_ids(case: Case) -> dict[str, int]:
    roles = sorted({role for role, _, _ in case.expected})
    return {role: 100 + i for i, role in enumerate(roles)}


def recording() -> contextlib.AbstractContextManager[AccessLog | None]:
    return record_accesses() if interpreting() else contextlib.nullcontext()


def allowed_regions(case: Case, log: GuardLog) -> list[torch.Tensor]:
    return [*case.buffers.values(), log.entries, log.count]


def test_registry_is_a_bijection() -> None:
    assert len(set(KERNEL_NAMES)) == len(KERNEL_NAMES)
    assert all(KERNEL_NAMES[i] == name for name, i in KERNEL_IDS.items())
    assert set(CASES) <= set(KERNEL_NAMES)


@pytest.mark.parametrize("name", list(CASES))
def test_guarded_matches_unguarded_on_valid_inputs(
    device: torch.device, gen: torch.Generator, name: str
) -> None:
    case = CASES[name](device, gen)
    snap = case.snapshot()
    case.run(None)
    unguarded = {k: case.buffers[k].clone() for k in case.outputs}
    case.restore(snap)
    log = GuardLog(16, device)
    case.run(Guard(log, role_ids(case)))
    for k in case.outputs:
        assert torch.equal(case.buffers[k], unguarded[k]), k
    assert log.read() == []


@pytest.mark.parametrize("name", list(CASES))
def test_guard_logs_each_planted_violation_without_oob_access(
    device: torch.device, gen: torch.Generator, name: str
) -> None:
    case = CASES[name](device, gen)
    case.plant(case.buffers)
    ids = role_ids(case)
    log = GuardLog(32, device)
    with recording() as accesses:
        case.run(Guard(log, ids))
    got = sorted((v.kernel, v.buffer_id, v.row, v.value) for v in log.read())
    want = sorted((case.kernel, ids[role], row, value) for role, row, value in case.expected)
    assert got == want
    assert log.total() == len(want) and not log.overflowed
    if case.fallback is not None:
        case.fallback(case.buffers)
    if accesses is not None:
        assert accesses.outside(allowed_regions(case, log)) == []


GQA_CASES = ["varlen_paged_attention", "csr_paged_prefill", "csr_paged_decode"]


@pytest.mark.parametrize(("num_heads", "num_kv_heads"), [(4, 2), (6, 3), (6, 2)])
@pytest.mark.parametrize("name", GQA_CASES)
def test_gqa_attention_logs_each_violation_once(
    device: torch.device, gen: torch.Generator, name: str, num_heads: int, num_kv_heads: int
) -> None:
    """With several kv heads (one program each, or several per program) and padded group
    rows, each planted violation is still logged exactly once and nothing is read outside
    the buffers."""
    case = CASES[name](device, gen, nh=num_heads, nkv=num_kv_heads)
    snap = case.snapshot()
    case.run(None)
    unguarded = {k: case.buffers[k].clone() for k in case.outputs}
    case.restore(snap)
    ids = role_ids(case)
    log = GuardLog(32, device)
    case.run(Guard(log, ids))
    assert log.read() == [] and all(torch.equal(case.buffers[k], unguarded[k]) for k in unguarded)
    case.restore(snap)
    case.plant(case.buffers)
    with recording() as accesses:
        case.run(Guard(log, ids))
    got = sorted((v.kernel, v.buffer_id, v.row, v.value) for v in log.read())
    assert got == sorted((case.kernel, ids[role], row, value) for role, row, value in case.expected)
    if case.fallback is not None:
        case.fallback(case.buffers)
    if accesses is not None:
        assert accesses.outside(allowed_regions(case, log)) == []


def test_log_overflow_keeps_counting_and_reset_clears(device: torch.device) -> None:
    src = torch.randn(4, 8, device=device)
    indices = torch.tensor([9, -1, 4, 100, 0, 5], device=device)
    out = torch.zeros(6, 8, device=device)
    log = GuardLog(3, device)
    guard = Guard(log)  # no buffer ids: the role logs as -1
    gather_rows(src, indices, out, 6, 4, guard=guard)
    assert log.total() == 5 and log.overflowed
    stored = log.read()
    assert len(stored) == 3
    all_bad = {
        Violation("gather_rows", -1, r, v) for r, v in [(0, 9), (1, -1), (2, 4), (3, 100), (5, 5)]
    }
    assert set(stored) <= all_bad
    log.reset()
    assert log.total() == 0 and log.read() == [] and not log.overflowed
    gather_rows(src, indices, out, 6, 4, guard=guard)  # the same log keeps working
    assert log.total() == 5


def test_custom_role_name(device: torch.device) -> None:
    src = torch.arange(6, device=device)
    out = torch.full((2,), 7, device=device)
    log = GuardLog(4, device)
    gather_rows(
        src,
        torch.tensor([1, 6], device=device),
        out,
        2,
        6,
        guard=Guard(log, {"positions_idx": 3}),
        role="positions_idx",
    )
    assert log.read() == [Violation("gather_rows", 3, 1, 6)]
    assert out.tolist() == [1, 0]  # integer output: the bad row is 0, not NaN


def test_guard_log_must_share_the_device(device: torch.device) -> None:
    if device.type == "cpu":
        pytest.skip("needs a second device type")
    src = torch.zeros(2, 2, device=device)
    with pytest.raises(ValueError):
        gather_rows(
            src,
            torch.zeros(1, dtype=torch.long, device=device),
            src,
            1,
            2,
            guard=Guard(GuardLog(1, "cpu")),
        )


# The bugs the guards exist for, reproduced unguarded: each reads outside its buffer.
# Planted values stay within the arena around each buffer so the read is harmless here.


def _unguarded_accesses(case: Case) -> list[int]:
    with record_accesses() as accesses:
        case.run(None)
    return accesses.outside(list(case.buffers.values()))


@needs_interpreter
def test_unguarded_stale_last_token_index_reads_out_of_bounds(
    device: torch.device, gen: torch.Generator
) -> None:
    """vLLM #39773: a stale last_token_indices row >= the graph's token count."""
    case = CASES["gather_rows"](device, gen)
    case.buffers["indices"][2] = case.buffers["src"].shape[0]
    assert _unguarded_accesses(case)


@needs_interpreter
def test_unguarded_piecewise_decode_reads_stale_indptr_out_of_bounds(
    device: torch.device, gen: torch.Generator
) -> None:
    """vLLM #39773: a PIECEWISE draft decode planning token rows past the real requests."""
    case = CASES["csr_paged_decode"](device, gen)
    n = case.buffers["kv_indices"].numel()
    case.buffers["kv_indptr"][4:] = n + 2  # stale indptr from an earlier, larger build
    case.buffers["last_page_len"][3:] = 2
    assert _unguarded_accesses(case)
    log = GuardLog(8, device)
    with record_accesses() as accesses:
        case.run(Guard(log))
    assert accesses.outside(allowed_regions(case, log)) == []
    assert {(v.row, v.value) for v in log.read()} == {(4, n + 2), (5, n + 2), (6, n + 2)}


@needs_interpreter
def test_unguarded_stale_padded_position_reads_out_of_bounds(
    device: torch.device, gen: torch.Generator
) -> None:
    """sglang #10892: a stale position in a padded row indexes past the block table."""
    case = CASES["compute_slot_mappings_padded_rows"](device, gen)
    n_cols, bs = case.buffers["block_table"].shape[1], 4
    case.buffers["positions"][5] = n_cols * bs + 1
    assert _unguarded_accesses(case)


@needs_interpreter
def test_unguarded_bad_slot_writes_out_of_bounds(
    device: torch.device, gen: torch.Generator
) -> None:
    case = CASES["write_kv"](device, gen)
    nb, bs = case.buffers["k_cache"].shape[:2]
    case.buffers["slot_mapping"][1] = nb * bs
    with record_accesses() as accesses:
        case.run(None)
    assert accesses.outside(list(case.buffers.values()), kinds=["store"])
