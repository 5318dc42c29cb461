"""The known-reports data from trackers other than vllm-project/vllm (SGLang, TensorRT-LLM,
EAGLE, SpecForge, DFlash, …): every line is a real public report in the one schema, cited by
its URL, unique, and none of it is a report held out for calibrating triage."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from eaglegraph.known import report_kb

ROOT = Path(__file__).resolve().parents[2]
OTHERS = ROOT / "eaglegraph" / "known" / "data" / "reports" / "others.jsonl"
# Reports held out for triage's acceptance check; the knowledge base must not hold them, or
# "similar known reports" would answer the held-out set with itself.
HELD_OUT = (
    ROOT / "tests" / "triage" / "data" / "heldout-frozen.jsonl",
    ROOT / "tests" / "triage" / "data" / "gathered-holdout.jsonl",
    *sorted((ROOT / "tests" / "triage" / "fixtures").glob("held-out*.jsonl")),
)

ID = re.compile(r"^[a-z0-9.-]+#(?P<n>\d+)$")
REPO = re.compile(r"^https://github\.com/(?P<repo>[\w.-]+/[\w.-]+)/\w+/(?P<n>\d+)$")


def _rows() -> list[dict[str, Any]]:
    lines = OTHERS.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


ROWS = _rows()


def _held_out_urls() -> set[str]:
    urls: set[str] = set()
    for path in HELD_OUT:
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    urls.add(json.loads(line)["url"].rstrip("/"))
    return urls


def test_at_least_220_reports_most_from_sglang() -> None:
    assert len(ROWS) >= 220
    engines = [row["engine"] for row in ROWS]
    assert engines.count("sglang") > len(ROWS) / 2
    assert len(set(engines)) >= 3


@pytest.mark.parametrize("row", ROWS, ids=[row["id"] for row in ROWS])
def test_schema(row: dict[str, Any]) -> None:
    # The schema has one home, the loader (eaglegraph.known.report_kb).
    assert set(row) == set(report_kb.KEYS)
    assert set(row["config"]) == set(report_kb.CONFIG_KEYS)
    assert report_kb.problems(row) == []


@pytest.mark.parametrize("row", ROWS, ids=[row["id"] for row in ROWS])
def test_source_and_id_agree(row: dict[str, Any]) -> None:
    url = REPO.match(row["url"])
    assert url, row["url"]
    assert url["repo"] != "vllm-project/vllm"  # the vLLM tracker has its own file
    ident = ID.match(row["id"])
    assert ident and ident["n"] == url["n"], row["id"]


@pytest.mark.parametrize("row", ROWS, ids=[row["id"] for row in ROWS])
def test_signature_is_quoted_from_the_log(row: dict[str, Any]) -> None:
    log = " ".join(row["log"].split())
    for line in row["signature"].splitlines():
        assert " ".join(line.split()) in log, line


def test_unique_by_url_and_id() -> None:
    urls = [row["url"] for row in ROWS]
    ids = [row["id"] for row in ROWS]
    assert len(set(urls)) == len(urls)
    assert len(set(ids)) == len(ids)


def test_no_held_out_report() -> None:
    held = _held_out_urls()
    assert not held & {row["url"] for row in ROWS}
