"""Hold-out discipline for `data/heldout-4.jsonl` (issue 29): the fourth held-out set shares no
report with any labelled set the rules, the calibration or the knowledge base were built from.
A report that is in both would let a rule tuned on it, or a similar-report hit on the shipped
knowledge base, leak its label into the figures. Overlap is checked both ways a report can be
named: repository + number, and URL."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from eaglegraph.known.triage_categories import CATEGORIES

ROOT = Path(__file__).resolve().parents[2]
HELDOUT4 = ROOT / "tests" / "triage" / "data" / "heldout-4.jsonl"
# Every other set of real reports: dev and earlier held-out sets, fixtures, the shipped
# knowledge base, and the shared dev crash logs where this checkout has them.
OTHER_GLOBS = (
    (ROOT, "tests/triage/data/*.jsonl"),
    (ROOT, "tests/triage/fixtures/*.jsonl"),
    (ROOT, "tests/fixtures/*.jsonl"),
    (ROOT, "eaglegraph/known/data/reports/*.jsonl"),
    (ROOT.parent / "shared", "fixtures/crash-logs-dev*.jsonl"),
)
# The SHA-256 of the set as frozen at its completing commit: nobody edits it afterwards.
FROZEN_SHA256 = "ea41715cdf4b7855f5b9ee6b3e28d6c7127472fa4be1da97de9ffaec28439b28"
_GITHUB = re.compile(r"github\.com/([\w.-]+/[\w.-]+)/(?:issues|pull|discussions)/(\d+)")


def _load(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _other_files() -> list[Path]:
    files = [p for base, pattern in OTHER_GLOBS for p in sorted(base.glob(pattern))]
    return [p for p in files if p.resolve() != HELDOUT4.resolve()]


def _url(record: dict) -> str:
    return str(record.get("url") or record.get("source") or "").rstrip("/").lower()


def _keys(record: dict) -> set[str]:
    """The repo#number names of a record: its own fields and the thread its URL points at."""
    keys = set()
    if record.get("repo") and record.get("number"):
        keys.add(f"{record['repo'].lower()}#{int(record['number'])}")
    for field in ("url", "source"):
        match = _GITHUB.search(str(record.get(field) or ""))
        if match:
            keys.add(f"{match.group(1).lower()}#{int(match.group(2))}")
    return keys


def test_heldout4_is_frozen_as_committed() -> None:
    assert hashlib.sha256(HELDOUT4.read_bytes()).hexdigest() == FROZEN_SHA256


def test_other_sets_are_found_and_named() -> None:
    files = _other_files()
    names = {p.name for p in files}
    assert {"heldout-frozen.jsonl", "heldout-2.jsonl", "heldout-3.jsonl"} <= names
    assert {"vllm.jsonl", "others.jsonl", "crash-logs-dev.jsonl"} <= names
    for path in files:
        records = _load(path)
        assert records, path
        assert all(_keys(r) and _url(r) for r in records), path


def test_heldout4_shares_no_report_by_repo_and_number() -> None:
    held = {k for r in _load(HELDOUT4) for k in _keys(r)}
    for path in _other_files():
        other = {k for r in _load(path) for k in _keys(r)}
        assert not held & other, (path.name, sorted(held & other))


def test_heldout4_shares_no_report_by_url() -> None:
    held = {_url(r) for r in _load(HELDOUT4)}
    for path in _other_files():
        other = {_url(r) for r in _load(path)}
        assert not held & other, (path.name, sorted(held & other))


def test_heldout4_has_the_schema_of_the_first_frozen_set() -> None:
    keys = list(_load(HELDOUT4.with_name("heldout-frozen.jsonl"))[0])
    reports = _load(HELDOUT4)
    assert len(reports) >= 45
    for r in reports:
        assert list(r) == keys, r["url"]
        assert r["category"] in CATEGORIES, r["url"]
        assert r["url"].startswith(f"https://github.com/{r['repo']}/"), r["url"]
        assert r["url"].rstrip("/").endswith(f"/{r['number']}"), r["url"]
        assert r["signature"].strip() and r["log_excerpt"].strip(), r["url"]
    assert len({(r["repo"].lower(), r["number"]) for r in reports}) == len(reports)
