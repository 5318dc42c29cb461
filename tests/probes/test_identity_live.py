"""Request identity under a live schedule (issue 27): per-request state read by batch row
instead of request slot is invisible while rows equal slots (the padding cases) and is found,
named by buffer, by the live case; a gather that treats the row past the batch as a request
reads idx_mapping's padding, named as that buffer (never an "unmapped input")."""

from __future__ import annotations

from benchmarks.bench_mutants import probe_once
from benchmarks.mutants import by_name, planted
from tests.probes.shared_runs import clean_eager_run


def test_state_by_batch_row_is_found_by_the_live_case_only() -> None:
    with planted(by_name("block-table-by-row")):
        run = probe_once("flash_attn", "NONE", 3)
    by_case = {c.name: c for c in run.cases}
    assert set(by_case) == {"none-b3", "none-live", "none-capped"}
    assert all(c.status == "ok" for c in run.cases), [c.stderr for c in run.cases]
    assert by_case["none-b3"].hits == 0  # rows equal slots there: the bug cannot show
    live = by_case["none-live"]
    assert any(i.invariant == "block-table-rows" and i.buffer == "block_table"
               for i in live.invariants), live.invariants  # fmt: skip
    assert run.findings
    for f in run.findings:
        assert f.buffer and "unmapped" not in f.buffer, f.id


def test_one_row_past_the_batch_names_idx_mapping() -> None:
    with planted(by_name("gather-one-row-past")):
        run = probe_once("flash_attn", "FULL", 3, capture_sizes=(4, 16))
    hit = {(f.kind, f.phase, f.buffer, f.kernel) for f in run.findings}
    assert ("stale-read", "target", "target.idx_mapping", "gather_block_tables") in hit, hit


def test_clean_rig_live_case_sees_permuted_slots() -> None:
    """Also the schedule edges' clean run (`test_schedule_edges`) and the unmutated rig of
    `test_locate_replay`: one probe (`shared_runs.clean_eager_run`) serves all three. It runs
    at capture sizes 4 and 16; NONE captures no graph, so the sizes change none of its cases."""
    run = clean_eager_run()
    assert {c.schedule for c in run.cases} >= {"live", "capped"}
    assert all(c.status == "ok" for c in run.cases), [c.error for c in run.cases]
    assert not run.findings, [f.message for f in run.findings]
    live = next(c for c in run.cases if c.schedule == "live")
    steps = live.reproduction["schedule"]["steps"]
    assert any(s.get("order") for s in steps) and any(s.get("preempt") for s in steps)
    assert run.config["schedules"] == ["live", "capped"]
