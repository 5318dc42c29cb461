"""The multi-rank rig on CPU: one gloo process per rank, supervised (issue 25).

Each test starts real rank processes; the planted faults (`EAGLEGRAPH_RANK_FAULT`) make one
rank diverge the way rank-local choices do in the engines, and the supervisor must name both
ranks within its deadline instead of hanging.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eaglegraph.probes.rank_limits import RankLimits
from eaglegraph.probes.ranks import RankRequest, check_layout, run_ranks
from eaglegraph.probes.spec import resolve_run
from eaglegraph.results.parallel import ParallelLayout
from eaglegraph.rig.options import PlanChoices


def _spec(preset: str = "tiny-llama-eagle3", k: int = 2):
    return resolve_run(
        preset,
        plan=PlanChoices(max_num_seqs=2, num_speculative_tokens=k),
        device="cpu",
        random_weights=True,
        max_model_len=128,
    )


def test_tp2_replay_equals_eager_and_tp1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EAGLEGRAPH_RANK_FAULT", raising=False)
    run = run_ranks(RankRequest(_spec(), ParallelLayout(tp=2), args={"replay": True, "waves": 1}))
    assert [o.status for o in run.ranks] == ["ok", "ok"], [o.log_tail for o in run.ranks]
    assert run.findings == []
    r0, r1 = run.ranks
    assert r0.graphs == r1.graphs and r0.graphs  # the same plan on every rank
    # two all-reduces per decoder layer (attention, MLP), every rank the same number
    assert r0.collectives_per_forward > 0 and r0.collectives == r1.collectives > 0
    assert r0.replay_equals_eager is True and r1.replay_equals_eager is True
    assert run.single_rank is not None and run.single_rank.tokens > 0
    assert run.single_rank.equal == run.single_rank.tokens  # float32: every token
    # the vocab-parallel heads' logits are all-gathered, through the ledger like the rest
    assert r0.collective_ops.get("all_gather", 0) > 0
    assert r0.collective_ops == r1.collective_ops


def test_mtp_tp2_expert_parallel_replay_equals_eager_and_tp1(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """MLA, routed experts split by EP and an MTP draft sharing the target's vocab-parallel
    embedding and head: replay == eager on each rank, rank 0's tokens == TP 1's."""
    monkeypatch.delenv("EAGLEGRAPH_RANK_FAULT", raising=False)
    request = RankRequest(
        _spec("tiny-deepseek-mtp"), ParallelLayout(tp=2, ep=2),
        args={"replay": True, "waves": 1},
    )  # fmt: skip
    run = run_ranks(request)
    assert [o.status for o in run.ranks] == ["ok", "ok"], [o.log_tail for o in run.ranks]
    assert run.findings == []
    assert all(o.replay_equals_eager is True for o in run.ranks)
    assert run.single_rank is not None and run.single_rank.tokens > 0
    assert run.single_rank.equal == run.single_rank.tokens
    assert all(o.collective_ops.get("all_gather", 0) > 0 for o in run.ranks)


def test_planted_stall_is_named_within_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EAGLEGRAPH_RANK_FAULT", "stall:1:20")
    start = time.monotonic()
    run = run_ranks(RankRequest(_spec(), ParallelLayout(tp=2), limits=RankLimits(deadline_s=6)))
    assert time.monotonic() - start < 120
    by_id = {f.id: f for f in run.findings}
    stuck = by_id["ranks-stuck"]
    assert "rank 0 waits in all_reduce #20" in stuck.message
    assert "rank 1 is elsewhere (its last finished: all_reduce #19" in stuck.message
    assert "rank 1 issued no collective #20" in by_id["collective-mismatch"].message
    assert {o.status for o in run.ranks} <= {"stuck", "stopped"}


def test_planted_size_mismatch_names_both_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EAGLEGRAPH_RANK_FAULT", "shrink:1:20")
    run = run_ranks(RankRequest(_spec(), ParallelLayout(tp=2), limits=RankLimits(deadline_s=20)))
    mismatch = next(f for f in run.findings if f.id == "collective-mismatch")
    assert "collective #20" in mismatch.message
    assert "rank 0: all_reduce #20" in mismatch.message
    assert "rank 1: all_reduce #20" in mismatch.message
    sizes = [int(s.split("(")[1].split(" ×")[0]) for s in mismatch.message.split("; ")[:2]]
    assert sizes[0] == sizes[1] + 1
    assert not run.ok
    # the cause comes first; a peer's "connection reset" is labelled a consequence
    failed = [f for f in run.findings if f.id.startswith("rank-failed")]
    assert failed and failed[0].id == "rank-failed"


def test_dp_attention_refused_before_any_rank() -> None:
    with pytest.raises(Exception, match="DP attention"):
        check_layout(RankRequest(_spec(), ParallelLayout(tp=2, dp=2, dp_attention=True)))


def test_draft_at_tp1_refused_before_any_rank() -> None:
    with pytest.raises(Exception, match="a draft at TP 1"):
        check_layout(RankRequest(_spec(), ParallelLayout(tp=2, draft_tp=1)))
    check_layout(RankRequest(_spec(), ParallelLayout(tp=2, draft_tp=2)))  # the same as none


def test_capture_cli_dp2_json(tmp_path) -> None:
    out = tmp_path / "ranks.json"
    proc = subprocess.run(
        [sys.executable, "-m", "eaglegraph", "capture", "tiny-llama-eagle3", "--dp", "2",
         "--random-weights", "--max-num-seqs", "2", "-K", "2", "--save", str(out), "--json"],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["schema"] == "eaglegraph.ranks/1"
    assert doc["layout"]["dp"] == 2
    assert [r["dp_rank"] for r in doc["ranks"]] == [0, 1]
    assert all(r["status"] == "ok" for r in doc["ranks"])
    report = subprocess.run(
        [sys.executable, "-m", "eaglegraph", "report", str(out), "--no-color"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    assert "TP 1 · DP 2" in report.stdout


def test_probe_tp2_is_clean_on_every_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EAGLEGRAPH_RANK_FAULT", raising=False)
    request = RankRequest(
        _spec(), ParallelLayout(tp=2), task="probe", args={"modes": ["FULL"], "batches": [1]},
        command="probe",
    )  # fmt: skip
    run = run_ranks(request)
    assert [o.status for o in run.ranks] == ["ok", "ok"], [o.log_tail for o in run.ranks]
    probes = [o.probe for o in run.ranks]
    assert all(p is not None and p.cases for p in probes)
    assert [c.status for c in probes[0].cases] == [c.status for c in probes[1].cases]
    assert run.findings == []


def test_bad_layout_refused_before_any_rank() -> None:
    with pytest.raises(Exception, match="TP 3 does not divide the 4 attention heads"):
        check_layout(RankRequest(_spec(), ParallelLayout(tp=3)))


def test_sigterm_ends_every_rank_and_keeps_the_run(tmp_path) -> None:
    out = tmp_path / "ranks.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "eaglegraph", "capture", "tiny-llama-eagle3", "--tp", "2",
         "--random-weights", "--max-num-seqs", "2", "-K", "2", "--replay", "--save", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not _rank_workers(proc.pid):
        time.sleep(0.5)
    workers = _rank_workers(proc.pid)
    assert len(workers) == 2
    time.sleep(2)
    proc.terminate()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err[-2000:]
    for pid in workers:  # no rank outlives the command
        assert not Path(f"/proc/{pid}").exists() or "Z" in _state(pid)
    doc = json.loads(out.read_text())
    assert doc["interrupted"] == "SIGTERM"
    assert len(doc["ranks"]) == 2


def _rank_workers(parent: int) -> list[int]:
    out = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
            cmdline = (status.parent / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = next((ln.split()[1] for ln in text.splitlines() if ln.startswith("PPid:")), "")
        if ppid == str(parent) and b"eaglegraph.probes.rank_worker" in cmdline:
            out.append(int(status.parent.name))
    return out


def _state(pid: int) -> str:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return "Z"
    return next((ln for ln in text.splitlines() if ln.startswith("State:")), "")


@pytest.mark.parametrize(
    ("behavior", "diverges"), [("vllm-v1-0.11-dp", True), ("vllm-current", False)]
)
def test_probe_dp2_runs_the_agreement_over_gloo(behavior: str, diverges: bool) -> None:
    spec = resolve_run(
        "tiny-llama-eagle3",
        plan=PlanChoices(max_num_seqs=2, num_speculative_tokens=2, behavior=behavior),
        device="cpu",
        random_weights=True,
        max_model_len=128,
    )
    request = RankRequest(
        spec, ParallelLayout(dp=2), task="probe",
        args={"modes": ["FULL"], "batches": [1], "dp_seeds": 1}, command="probe",
    )  # fmt: skip
    run = run_ranks(request)
    assert [o.status for o in run.ranks] == ["ok", "ok"], [o.log_tail for o in run.ranks]
    named = [d for d in run.dp_agreement if d.scenario]
    assert named and all(d.profile == behavior for d in run.dp_agreement)
    # each named scenario's data says what this profile must do; the real replicas agree
    assert all(d.as_expected is not False for d in named)
    found = [f for f in run.findings if f.id.startswith("dp.")]
    assert bool(found) is diverges
    if diverges:
        assert any("rank 0" in f.message and "rank 1" in f.message for f in found)
