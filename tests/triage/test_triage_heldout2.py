"""Hold-out discipline for `data/heldout-2.jsonl` (issue 29): the set is frozen as committed,
its reports are not in any dev set the rules were developed on nor in the knowledge base triage
ships (a similar-report hit would leak the label). It was reported once and is a dev set now,
one of the calibration's FIT_SOURCES (`known.triage_calibration`)."""

from __future__ import annotations

import hashlib
import json

from eaglegraph.known import triage_calibration as cal
from eaglegraph.known.report_kb import load_reports
from eaglegraph.results.triage import CATEGORIES

from .helpers_triage import DEV_SETS, HERE

DATA = HERE / "data"
HELDOUT2 = DATA / "heldout-2.jsonl"
# The SHA-256 of the file as committed before any rule of the method change was written.
FROZEN_SHA256 = "a3df7084c690414f10831c6ad201f094d8ced65f9ce3bb7e7aeb29114e799dc2"


def _load(path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _urls(path) -> set[str]:
    return {str(r.get("url") or r.get("source")) for r in _load(path)}


def test_heldout2_is_frozen_as_committed() -> None:
    assert hashlib.sha256(HELDOUT2.read_bytes()).hexdigest() == FROZEN_SHA256


def test_heldout2_has_the_schema_of_the_first_frozen_set() -> None:
    keys = list(_load(DATA / "heldout-frozen.jsonl")[0])
    reports = _load(HELDOUT2)
    assert len(reports) >= 20
    for r in reports:
        assert list(r) == keys, r["url"]
        assert r["category"] in CATEGORIES, r["url"]
        assert r["url"].startswith("https://github.com/") and r["log_excerpt"].strip()
    assert len({r["url"] for r in reports}) == len(reports)


def test_heldout2_shares_no_report_with_dev_calibration_or_knowledge_base() -> None:
    held = _urls(HELDOUT2)
    fit = [HERE.parents[1] / src for src in cal.FIT_SOURCES if not src.endswith("heldout-2.jsonl")]
    for path in (*DEV_SETS, *fit):
        assert not held & _urls(path), path
    assert not held & {r.url for r in load_reports()}
