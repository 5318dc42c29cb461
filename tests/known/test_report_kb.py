"""The shipped knowledge base of vllm-project/vllm reports (known/data/reports/vllm.jsonl): every
line a real public report in the one schema, cited by its URL, its signature quoted from its log,
unique across the shipped files, and none of it a report held out for triage's acceptance check.
The loader reads every shipped file once and keeps only valid entries."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from eaglegraph.known import report_kb
from eaglegraph.known.report_kb import KEYS, load_reports, problems, report_files

from .test_report_kb_others import HELD_OUT, ROOT

VLLM = ROOT / "eaglegraph" / "known" / "data" / "reports" / "vllm.jsonl"
VLLM_URL = re.compile(r"^https://github\.com/vllm-project/vllm/(?:issues|pull)/(?P<n>\d+)$")
MIN_VLLM = 150


def _rows(path: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


ROWS = _rows(VLLM)


def _held_out_urls() -> set[str]:
    return {row["url"].rstrip("/") for path in HELD_OUT if path.exists() for row in _rows(path)}


def test_vllm_file_is_large_and_all_vllm() -> None:
    assert len(ROWS) >= MIN_VLLM
    assert {row["engine"] for row in ROWS} == {"vllm"}
    assert len({row["category"] for row in ROWS}) >= 7  # every failure class is represented


@pytest.mark.parametrize("row", ROWS, ids=[row["id"] for row in ROWS])
def test_entry_schema_source_and_quoted_signature(row: dict[str, Any]) -> None:
    assert problems(row) == []
    assert set(row) == set(KEYS)
    m = VLLM_URL.match(row["url"])
    assert m, row["url"]
    assert row["id"] == f"vllm#{m['n']}"
    log = " ".join(row["log"].split())  # the signature is primary error lines of the log
    assert all(" ".join(line.split()) in log for line in row["signature"].splitlines())


def test_no_duplicates_across_shipped_files() -> None:
    urls = [
        json.loads(line)["url"]
        for _, text in report_files()
        for line in text.splitlines()
        if line.strip()
    ]
    assert len(urls) == len(set(urls))


def test_no_held_out_report() -> None:
    held = _held_out_urls()
    assert len(held) > 50
    assert not held & {row["url"] for row in ROWS}


def test_loader_reads_every_valid_entry_once() -> None:
    shipped = [
        json.loads(line) for _, text in report_files() for line in text.splitlines() if line.strip()
    ]
    valid = [row for row in shipped if not problems(row)]
    reports = load_reports()
    assert load_reports() is reports  # read and parsed once per process
    assert [r.url for r in reports] == [row["url"] for row in valid]
    assert len(reports) >= len(ROWS)


def test_problems_name_what_is_wrong() -> None:
    good = dict(ROWS[0])
    assert problems(good) == []
    assert problems({**good, "category": "crash"}) == ["category 'crash' is not a triage category"]
    assert problems({**good, "url": "https://example.com/x"})[0].startswith("url ")
    assert problems({**good, "log": "x" * (report_kb.LOG_LIMIT + 1)})[0].startswith("log is ")
    cfg = {**good["config"], "tp": 0}
    assert problems({**good, "config": cfg}) == ["config.tp must be a positive integer or null"]
    assert problems({k: v for k, v in good.items() if k != "fix"}) == ["missing fix"]
    assert problems("not a dict") == ["not a JSON object"]


def test_method_family() -> None:
    assert report_kb.method_family("deepseek_mtp") == "mtp"
    assert report_kb.method_family("qwen3_next_mtp") == "mtp"
    assert report_kb.method_family("eagle3") == "eagle3"
    assert report_kb.method_family("EAGLE") == "eagle"
    assert report_kb.method_family("[ngram]") == "ngram"
    assert report_kb.method_family("draft_model") == "draft_model"
    assert report_kb.method_family(None) is None
