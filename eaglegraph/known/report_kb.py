"""The knowledge base of real public reports that ships with the tool, and its schema.

Each line of `known/data/reports/*.jsonl` is one public issue or pull request about speculative
decoding with CUDA graphs (or a CUDA-graph capture failure the tool can reproduce): its title,
link, engine, version as stated, the primary error lines and a log excerpt exactly as posted,
the configuration the thread states, the root cause and fix the thread gives, and a triage
category. `vllm.jsonl` holds vllm-project/vllm reports, `others.jsonl` those of other trackers.

Triage's "similar known reports" (`triage.similar`) ranks these entries against a log; the
weights of that ranking and the spellings it folds together are the rows below.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any

from eaglegraph.known.triage_categories import Category
from eaglegraph.known.triage_rules import DRAFT_MENTIONS

# An entry's link: a GitHub issue, pull request or discussion; its fix: a pull request or commit.
URL_FORM = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull|discussions)/\d+$")
FIX_FORM = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/(?:pull|commit)/[0-9a-f]+$")
# An engine or project name, lower case: vllm, sglang, trtllm, llama.cpp, vllm-ascend, …
ENGINE_FORM = re.compile(r"^[a-z][a-z0-9.-]*$")
LOG_LIMIT = 4000
CONFIG_KEYS: tuple[str, ...] = (
    "model",
    "method",
    "tp",
    "dp",
    "ep",
    "cudagraph_mode",
    "attention_backend",
    "gpu",
)
KEYS: tuple[str, ...] = (
    "id",
    "title",
    "url",
    "engine",
    "version",
    "signature",
    "log",
    "config",
    "root_cause",
    "fix",
    "category",
)


@dataclass(frozen=True)
class KnownReport:
    id: str
    title: str
    url: str
    engine: str
    version: str | None
    signature: str
    log: str
    # what the thread states of the serving configuration (CONFIG_KEYS); None where it does not
    config: Mapping[str, str | int | None]
    root_cause: str | None
    fix: str | None
    category: str


def problems(entry: Any) -> list[str]:
    """What is wrong with one parsed line of a reports file (empty when it is a valid entry)."""
    if not isinstance(entry, dict):
        return ["not a JSON object"]
    out = [f"missing {k}" for k in KEYS if k not in entry]
    if out:
        return out
    for key in ("id", "title", "url", "engine", "signature", "log", "category"):
        if not isinstance(entry[key], str) or not entry[key].strip():
            out.append(f"{key} must be a non-empty string")
    for key in ("version", "fix", "root_cause"):
        if entry[key] is not None and not isinstance(entry[key], str):
            out.append(f"{key} must be a string or null")
    if out:
        return out
    if not URL_FORM.match(entry["url"]):
        out.append(f"url {entry['url']!r} is not a GitHub issue or pull request")
    if entry["fix"] is not None and not FIX_FORM.match(entry["fix"]):
        out.append(f"fix {entry['fix']!r} is not a GitHub pull request or commit")
    if not ENGINE_FORM.match(entry["engine"]):
        out.append(f"engine {entry['engine']!r} is not a lower-case project name")
    if entry["category"] not in {c.value for c in Category}:
        out.append(f"category {entry['category']!r} is not a triage category")
    if len(entry["log"]) > LOG_LIMIT:
        out.append(f"log is {len(entry['log'])} characters (at most {LOG_LIMIT})")
    cfg = entry["config"]
    if not isinstance(cfg, dict):
        return [*out, "config must be an object"]
    for key in CONFIG_KEYS:
        if key not in cfg:
            out.append(f"config.{key} missing")
        elif key in ("tp", "dp", "ep"):
            if cfg[key] is not None and (not isinstance(cfg[key], int) or cfg[key] < 1):
                out.append(f"config.{key} must be a positive integer or null")
        elif cfg[key] is not None and not isinstance(cfg[key], str):
            out.append(f"config.{key} must be a string or null")
    return out


def from_json(entry: dict[str, Any]) -> KnownReport:
    """A valid entry (see `problems`) as a `KnownReport`; keys the schema does not name are
    ignored."""
    cfg = entry["config"]
    plain = {f.name: entry[f.name] for f in fields(KnownReport) if f.name != "config"}
    return KnownReport(config=MappingProxyType({k: cfg.get(k) for k in CONFIG_KEYS}), **plain)


def report_files() -> list[tuple[str, str]]:
    """(file name, text) of every shipped reports file, in name order."""
    folder = resources.files("eaglegraph.known").joinpath("data", "reports")
    if not folder.is_dir():
        return []
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".jsonl")), key=lambda f: f.name)
    return [(f.name, f.read_text(encoding="utf-8")) for f in files]


@lru_cache(maxsize=1)
def load_reports() -> tuple[KnownReport, ...]:
    """Every valid entry of the shipped files, once per process; a malformed line is skipped
    (the tests in tests/known/ reject it) so that triage never fails on the knowledge base."""
    out: list[KnownReport] = []
    seen: set[str] = set()
    for _name, text in report_files():
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if problems(entry) or entry["url"] in seen:
                continue
            seen.add(entry["url"])
            out.append(from_json(entry))
    return tuple(out)


# --- the ranking's rows (triage.similar) ------------------------------------------------------

# BM25 over signature tokens: the usual saturation and length normalisation.
BM25_K1 = 1.2
BM25_B = 0.75
# The signature counts this many times in an entry's document (title and log once).
SIGNATURE_WEIGHT = 2
# A known report is shown when its lexical score reaches this and it shares at least
# MIN_SHARED terms with the log; config facts only reorder reports that already match.
MIN_SCORE = 4.0
MIN_SHARED = 2
TOP_K = 5
# Each config fact the log and the report share raises the lexical score by this fraction.
FACT_WEIGHTS: dict[str, float] = {
    "engine": 0.15,
    "method": 0.2,
    "version": 0.1,
    "mode": 0.1,
    "backend": 0.1,
    "gpu": 0.05,
    "tp": 0.05,
}
# Versions this close (same major, minors apart at most) count as near.
VERSION_NEAR_MINORS = 2

# Phrasings of one error folded into one token, so "an illegal memory access was encountered"
# and `cudaErrorIllegalAddress` match each other.
ERROR_ALIASES: tuple[tuple[str, str], ...] = (
    (
        "cudaerrorillegaladdress",
        r"illegal memory access|cudaErrorIllegalAddress|CUDA_ERROR_ILLEGAL_ADDRESS|Xid 13\b|Xid 31\b",
    ),
    ("outofmemory", r"out of memory|OutOfMemoryError|\bOOM\b"),
    ("devicesideassert", r"device-side assert"),
    ("indexoutofbounds", r"index out of bounds|srcIndex < srcSelectDimSize|index < sizes\[i\]"),
    (
        "streamcaptureunsupported",
        r"cudaErrorStreamCaptureUnsupported|operation not permitted when stream is capturing",
    ),
    ("streamcaptureinvalidated", r"cudaErrorStreamCaptureInvalidated|capture (?:was )?invalidated"),
    ("misalignedaddress", r"misaligned address|cudaErrorMisalignedAddress"),
    ("shmbroadcast", r"No available shared memory broadcast block"),
    (
        "ncclwatchdog",
        r"Watchdog caught collective operation timeout|ProcessGroupNCCL[^\n]{0,200}?[Tt]imeout",
    ),
    ("rpctimeout", r"RPC call to \w+ timed out"),
    ("enginedead", r"EngineDeadError|EngineCore encountered an issue"),
    ("segfault", r"Segmentation fault|SIGSEGV"),
    (
        "tensorsizemismatch",
        r"Sizes of tensors must match|must match the size of tensor|size mismatch",
    ),
    ("gemmerror", r"Error occurred when running GEMM"),
)
# Words that say nothing about which failure it is (log furniture and prose).
_STOPWORDS = """
    the and for with from this that was were are not but you your have has had been when then
    than into over under while which what where there their they them its our out all any can
    could should would will may might also just only some such very more most other each per
    line file files error errors warning info debug traceback recent call last most self return
    args kwargs func wrapper decorate_context call _call_impl _wrapped_call_impl forward_call
    inner run main module lib python3 site packages dist usr local home root opt workspace venv
    python3.10 python3.11 python3.12 python3.13 none true false pid enginecore enginecore_dp0
    worker worker_tp0 worker_tp1 rank tp0 tp1 apiserver core.py exception raise raised bug
    describe reproduction environment version output using used use get set new old see same
"""
STOPWORDS: frozenset[str] = frozenset(re.split(r"\s+", _STOPWORDS.strip()))


def method_family(text: str | None) -> str | None:
    """The draft kind a method string names (eagle3, eagle, mtp, dflash, ngram, …)."""
    if not text:
        return None
    for family, pattern in (*DRAFT_MENTIONS, *_MORE_METHODS):
        if re.search(pattern, text, re.I):
            return family
    return None


_MORE_METHODS: tuple[tuple[str, str], ...] = (
    ("ngram", r"n-?gram|prompt[-_ ]lookup"),
    ("draft_model", r"draft[-_ ]model|draft[-_ ]target|standalone"),
    ("medusa", r"medusa"),
    ("dspark", r"dspark"),
    ("lookahead", r"lookahead"),
)
