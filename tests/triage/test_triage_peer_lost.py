"""A peer rank's lost connection is a consequence, never the root error (tp-dp.md §4.2, §4.4).

When one rank dies (an illegal memory access in a graph replay, an assertion), the surviving
ranks' next Gloo collective fails with `pair.cc ... Connection closed/reset by peer`. In a log
that merges the ranks' output, that line can come before the dying rank's own traceback; in a
survivor's log it may be the only error. Both were read as a root error before this signal.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eaglegraph.known.triage_signals import SECONDARY_SIGNALS
from eaglegraph.triage.diagnose import triage_text
from eaglegraph.triage.registry import match_line

GLOO_CLOSED = (
    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] "
    "Connection closed by peer [10.0.0.2]:51432"
)
GLOO_RESET = (
    "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error "
    "[127.0.0.1]:22045: Connection reset by peer"
)

# The survivor's log alone: nothing but the lost connection.
SURVIVOR = f"""\
[2025-06-01 10:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2580, in run_scheduler_process
    scheduler.event_loop_normal()
  File "/sgl-workspace/sglang/python/sglang/srt/distributed/parallel_state.py", line 1090, in broadcast_pyobj
    dist.broadcast(tensor_size, src=src, group=group)
{GLOO_CLOSED}
"""

# SGLang, TP=2: rank 0 (a survivor) prints its Gloo failure before rank 1's root error, an
# assertion inside the draft graph's capture. Read as a root error, the Gloo line was reported
# as the primary error (the first exception line); the assertion is.
MERGED = (
    SURVIVOR
    + """
[2025-06-01 10:00:01 TP1] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", line 387, in capture
    _capture_one_stream()
  File "/sgl-workspace/sglang/python/sglang/srt/speculative/eagle_draft_cuda_graph_runner.py", line 212, in capture_one_batch_size
    assert forward_batch.out_cache_loc is not None
AssertionError: out_cache_loc must be set before capturing the draft graph
"""
)


@pytest.mark.parametrize("line", [GLOO_CLOSED, GLOO_RESET])
def test_gloo_peer_lines_are_the_peer_lost_signal(line: str) -> None:
    ids = {p.id for p, _ in match_line(line)}
    assert "secondary.peer-lost" in ids
    assert "secondary.peer-lost" in SECONDARY_SIGNALS


def test_plain_connection_words_are_not_the_signal() -> None:
    for line in ("connection pool closed", "Closing connection to peer 3", "peer review"):
        assert "secondary.peer-lost" not in {p.id for p, _ in match_line(line)}


def test_the_dying_ranks_error_is_primary_not_the_survivors() -> None:
    res = triage_text(MERGED)
    assert res.primary_error is not None
    assert res.primary_error.text.startswith("AssertionError: out_cache_loc")
    assert res.category == "capture-failure" and res.phase.at_failure == "capture"
    assert any("Connection closed by peer" in e.text for e in res.secondary_errors)


def test_a_survivors_log_alone_points_at_the_other_ranks() -> None:
    res = triage_text(SURVIVOR)
    assert res.primary_error is None  # the lost connection is not a root error
    assert res.category == "other"
    assert res.scores["other"] == pytest.approx(1.5)
    assert "secondary.peer-lost" in {e.signal for e in res.secondary_errors}
    assert any(e.signal == "secondary.peer-lost" and e.category == "other" for e in res.evidence)


def test_a_wrapper_naming_the_peer_keeps_its_own_class() -> None:
    """sglang#4205 (held-out-2): the capture wrapper carries the Gloo text; still a capture failure."""
    path = Path(__file__).parent / "fixtures" / "held-out-2.jsonl"
    report = next(
        r
        for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())
        if r["number"] == 4205
    )
    res = triage_text(report["log_excerpt"])
    assert res.category == "capture-failure"
    assert res.primary_error is not None and res.primary_error.signal == "capture.failed"
