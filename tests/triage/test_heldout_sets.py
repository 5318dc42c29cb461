"""Hold-out discipline for the frozen held-out sets `data/heldout-N.jsonl` (issue 29), one row of
FROZEN each.

Each set shares no report with any labelled set the rules, the calibration or the knowledge base
were built from, names no thread those sets already cite (a fix PR, a linked issue), and cites
none of their reports itself: a report in both would let a rule tuned on it, or a similar-report
hit on the shipped knowledge base, leak its label into the figures, and a citation either way
would tie a held-out report to a known bug. Overlap is checked every way a report can be named
(`frozen_sets.overlaps`: repository + number, URL, a mention in either direction). Each set is
pinned by its SHA-256 at the commit that completed it (nobody edits it afterwards) and held to
the size, engine mix and fix count it was gathered for (its README section). A new set is one
row here.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from eaglegraph.known.triage_categories import CATEGORIES

from .frozen_sets import IN_SCOPE_REPOS, ROOT, SERVED_OWNERS, keys, load, other_files, overlaps, url

DATA = ROOT / "tests" / "triage" / "data"


@dataclass(frozen=True)
class Frozen:
    """A frozen held-out set and what it was gathered to be."""

    name: str
    sha256: str
    min_reports: int
    min_served: int = 0  # reports from vllm-project/* and sgl-project/*
    max_outside: int | None = None  # reports from engines outside vLLM/SGLang/TensorRT-LLM
    min_each_main: int = 0  # reports from vllm-project/vllm and from sgl-project/sglang, each
    max_ascend: int | None = None  # reports from vllm-project/vllm-ascend
    max_per_category: int | None = None
    min_fix_refs: int = 0

    @property
    def path(self) -> Path:
        return DATA / f"{self.name}.jsonl"


FROZEN = (
    Frozen(
        "heldout-4",
        "ea41715cdf4b7855f5b9ee6b3e28d6c7127472fa4be1da97de9ffaec28439b28",
        min_reports=45,
    ),
    Frozen(
        "heldout-5",
        "8bd6408f3f4d0e611c1d1e6915801646ad8cb53408607e16b580830ed7532a9d",
        min_reports=40,
        min_served=30,
        max_outside=5,
        min_fix_refs=10,
    ),
    Frozen(
        "heldout-6",
        "f7ee692b7534549b79deb4b1011e1e88c9128c8d6ac7a179b075496738af2c12",
        min_reports=40,
        min_served=32,
        max_outside=4,
        min_fix_refs=10,
    ),
    Frozen(
        "heldout-7",
        "f5341c181d94e4fd4e7646054b26653668e60b1c9bd1fe081400c64aba721b8e",
        min_reports=40,
        min_served=32,
        max_outside=4,
        min_each_main=12,
        max_ascend=8,
        min_fix_refs=10,
    ),
    Frozen(
        "heldout-8",
        "007a45928c454d5d3968246083c4403f0d9513e498cfbf368bc64c4dee324141",
        min_reports=30,
        min_served=24,
        max_outside=4,
        min_each_main=9,
        max_ascend=6,
        max_per_category=10,
        min_fix_refs=10,
    ),
    Frozen(
        "heldout-9",
        "97f3ea46a53dd1f8aad2e0204dfd5ccd6b0867e0220dcd6eb23d52a75c8f780b",
        min_reports=50,
        min_served=40,
        max_outside=6,
        min_each_main=13,
        max_ascend=3,
        max_per_category=11,
        min_fix_refs=10,
    ),
    Frozen(
        "heldout-10",
        "dfde4efcc06a4d1053c3810df7e87e4c6391d0253c447fb6950594c7d88ce93d",
        min_reports=36,
        min_served=31,
        max_outside=3,
        min_each_main=11,
        max_ascend=1,
        max_per_category=14,
        min_fix_refs=12,
    ),
    Frozen(
        "heldout-11",
        "cca400530a863be98f89cbe2be27f7edb61bbcbe45d9a9d17ba960fbd8dcf928",
        min_reports=40,
        min_served=38,
        max_outside=0,
        min_each_main=17,
        max_ascend=0,
        max_per_category=26,
        min_fix_refs=6,
    ),
    Frozen(
        "heldout-12",
        "4d11649acf09538c71bc7b5b13ef4a4dd7bc983378ccc3083a4541e64a0fe9da",
        min_reports=33,
        min_served=32,
        max_outside=0,
        min_each_main=14,
        max_ascend=1,
        min_fix_refs=7,
    ),
    Frozen(
        "heldout-13",
        "cf6e54c6dd63e35a43aacc0617509fd98eea2b0d41962f4d2175019e1257c437",
        min_reports=37,
        min_served=36,
        max_outside=0,
        min_each_main=16,
        max_ascend=0,
        min_fix_refs=15,
    ),
    Frozen(
        "heldout-14",
        "e982dd29477b6dad289af917c35ee1b607851df66697ad7cad4496afacce2f2a",
        min_reports=32,
        min_served=31,
        max_outside=0,
        min_each_main=14,
        max_ascend=0,
        min_fix_refs=14,
    ),
    Frozen(
        "heldout-15",
        "cb8ffc8232448422884b3ec013ebc6c5e3efb5469b7f0a0dcb270a46a60bbf0b",
        min_reports=28,
        min_served=24,
        max_outside=0,
        min_each_main=10,
        max_ascend=2,
        min_fix_refs=14,
    ),
    Frozen(
        "heldout-16",
        "0858ca94b62c5587b5114b11b6b58b544824ebad9fe7df78d7b2c802d6cecf63",
        min_reports=17,
        min_served=13,
        max_outside=2,
        min_each_main=1,
        max_ascend=3,
        min_fix_refs=9,
    ),
)
SETS = pytest.mark.parametrize("held", FROZEN, ids=lambda f: f.name)


@SETS
def test_the_set_is_frozen_as_committed(held: Frozen) -> None:
    digest = hashlib.sha256(held.path.read_bytes()).hexdigest()
    assert digest == held.sha256, (held.name, digest)


@SETS
def test_the_other_sets_are_found_and_named(held: Frozen) -> None:
    files = other_files(held.path)
    names = {p.name for p in files}
    assert {"heldout-frozen.jsonl", "heldout-2.jsonl", "heldout-3.jsonl"} <= names
    assert {"vllm.jsonl", "others.jsonl", "crash-logs-dev.jsonl"} <= names
    assert {f"{f.name}.jsonl" for f in FROZEN if f != held} <= names
    for path in files:
        records = load(path)
        assert records, path
        assert all(keys(r) and url(r) for r in records), path


@SETS
def test_the_set_meets_no_other_set(held: Frozen) -> None:
    met = {name: found for name, found in overlaps(held.path).items() if found}
    assert not met, (held.name, met)


@SETS
def test_the_set_has_the_schema_of_the_first_frozen_set(held: Frozen) -> None:
    schema = list(load(DATA / "heldout-frozen.jsonl")[0])
    reports = load(held.path)
    assert len(reports) >= held.min_reports, len(reports)
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


@SETS
def test_the_set_has_the_mix_it_was_gathered_for(held: Frozen) -> None:
    reports = load(held.path)
    repos = [r["repo"].lower() for r in reports]
    served = [r for r in repos if r.startswith(SERVED_OWNERS)]
    outside = [r for r in repos if not r.startswith(SERVED_OWNERS) and r not in IN_SCOPE_REPOS]
    assert len(served) >= held.min_served, len(served)
    assert held.max_outside is None or len(outside) <= held.max_outside, outside
    for main in ("vllm-project/vllm", "sgl-project/sglang"):
        assert repos.count(main) >= held.min_each_main, (main, repos.count(main))
    ascend = repos.count("vllm-project/vllm-ascend")
    assert held.max_ascend is None or ascend <= held.max_ascend, ascend
    counts = Counter(r["category"] for r in reports)
    assert held.max_per_category is None or max(counts.values()) <= held.max_per_category, counts
    assert sum(1 for r in reports if r["fix_ref"]) >= held.min_fix_refs


def test_every_frozen_held_out_set_has_its_row() -> None:
    """A held-out set committed without a row here would escape every check above."""
    on_disk = {p.stem for p in DATA.glob("heldout-*.jsonl")} - {"heldout-2", "heldout-3"}
    on_disk -= {"heldout-frozen"}
    assert on_disk == {f.name for f in FROZEN}, on_disk
