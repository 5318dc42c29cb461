"""memdiff's verdict on draft tokens: a difference between the policies is a finding that
says where it starts and how to tell numerics from a pool bug."""

from __future__ import annotations

import dataclasses

import pytest

from eaglegraph.probes.memdiff import diff_runs
from eaglegraph.results.capture import CaptureRun
from eaglegraph.results.findings import Severity
from tests.reports.runs import cuda_run


def _with_tokens(run: CaptureRun, tokens: list[list[list[int]]], compiled: bool) -> CaptureRun:
    replay = {
        "schedule": "grow_shrink",
        "steps": len(tokens),
        "acceptance_rate": 0.0,
        "draft_tokens": tokens,
        "accepted": [[0] * len(step) for step in tokens],
        "descriptors": [],
    }
    return dataclasses.replace(run, replay=replay, config={**run.config, "compiled": compiled})


STEPS = [[[1, 2, 3]], [[4, 5, 6], [7, 8, 9]], [[1, 1, 1]]]


def test_identical_tokens_leave_no_finding() -> None:
    a = _with_tokens(cuda_run("shared"), STEPS, compiled=False)
    b = _with_tokens(cuda_run("dedicated"), STEPS, compiled=False)
    run = diff_runs(a, b, {})
    assert run.tokens_identical is True and run.findings == []


@pytest.mark.parametrize(("compiled", "hint"), [(True, "--no-compile"), (False, "probe")])
def test_differing_tokens_are_a_finding_with_the_first_step(compiled: bool, hint: str) -> None:
    other = [STEPS[0], [[4, 5, 6], [7, 8, 0]], [[1, 1, 2]]]
    a = _with_tokens(cuda_run("shared"), STEPS, compiled=compiled)
    b = _with_tokens(cuda_run("dedicated"), other, compiled=compiled)
    run = diff_runs(a, b, {})
    assert run.tokens_identical is False
    (finding,) = run.findings
    assert finding.id == "pool-changes-tokens" and finding.severity is Severity.WARNING
    assert "--pool shared and --pool dedicated in 2 of 3 steps, first at step 1" in finding.message
    assert finding.fix is not None and hint in finding.fix
