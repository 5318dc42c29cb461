"""Shared helpers for the triage tests (imported by path-based rootdir, no package needed)."""

from __future__ import annotations

import json
from pathlib import Path

from eaglegraph.known.triage_categories import Category
from eaglegraph.triage.diagnose import triage_text

HERE = Path(__file__).parent
FIXTURES = HERE.parent / "fixtures"
LOGS = HERE / "logs"
# The top-level keys every triage JSON document carries (`eaglegraph triage --json`).
TRIAGE_DOC_KEYS = (
    "schema",
    "framework",
    "version",
    "config",
    "category",
    "confidence",
    "evidence",
    "fixes",
    "reproduce",
    "alternatives",
    "primary_error",
    "secondary_errors",
    "phase",
)


def dev_reports() -> list[dict]:
    with open(FIXTURES / "crash-logs-dev.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def assert_evidence_points_at_lines(result, text: str) -> None:
    """Every evidence item names a real line whose text contains the quoted message."""
    lines = text.splitlines()
    items = list(result.evidence) + list(result.secondary_errors)
    if result.primary_error is not None:
        items.append(result.primary_error)
    for ev in items:
        assert 1 <= ev.line <= len(lines), (ev.line, len(lines))
        quoted = ev.text.strip()[:60]
        physical = lines[ev.line - 1]
        segments = physical.split("\r")
        assert any(quoted in seg for seg in segments) or quoted in physical, (
            ev.line,
            quoted,
            physical,
        )


def script(name: str):
    """scripts/NAME.py as a module, loaded once (the scripts are not a package)."""
    import importlib.util
    import sys

    key = f"{name}_script"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, HERE.parents[1] / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module


def eval_script():
    """scripts/triage_eval.py as a module (the acceptance figures the tests check)."""
    return script("triage_eval")


# Every labelled set of the dev/tune data (the tune and calibration parts are cut from these).
DEV_SETS = (
    FIXTURES / "crash-logs-dev.jsonl",
    FIXTURES / "crash-logs-dev2.jsonl",
    *sorted((HERE / "data").glob("gathered-*.jsonl")),
    *sorted((HERE / "fixtures").glob("held-out*.jsonl")),
)


# What the round tests (test_triage_*_round.py) put around the sentence or title under test: a
# launch line with spec decode on, and a worker traceback that ends in an asynchronous fault.
# A ticket title that names no class (the rounds' tables put the class in the body).
ROUND_BUG = "[Bug] speculative decoding on our cluster"
ROUND_LAUNCH = "```\npython -m engine.serve --model m --speculative-algorithm EAGLE3 --tp 2\n```\n"
ROUND_CRASH = (
    "```\nTraceback (most recent call last):\n"
    '  File "/opt/engine/worker.py", line 88, in step\n'
    "    out = self.proposer.propose(batch)\n"
    "RuntimeError: CUDA error: an illegal memory access was encountered\n```\n"
)


def round_ticket(title: str, body: str, log: str = ROUND_LAUNCH) -> str:
    """A ticket as `scripts/triage_eval.py` builds one: the title, the prose, the fenced log."""
    return f"{title}\n\n{body}\n\n{log}"


def assert_rests_on(text: str, kind: str, category: Category) -> None:
    """Triage reads `kind` in the text and names `category`."""
    r = triage_text(text)
    assert kind in r.evidence_kinds, r.evidence_kinds
    assert r.category == category, r.scores


def assert_not_read(text: str, kind: str, category: Category | None = None) -> None:
    """Triage does not read `kind` in the text (nor, when given, name `category`)."""
    r = triage_text(text)
    assert kind not in r.evidence_kinds, r.evidence_kinds
    if category is not None:
        assert r.category != category, r.scores
