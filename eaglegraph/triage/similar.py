"""Similar known reports: rank the shipped knowledge base against a triaged log, offline.

A lexical ranking is enough and needs no model: BM25 over normalised signature tokens
(exception and CUDA error names, kernel and function names, file names; phrasings of one error
folded into one token by `known.report_kb.ERROR_ALIASES`), then the configuration facts both
reports state (engine, draft kind, version proximity, CUDA-graph mode, attention backend, GPU,
TP) raise the score of reports that already match on text. Every result says why it matches.

The knowledge base is read and indexed once per process, on the first triage that asks.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

from eaglegraph.known import report_kb as kb
from eaglegraph.known.report_kb import KnownReport
from eaglegraph.known.versions import parse_version
from eaglegraph.results.similar import SimilarReport
from eaglegraph.results.triage import TriageConfig, TriageResult

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
# The aliases match the lower-cased text (case-insensitive regexes are several times slower).
_ALIASES = tuple((token, re.compile(pattern.lower())) for token, pattern in kb.ERROR_ALIASES)
_SOURCE_SUFFIX = re.compile(r"\.(?:py|cu|cuh|cpp|cc|h|hpp)$")
# Lines of a pasted report worth reading for a signature: errors, asserts, frames, kernels.
_SIGNATURE_LINE = re.compile(
    r"Error|Exception|error:|assert|Assertion|failed|FAILED|illegal|out of memory|CUDA|cuda|"
    r"File \"|Traceback|Timed? ?out|timeout|hang|stuck|Segmentation|Xid|GEMM|NCCL|watchdog",
)
_QUERY_LINES = 400
_LINE_CHARS = 400


def tokens(text: str) -> list[str]:
    """Normalised signature tokens of a text, repeats kept (a document's term frequencies)."""
    low = text.lower()
    out = [token for token, pattern in _ALIASES for _ in pattern.finditer(low)]
    for m in _IDENT.finditer(text):
        word = m.group(0)
        if "." in word:
            if _SOURCE_SUFFIX.search(word):
                out.append(word.rsplit("/", 1)[-1].lower())  # a file name: keep it whole
                continue
            parts = word.split(".")
        else:
            parts = [word]
        for part in parts:
            low = part.lower()
            if len(low) < 3 or low in kb.STOPWORDS or low.isdigit():
                continue
            out.append(low)
            if "_" in low.strip("_"):
                out += [p for p in low.split("_") if len(p) >= 4 and p not in kb.STOPWORDS]
    return out


@dataclass(frozen=True)
class _Index:
    reports: tuple[KnownReport, ...]
    docs: tuple[Counter[str], ...]
    lengths: tuple[int, ...]
    idf: dict[str, float]
    avg_length: float


@lru_cache(maxsize=1)
def _index() -> _Index:
    reports = kb.load_reports()
    docs = []
    for r in reports:
        text = "\n".join([r.title, *[r.signature] * kb.SIGNATURE_WEIGHT, r.log])
        docs.append(Counter(tokens(text)))
    df: Counter[str] = Counter()
    for doc in docs:
        df.update(doc.keys())
    n = len(docs)
    idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
    lengths = tuple(sum(doc.values()) for doc in docs)
    avg = sum(lengths) / n if n else 1.0
    return _Index(reports, tuple(docs), lengths, idf, avg or 1.0)


@dataclass(frozen=True)
class Query:
    """What the ranking reads of a triaged report: its signature text and the configuration
    the log states (engine, version, draft kind, CUDA-graph mode, attention backend, GPU, TP)."""

    text: str
    config: TriageConfig = field(default_factory=TriageConfig)


def query_of(result: TriageResult, pasted: str | None = None) -> Query:
    """The query of a triage result: its error and evidence lines, plus, for a pasted report
    (`pasted`: the ticket's title and log text), the lines of it that look like a signature."""
    primary = [result.primary_error] if result.primary_error else []
    found = [*primary, *result.secondary_errors, *result.evidence]
    return query_from([ev.text for ev in found], result.config, pasted)


def query_from(lines: list[str], config: TriageConfig, pasted: str | None = None) -> Query:
    """The query of a verdict's evidence lines, before its result is built (triage.diagnose
    weighs the nearest reports in its commitment)."""
    lines = list(lines)
    if pasted:
        picked = (ln for ln in pasted.splitlines() if _SIGNATURE_LINE.search(ln))
        lines += [ln[:_LINE_CHARS] for _, ln in zip(range(_QUERY_LINES), picked, strict=False)]
    return Query(text="\n".join(lines), config=config)


def similar_reports(query: Query, k: int = kb.TOP_K) -> list[SimilarReport]:
    """The `k` known reports closest to `query`, best first, each with the terms and facts it
    shares; none when nothing shares enough signature text."""
    index = _index()
    terms = set(tokens(query.text))
    if not terms or not index.reports:
        return []
    scored: list[tuple[float, int, list[str], list[str]]] = []
    for i, doc in enumerate(index.docs):
        shared = [t for t in terms if t in doc]
        if len(shared) < kb.MIN_SHARED:
            continue
        norm = kb.BM25_K1 * (1 - kb.BM25_B + kb.BM25_B * index.lengths[i] / index.avg_length)
        contrib = {t: index.idf[t] * doc[t] * (kb.BM25_K1 + 1) / (doc[t] + norm) for t in shared}
        lexical = sum(contrib.values())
        if lexical < kb.MIN_SCORE:
            continue
        facts = _shared_facts(query, index.reports[i])
        boost = sum(kb.FACT_WEIGHTS[key] for key, _ in facts)
        ranked_terms = sorted(shared, key=lambda t: (-contrib[t], t))
        scored.append((lexical * (1 + boost), i, ranked_terms, [text for _, text in facts]))
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [
        _result(index.reports[i], score, terms_, facts) for score, i, terms_, facts in scored[:k]
    ]


def similar_for(result: TriageResult, pasted: str | None = None) -> list[SimilarReport]:
    return similar_reports(query_of(result, pasted))


# The fields a SimilarReport copies from the known report it names.
_COPIED = ("id", "title", "url", "engine", "version", "category", "root_cause", "fix")


def _result(r: KnownReport, score: float, terms: list[str], facts: list[str]) -> SimilarReport:
    copied = {name: getattr(r, name) for name in _COPIED}
    return SimilarReport(
        score=round(score, 2), shared_terms=terms[:8], shared_facts=facts, **copied
    )


def _norm(text: str | None) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower()) if text else ""


def _shared_facts(q: Query, r: KnownReport) -> list[tuple[str, str]]:
    """(weight key, sentence) for each configuration fact the query and the report share."""
    mine = q.config
    theirs = {k: v for k, v in r.config.items() if isinstance(v, str)}
    out: list[tuple[str, str]] = []
    same_engine = bool(mine.framework) and _norm(mine.framework) == _norm(r.engine)
    if same_engine:
        out.append(("engine", f"engine {r.engine}"))
    family = kb.method_family(mine.spec_method)
    if family and family == kb.method_family(theirs.get("method")):
        out.append(("method", f"method {family}"))
    near = _versions_near(mine.version, r.version)
    if near and same_engine:
        out.append(("version", near))
    mode = mine.cudagraph_mode_resolved or mine.cudagraph_mode_requested
    backend = mine.attention_backend or mine.attention_backend_raw
    for key, label, value in (("mode", "mode", mode), ("backend", "backend", backend)):
        stated = theirs.get("cudagraph_mode" if key == "mode" else "attention_backend")
        if value and stated and _norm(value) in _norm(stated):
            out.append((key, f"{label} {value}"))
    gpu = _gpu_name(mine.gpu or "")
    if gpu and gpu in _norm(theirs.get("gpu")):
        out.append(("gpu", f"GPU {gpu.upper()}"))
    if mine.tp and mine.tp == r.config.get("tp"):
        out.append(("tp", f"TP={mine.tp}"))
    return out


def _gpu_name(text: str) -> str:
    """The model part of a GPU name ('NVIDIA H100 80GB HBM3' -> 'h100')."""
    m = re.search(r"\b([A-Z]{1,3}\d{2,4}[A-Z]?)\b", text, re.I)
    return m.group(1).lower() if m else ""


def _versions_near(mine: str | None, theirs: str | None) -> str | None:
    a, b = parse_version(mine), parse_version(theirs)
    if a is None or b is None or a[0] != b[0]:
        return None
    if abs(a[1] - b[1]) > kb.VERSION_NEAR_MINORS:
        return None
    return f"version {'.'.join(map(str, a[:2]))} ~ {'.'.join(map(str, b[:2]))}"
