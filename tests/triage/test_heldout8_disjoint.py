"""Hold-out discipline for `data/heldout-8.jsonl` (issue 29): the eighth held-out set, the first
labelled by `data/LABELLING.md`, shares no report with any labelled set the rules, the calibration
or the knowledge base were built from (heldout-7 included), names no thread those sets already
cite (a fix PR, a linked issue), and cites none of their reports itself. A report in both would
let a rule tuned on it, or a similar-report hit on the shipped knowledge base, leak its label into
the figures; a citation either way would tie a held-out report to a known bug. Overlap is checked
every way a report can be named: repository + number, URL, and a mention in a record's text. The
set is also held to the engine mix it was gathered for: most reports from vLLM and SGLang, at
least 9 from each main repository, at most 6 from vllm-ascend, at most 4 from engines outside
vLLM/SGLang/TensorRT-LLM, and no category above 10 reports."""

from __future__ import annotations

import hashlib
import re
from collections import Counter

from eaglegraph.known.triage_categories import CATEGORIES

from .frozen_sets import (
    IN_SCOPE_REPOS,
    ROOT,
    SERVED_OWNERS,
    keys,
    load,
    other_files,
    overlaps,
    url,
)

HELDOUT8 = ROOT / "tests" / "triage" / "data" / "heldout-8.jsonl"
# The SHA-256 of the set as frozen at its completing commit: nobody edits it afterwards.
FROZEN_SHA256 = "007a45928c454d5d3968246083c4403f0d9513e498cfbf368bc64c4dee324141"


def test_heldout8_is_frozen_as_committed() -> None:
    digest = hashlib.sha256(HELDOUT8.read_bytes()).hexdigest()
    assert FROZEN_SHA256 and digest == FROZEN_SHA256, digest


def test_other_sets_are_found_and_named() -> None:
    files = other_files(HELDOUT8)
    names = {p.name for p in files}
    assert {"heldout-frozen.jsonl", "heldout-2.jsonl", "heldout-3.jsonl"} <= names
    assert {"heldout-4.jsonl", "heldout-5.jsonl", "heldout-6.jsonl"} <= names
    assert "heldout-7.jsonl" in names
    assert {"vllm.jsonl", "others.jsonl", "crash-logs-dev.jsonl"} <= names
    for path in files:
        records = load(path)
        assert records, path
        assert all(keys(r) and url(r) for r in records), path


def test_heldout8_meets_no_other_set() -> None:
    """No shared repo#number or URL, no held report another set cites, no citation from the
    held set of another set's report (`frozen_sets.overlaps`)."""
    met = {name: found for name, found in overlaps(HELDOUT8).items() if found}
    assert not met, met


def test_heldout8_has_the_schema_of_the_first_frozen_set() -> None:
    schema = list(load(HELDOUT8.with_name("heldout-frozen.jsonl"))[0])
    reports = load(HELDOUT8)
    assert len(reports) >= 30
    for r in reports:
        assert list(r) == schema, r["url"]
        assert r["category"] in CATEGORIES, r["url"]
        assert r["url"].startswith(f"https://github.com/{r['repo']}/"), r["url"]
        assert r["url"].rstrip("/").endswith(f"/{r['number']}"), r["url"]
        assert r["signature"].strip() and r["log_excerpt"].strip(), r["url"]
        assert r["root_cause"].strip(), r["url"]
        fix = r["fix_ref"]
        assert fix is None or re.fullmatch(r"[\w.-]+/[\w.-]+#\d+", fix), r["url"]
    assert len({(r["repo"].lower(), r["number"]) for r in reports}) == len(reports)


def test_heldout8_has_the_engine_mix_it_was_gathered_for() -> None:
    repos = [r["repo"].lower() for r in load(HELDOUT8)]
    served = [r for r in repos if r.startswith(SERVED_OWNERS)]
    outside = [r for r in repos if not r.startswith(SERVED_OWNERS) and r not in IN_SCOPE_REPOS]
    assert len(served) >= 24, len(served)
    assert len(outside) <= 4, outside
    assert repos.count("vllm-project/vllm") >= 9, repos.count("vllm-project/vllm")
    assert repos.count("sgl-project/sglang") >= 9, repos.count("sgl-project/sglang")
    assert repos.count("vllm-project/vllm-ascend") <= 6, repos.count("vllm-project/vllm-ascend")


def test_heldout8_has_no_category_above_ten() -> None:
    counts = Counter(r["category"] for r in load(HELDOUT8))
    assert max(counts.values()) <= 10, counts


def test_heldout8_names_enough_fixes_to_measure() -> None:
    assert sum(1 for r in load(HELDOUT8) if r["fix_ref"]) >= 10
