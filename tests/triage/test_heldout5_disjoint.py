"""Hold-out discipline for `data/heldout-5.jsonl` (issue 29): the fifth held-out set shares no
report with any labelled set the rules, the calibration or the knowledge base were built from,
and names no thread those sets already cite (a fix PR, a linked issue). A report in both would
let a rule tuned on it, or a similar-report hit on the shipped knowledge base, leak its label into
the figures. Overlap is checked every way a report can be named: repository + number, URL, and
a mention in another set's text. The set is also held to the engine mix it was gathered for:
eaglegraph's users support vLLM and SGLang, so most reports come from there."""

from __future__ import annotations

import hashlib
import json
import re

from eaglegraph.known.triage_categories import CATEGORIES

from .frozen_sets import GITHUB, ROOT, keys, load, other_files, url

HELDOUT5 = ROOT / "tests" / "triage" / "data" / "heldout-5.jsonl"
# The SHA-256 of the set as frozen at its completing commit: nobody edits it afterwards.
FROZEN_SHA256 = "8bd6408f3f4d0e611c1d1e6915801646ad8cb53408607e16b580830ed7532a9d"
_OWNER_REPO_REF = re.compile(r"\b([\w.-]+/[\w.-]+)#(\d+)")
# Short forms the labelled sets use in notes and fix_ref ("vllm#123", "sglang#45").
_SHORT_REF = re.compile(r"\b(vllm|sglang)#(\d+)")
_SHORT_REPO = {"vllm": "vllm-project/vllm", "sglang": "sgl-project/sglang"}
# Engines eaglegraph serves (vLLM and its satellites, SGLang) and the one other engine in scope.
_SERVED_OWNERS = ("vllm-project/", "sgl-project/")
_IN_SCOPE_REPOS = ("nvidia/tensorrt-llm",)


def _mentions(record: dict) -> set[str]:
    """Every GitHub thread a record's text names: links, owner/repo#N and vllm#N forms."""
    text = json.dumps(record, ensure_ascii=False)
    found = {f"{m.group(1).lower()}#{int(m.group(2))}" for m in GITHUB.finditer(text)}
    found |= {f"{m.group(1).lower()}#{int(m.group(2))}" for m in _OWNER_REPO_REF.finditer(text)}
    found |= {f"{_SHORT_REPO[m.group(1)]}#{int(m.group(2))}" for m in _SHORT_REF.finditer(text)}
    return found


def test_heldout5_is_frozen_as_committed() -> None:
    assert hashlib.sha256(HELDOUT5.read_bytes()).hexdigest() == FROZEN_SHA256


def test_other_sets_are_found_and_named() -> None:
    files = other_files(HELDOUT5)
    names = {p.name for p in files}
    assert {"heldout-frozen.jsonl", "heldout-2.jsonl", "heldout-3.jsonl"} <= names
    assert {"heldout-4.jsonl", "vllm.jsonl", "others.jsonl", "crash-logs-dev.jsonl"} <= names
    for path in files:
        records = load(path)
        assert records, path
        assert all(keys(r) and url(r) for r in records), path


def test_heldout5_shares_no_report_by_repo_and_number() -> None:
    held = {k for r in load(HELDOUT5) for k in keys(r)}
    for path in other_files(HELDOUT5):
        other = {k for r in load(path) for k in keys(r)}
        assert not held & other, (path.name, sorted(held & other))


def test_heldout5_shares_no_report_by_url() -> None:
    held = {url(r) for r in load(HELDOUT5)}
    for path in other_files(HELDOUT5):
        other = {url(r) for r in load(path)}
        assert not held & other, (path.name, sorted(held & other))


def test_heldout5_reports_are_not_threads_the_other_sets_cite() -> None:
    held = {k for r in load(HELDOUT5) for k in keys(r)}
    for path in other_files(HELDOUT5):
        cited = {k for r in load(path) for k in _mentions(r)}
        assert not held & cited, (path.name, sorted(held & cited))


def test_heldout5_has_the_schema_of_the_first_frozen_set() -> None:
    keys = list(load(HELDOUT5.with_name("heldout-frozen.jsonl"))[0])
    reports = load(HELDOUT5)
    assert len(reports) >= 40
    for r in reports:
        assert list(r) == keys, r["url"]
        assert r["category"] in CATEGORIES, r["url"]
        assert r["url"].startswith(f"https://github.com/{r['repo']}/"), r["url"]
        assert r["url"].rstrip("/").endswith(f"/{r['number']}"), r["url"]
        assert r["signature"].strip() and r["log_excerpt"].strip(), r["url"]
        assert r["root_cause"].strip(), r["url"]
        fix = r["fix_ref"]
        assert fix is None or re.fullmatch(r"[\w.-]+/[\w.-]+#\d+", fix), r["url"]
    assert len({(r["repo"].lower(), r["number"]) for r in reports}) == len(reports)


def test_heldout5_is_mostly_vllm_and_sglang() -> None:
    repos = [r["repo"].lower() for r in load(HELDOUT5)]
    served = [r for r in repos if r.startswith(_SERVED_OWNERS)]
    outside = [r for r in repos if not r.startswith(_SERVED_OWNERS) and r not in _IN_SCOPE_REPOS]
    assert len(served) >= 30, len(served)
    assert len(outside) <= 5, outside


def test_heldout5_names_enough_fixes_to_measure() -> None:
    assert sum(1 for r in load(HELDOUT5) if r["fix_ref"]) >= 10
