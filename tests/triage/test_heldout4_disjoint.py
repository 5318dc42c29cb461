"""Hold-out discipline for `data/heldout-4.jsonl` (issue 29): the fourth held-out set shares no
report with any labelled set the rules, the calibration or the knowledge base were built from.
A report that is in both would let a rule tuned on it, or a similar-report hit on the shipped
knowledge base, leak its label into the figures. Overlap is checked both ways a report can be
named: repository + number, and URL."""

from __future__ import annotations

import hashlib

from eaglegraph.known.triage_categories import CATEGORIES

from .frozen_sets import ROOT, keys, load, other_files, url

HELDOUT4 = ROOT / "tests" / "triage" / "data" / "heldout-4.jsonl"
# The SHA-256 of the set as frozen at its completing commit: nobody edits it afterwards.
FROZEN_SHA256 = "ea41715cdf4b7855f5b9ee6b3e28d6c7127472fa4be1da97de9ffaec28439b28"


def test_heldout4_is_frozen_as_committed() -> None:
    assert hashlib.sha256(HELDOUT4.read_bytes()).hexdigest() == FROZEN_SHA256


def test_other_sets_are_found_and_named() -> None:
    files = other_files(HELDOUT4)
    names = {p.name for p in files}
    assert {"heldout-frozen.jsonl", "heldout-2.jsonl", "heldout-3.jsonl"} <= names
    assert {"vllm.jsonl", "others.jsonl", "crash-logs-dev.jsonl"} <= names
    for path in files:
        records = load(path)
        assert records, path
        assert all(keys(r) and url(r) for r in records), path


def test_heldout4_shares_no_report_by_repo_and_number() -> None:
    held = {k for r in load(HELDOUT4) for k in keys(r)}
    for path in other_files(HELDOUT4):
        other = {k for r in load(path) for k in keys(r)}
        assert not held & other, (path.name, sorted(held & other))


def test_heldout4_shares_no_report_by_url() -> None:
    held = {url(r) for r in load(HELDOUT4)}
    for path in other_files(HELDOUT4):
        other = {url(r) for r in load(path)}
        assert not held & other, (path.name, sorted(held & other))


def test_heldout4_has_the_schema_of_the_first_frozen_set() -> None:
    keys = list(load(HELDOUT4.with_name("heldout-frozen.jsonl"))[0])
    reports = load(HELDOUT4)
    assert len(reports) >= 45
    for r in reports:
        assert list(r) == keys, r["url"]
        assert r["category"] in CATEGORIES, r["url"]
        assert r["url"].startswith(f"https://github.com/{r['repo']}/"), r["url"]
        assert r["url"].rstrip("/").endswith(f"/{r['number']}"), r["url"]
        assert r["signature"].strip() and r["log_excerpt"].strip(), r["url"]
    assert len({(r["repo"].lower(), r["number"]) for r in reports}) == len(reports)
