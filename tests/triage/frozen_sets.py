"""What the frozen held-out sets' discipline tests share: every other set of real reports and the
ways a report is named (repository + number, URL) and the ways two sets can meet, so that
`test_heldout_sets.py` states each set's own rules as one row."""

from __future__ import annotations

import json
import re
from pathlib import Path

from eaglegraph.known.triage_calibration import LEDGER

ROOT = Path(__file__).resolve().parents[2]
# Every set of real reports: dev and held-out sets, fixtures, the shipped knowledge base, and the
# shared dev crash logs where this checkout has them.
OTHER_GLOBS = (
    (ROOT, "tests/triage/data/*.jsonl"),
    (ROOT, "tests/triage/fixtures/*.jsonl"),
    (ROOT, "tests/fixtures/*.jsonl"),
    (ROOT, "eaglegraph/known/data/reports/*.jsonl"),
    (ROOT.parent / "shared", "fixtures/crash-logs-dev*.jsonl"),
)
GITHUB = re.compile(r"github\.com/([\w.-]+/[\w.-]+)/(?:issues|pull|discussions)/(\d+)")


def load(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


# The first-read ledger (known.triage_calibration.LEDGER) repeats the held-out sets' reports as
# verdicts; it is no set of its own.
NOT_A_SET = ROOT / LEDGER


def other_files(held: Path) -> list[Path]:
    """Every set of real reports but `held`."""
    files = [p for base, pattern in OTHER_GLOBS for p in sorted(base.glob(pattern))]
    return [p for p in files if p.resolve() not in (held.resolve(), NOT_A_SET.resolve())]


def url(record: dict) -> str:
    return str(record.get("url") or record.get("source") or "").rstrip("/").lower()


def keys(record: dict) -> set[str]:
    """The repo#number names of a record: its own fields and the thread its URL points at."""
    out = set()
    if record.get("repo") and record.get("number"):
        out.add(f"{record['repo'].lower()}#{int(record['number'])}")
    for field in ("url", "source"):
        match = GITHUB.search(str(record.get(field) or ""))
        if match:
            out.add(f"{match.group(1).lower()}#{int(match.group(2))}")
    return out


# Engines eaglegraph serves (vLLM and its satellites, SGLang) and the one other engine in scope.
SERVED_OWNERS = ("vllm-project/", "sgl-project/")
IN_SCOPE_REPOS = ("nvidia/tensorrt-llm",)
_OWNER_REPO_REF = re.compile(r"\b([\w.-]+/[\w.-]+)#(\d+)")
# Short forms the labelled sets use in notes and fix_ref ("vllm#123", "sglang#45").
_SHORT_REF = re.compile(r"\b(vllm|sglang|vllm-ascend)#(\d+)")
_SHORT_REPO = {
    "vllm": "vllm-project/vllm",
    "sglang": "sgl-project/sglang",
    "vllm-ascend": "vllm-project/vllm-ascend",
}


def mentions(record: dict) -> set[str]:
    """Every GitHub thread a record's text names: links, owner/repo#N and vllm#N forms."""
    text = json.dumps(record, ensure_ascii=False)
    found = {f"{m.group(1).lower()}#{int(m.group(2))}" for m in GITHUB.finditer(text)}
    found |= {f"{m.group(1).lower()}#{int(m.group(2))}" for m in _OWNER_REPO_REF.finditer(text)}
    found |= {f"{_SHORT_REPO[m.group(1)]}#{int(m.group(2))}" for m in _SHORT_REF.finditer(text)}
    return found


def overlaps(held: Path) -> dict[str, dict[str, list[str]]]:
    """Every way `held` meets another set, by that set's file name: a shared repo#number, a
    shared URL, a held report the other set cites, a report of the other set `held` cites."""
    mine = load(held)
    own = {k for r in mine for k in keys(r)}
    urls = {url(r) for r in mine}
    cites = {k for r in mine for k in mentions(r)} - own
    out: dict[str, dict[str, list[str]]] = {}
    for path in other_files(held):
        theirs = load(path)
        their_keys = {k for r in theirs for k in keys(r)}
        found = {
            "repo#number": sorted(own & their_keys),
            "url": sorted(urls & {url(r) for r in theirs}),
            "cited by it": sorted(own & {k for r in theirs for k in mentions(r)}),
            "cites it": sorted(cites & their_keys),
        }
        out[path.name] = {how: hits for how, hits in found.items() if hits}
    return out
