"""Hold-out discipline for `data/heldout-3.jsonl` (issue 29): the third held-out set is frozen
as committed before any rule of its round changed, and shares no report with any other set
(heldout-frozen and heldout-2 are dev sets; since its one read heldout-3 is one too, and a fit
source of the calibration), nor with the knowledge base triage ships (a similar-report hit
would leak the label)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from eaglegraph.known import triage_calibration as cal
from eaglegraph.known.report_kb import load_reports
from eaglegraph.results.triage import CATEGORIES

from .helpers_triage import DEV_SETS, HERE

DATA = HERE / "data"
HELDOUT3 = DATA / "heldout-3.jsonl"
# The SHA-256 of the file as committed before any rule of this round was changed.
FROZEN_SHA256 = "d75a18f549a9ad251c00ab4b0a0f3f1db466bbdcf75eb89ad6ce392da748318b"
# Every other labelled set: the dev sets, the earlier held-out sets, the calibration's fit set.
OTHER_SETS = (
    *DEV_SETS,
    DATA / "heldout-frozen.jsonl",
    DATA / "heldout-2.jsonl",
    *(HERE.parents[1] / src for src in cal.FIT_SOURCES if not src.endswith("heldout-3.jsonl")),
)


def _load(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _urls(path: Path) -> set[str]:
    return {str(r.get("url") or r.get("source")).rstrip("/") for r in _load(path)}


def test_heldout3_is_frozen_as_committed() -> None:
    assert hashlib.sha256(HELDOUT3.read_bytes()).hexdigest() == FROZEN_SHA256


def test_heldout3_has_the_schema_of_the_first_frozen_set() -> None:
    keys = list(_load(DATA / "heldout-frozen.jsonl")[0])
    reports = _load(HELDOUT3)
    assert len(reports) >= 20
    for r in reports:
        assert list(r) == keys, r["url"]
        assert r["category"] in CATEGORIES, r["url"]
        assert r["url"].startswith("https://github.com/") and r["log_excerpt"].strip()
        assert r["url"].rstrip("/").endswith(f"/{r['number']}"), r["url"]
    assert len({r["url"] for r in reports}) == len(reports)


def test_heldout3_shares_no_report_with_other_sets_or_knowledge_base() -> None:
    held = _urls(HELDOUT3)
    for path in OTHER_SETS:
        assert not held & _urls(path), path
    assert not held & {r.url.rstrip("/") for r in load_reports()}
