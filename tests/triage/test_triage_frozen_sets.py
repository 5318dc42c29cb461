"""Hold-out discipline for the held-out sets of issue 29 that became dev sets after their one
read (heldout-2, heldout-3): each is pinned as committed before the rules of its round were
written, keeps the first frozen set's schema, and shares no report with any other labelled set
(dev sets, the other held-out sets, the calibration's FIT_SOURCES) nor with the knowledge base
triage ships (a similar-report hit would leak the label). heldout-4 onwards are pinned, one row
each, by `test_heldout_sets.py`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from eaglegraph.known import triage_calibration as cal
from eaglegraph.known.report_kb import load_reports
from eaglegraph.results.triage import CATEGORIES

from .helpers_triage import DEV_SETS, HERE

DATA = HERE / "data"
# Each set's SHA-256 as committed, before any rule of its round was written: heldout-2 before
# the method change, heldout-3 before the second round's rules.
FROZEN: dict[str, str] = {
    "heldout-2.jsonl": "a3df7084c690414f10831c6ad201f094d8ced65f9ce3bb7e7aeb29114e799dc2",
    "heldout-3.jsonl": "d75a18f549a9ad251c00ab4b0a0f3f1db466bbdcf75eb89ad6ce392da748318b",
}
LABELLED = (
    *DEV_SETS,
    DATA / "heldout-frozen.jsonl",
    *(DATA / name for name in FROZEN),
    *(HERE.parents[1] / src for src in cal.FIT_SOURCES),
)


def _load(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _urls(path: Path) -> set[str]:
    return {str(r.get("url") or r.get("source")).rstrip("/") for r in _load(path)}


@pytest.mark.parametrize("name", FROZEN)
def test_frozen_set_is_as_committed(name: str) -> None:
    assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == FROZEN[name]


@pytest.mark.parametrize("name", FROZEN)
def test_frozen_set_has_the_schema_of_the_first_frozen_set(name: str) -> None:
    keys = list(_load(DATA / "heldout-frozen.jsonl")[0])
    reports = _load(DATA / name)
    assert len(reports) >= 20
    for r in reports:
        assert list(r) == keys, r["url"]
        assert r["category"] in CATEGORIES, r["url"]
        assert r["url"].startswith("https://github.com/") and r["log_excerpt"].strip()
        assert r["url"].rstrip("/").endswith(f"/{r['number']}"), r["url"]
    assert len({r["url"] for r in reports}) == len(reports)


@pytest.mark.parametrize("name", FROZEN)
def test_frozen_set_shares_no_report_with_other_sets_or_knowledge_base(name: str) -> None:
    path = (DATA / name).resolve()
    held = _urls(path)
    others = {p.resolve() for p in LABELLED} - {path}
    assert len(others) >= len(DEV_SETS) + 2
    for other in sorted(others):
        assert not held & _urls(other), other
    assert not held & {r.url.rstrip("/") for r in load_reports()}
