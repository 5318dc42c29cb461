"""What the frozen held-out sets' discipline tests share: every other set of real reports and the
ways a report is named (repository + number, URL), so that each `test_heldoutN_disjoint.py`
states only its own set's rules."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Every set of real reports: dev and held-out sets, fixtures, the shipped knowledge base, and the
# shared dev crash logs where this checkout has them.
OTHER_GLOBS = (
    (ROOT, "tests/triage/data/*.jsonl"),
    (ROOT, "tests/triage/fixtures/*.jsonl"),
    (ROOT, "tests/fixtures/*.jsonl"),
    (ROOT, "eaglegraph/known/data/reports/*.jsonl"),
    (ROOT.parent / "shared", "fixtures/crash-logs-dev*.jsonl"),
)
GITHUB = re.compile(r"github\.com/([\w.-]+/[\w.-]+)/(?:issues|pull|discussions)/(\d+)")


def load(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def other_files(held: Path) -> list[Path]:
    """Every set of real reports but `held`."""
    files = [p for base, pattern in OTHER_GLOBS for p in sorted(base.glob(pattern))]
    return [p for p in files if p.resolve() != held.resolve()]


def url(record: dict) -> str:
    return str(record.get("url") or record.get("source") or "").rstrip("/").lower()


def keys(record: dict) -> set[str]:
    """The repo#number names of a record: its own fields and the thread its URL points at."""
    out = set()
    if record.get("repo") and record.get("number"):
        out.add(f"{record['repo'].lower()}#{int(record['number'])}")
    for field in ("url", "source"):
        match = GITHUB.search(str(record.get(field) or ""))
        if match:
            out.add(f"{match.group(1).lower()}#{int(match.group(2))}")
    return out
