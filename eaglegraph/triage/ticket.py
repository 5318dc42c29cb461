"""A pasted GitHub issue as input: its title and prose are the reporter's statements.

A ticket is a title line, a Markdown body (headings, bullets, tables of what works and what
fails) and fenced logs. The log scanner must see only the logs, or the title ("CUDA illegal
memory access during ... capture") becomes the first root error. So small inputs are split:

- fenced lines, and unfenced lines that look like log output (engine prefixes, tracebacks,
  frames, `SomethingError: ...`), go to the scanner;
- the title and the remaining prose are statements; prose is blanked for the scanner in a
  ticket (line numbers are kept, so evidence still points at the pasted line);
- Markdown table rows and bullets are statements *and* stay visible to the scanner (an
  acceptance table is also a metric).

Plain logs (no fence, no issue title) are scanned unchanged; their Markdown-looking lines still
count as statements.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from eaglegraph import frames as fr
from eaglegraph.known.triage_facts import OUTSIDE_ENGINES
from eaglegraph.known.triage_rules import (
    DRAFT_MENTIONS,
    ENGINE_MENTIONS,
    ENGINE_VERSION,
    KNOB,
    NEGATION,
    STATEMENTS,
)
from eaglegraph.triage.prefixes import strip_prefixes
from eaglegraph.triage.registry import match_line

# Inputs larger than this are logs, not tickets: they are streamed and never split.
TICKET_LIMIT = 2 * 1024 * 1024

_FENCE = re.compile(r"^\s{0,3}(?:```|~~~)")
_TITLE_TAG = re.compile(
    r"^\s*(?:title:\s*)?\[(?:bug|usage|feature|rfc|bugfix|performance|"
    r"misc|installation|doc|question|amd|rocm|spec decode|fix)\b[^\]]*\]",
    re.I,
)
_LOGLIKE = re.compile(
    r"^\s*(?:File \"|Traceback \(|frame #\d|#\d+ 0x|\d+\s+0x[0-9a-f]+|at \w|\^+\s*$)|"
    r"^[\w.]*(?:Error|Exception|Warning)\b[:(]|^\s*(?:raise|return|assert|self\.|await )\b|"
    r"^(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\b|^\s{4,}\S|^/\S+:\d+|%\|"
)
# Words of a reporter's sentence, not of a log line.
_PROSE_WORDS = re.compile(
    r"\b(?:I|I'm|I've|we|we're|my|our|you|your|it seems|seems|this is|which|because|please|"
    r"should|would|could|happens?|occurs?|tried|using)\b"
)
# Signals a log line carries; narrative signals (a reporter's words) are not among them.
_NARRATIVE = (
    "hang.narrative",
    "context.batch-shrink",
    "context.eager-ab",
    "context.none-still-fails",
    "health.gibberish",
    "context.launch-blocking",
    "health.acceptance-prose",  # "acceptance rate dropping from ~97% to ~4%": a sentence
)
_MARKDOWN = re.compile(r"^\s*(?:\||[-*+] |\d+[.)] |#{1,6} |> )")
_WORDY = re.compile(r"[A-Za-z]{2,}(?:\W+[A-Za-z]{2,}){3,}")
_STATEMENTS = tuple((s, re.compile(s.pattern, re.I)) for s in STATEMENTS)
_KNOB = re.compile(KNOB, re.I)
_ENGINES = tuple((e, re.compile(rx, re.I)) for e, rx in ENGINE_MENTIONS.items())
_DRAFTS = tuple((d, re.compile(rx, re.I)) for d, rx in DRAFT_MENTIONS)
_ENGINE_VERSION = re.compile(ENGINE_VERSION, re.I)
_BARE_VERSION = re.compile(r"(?<![\w.])v(\d+\.\d+\.\d+(?:\.post\d+|rc\d+)?)\b")
_NEGATED = re.compile(NEGATION, re.I)
_BAD = re.compile(r"crash|fail|error|illegal|\bIMA\b|hang|❌|✗|corrupt", re.I)
_GOOD = re.compile(r"stable|works?|\bok\b|pass(?:es)?|fine|no crash|✅|✓", re.I)
_IDENT = re.compile(r"\b[A-Za-z]\w*_\w+\b|\b(?:[A-Z][a-z]+){2,}\b")
_GRAPH = re.compile(r"cuda[- ]?graph|cudagraph", re.I)


def _table_k_gated(lines: list[str]) -> list[Said]:
    """A table whose rows vary the number of speculative tokens, some failing, some not."""
    out: list[Said] = []
    header: str | None = None
    bad: tuple[int, str] | None = None
    good = False
    for i, line in enumerate([*lines, ""]):
        if line.lstrip().startswith("|"):
            if header is None:
                header, bad, good = line, None, False
                continue
            first = line.strip().strip("|").split("|", 1)[0]
            if _KNOB.search(header) and re.search(r"\d", first):
                if _BAD.search(line) and bad is None:
                    bad = (i, line)
                elif _GOOD.search(line):
                    good = True
            continue
        if header is not None and bad is not None and good:
            out.append(Said("says.k-gated", bad[0] + 1, bad[1].strip()[:300]))
        header = None
    return out


def _serving_graph(title: str, line: int) -> list[Said]:
    """A title naming a draft/verify function of the serving loop together with CUDA graphs."""
    if not _GRAPH.search(title):
        return []
    for name in _IDENT.findall(title):
        tags = fr.classify(name)
        if (fr.SPEC in tags or fr.REPLAY in tags) and fr.CAPTURE not in tags:
            return [Said("says.serving-graph", line, title[:300], True)]
    return []


@dataclass
class Said:
    """One statement recognised on one line of the input (1-based)."""

    id: str
    line: int
    text: str
    title: bool = False


@dataclass
class Ticket:
    is_ticket: bool
    title: str | None
    title_line: int | None
    log_text: str
    statements: list[Said] = field(default_factory=list)
    prose_lines: list[int] = field(default_factory=list)
    engine: str | None = None  # the engine the ticket names most, when no log prefix says
    versions: dict[str, str] = field(default_factory=dict)  # engine -> version it states
    draft: str | None = None  # the spec-decode method the ticket names most (DRAFT_MENTIONS)
    outside: str | None = None  # an engine outside vLLM/SGLang/TRT-LLM it names (OUTSIDE_ENGINES)

    def says(self, fact: str) -> list[Said]:
        return [s for s in self.statements if s.id == fact]

    @property
    def facts(self) -> set[str]:
        return {s.id for s in self.statements}


def _log_like(line: str, signals: bool = True) -> bool:
    """Engine prefixes, traceback forms, or (with `signals`) an error signal outside a sentence."""
    if not line.strip():
        return False
    rest, prefix = strip_prefixes(line)
    if prefix.level or prefix.framework or rest != line:
        return True
    if _LOGLIKE.search(line):
        return True
    if not signals or _PROSE_WORDS.search(line):
        return False
    return any(p.id not in _NARRATIVE for p, _ in match_line(line))


def _prose_like(line: str) -> bool:
    """Reporter's words: Markdown or a sentence, without an engine prefix or traceback form."""
    s = line.strip()
    if not s or _log_like(line, signals=False):
        return False
    return bool(_MARKDOWN.match(line)) or bool(_WORDY.search(s))


def _title_index(lines: list[str], fenced: bool) -> int | None:
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        if _FENCE.match(line) or _log_like(line, signals=False):
            return None
        if _TITLE_TAG.match(line) or (fenced and len(line) < 300):
            return i
        # A short sentence standing alone above the body, as an issue title is pasted.
        alone = i + 1 < len(lines) and not lines[i + 1].strip()
        if alone and len(line) < 200 and len(line.split()) >= 3:
            return i
        return None
    return None


def _paragraphs(prose: list[int], lines: list[str], title: int | None) -> list[list[int]]:
    """Runs of consecutive prose lines (1-based): a hard-wrapped sentence is read whole.

    The title and table rows stand alone; a table row is one claim, not part of a sentence.
    """
    out: list[list[int]] = []
    alone_flags: list[bool] = []
    for n in prose:
        alone = n - 1 == title or lines[n - 1].lstrip().startswith("|")
        if out and not alone and not alone_flags[-1] and out[-1][-1] == n - 1:
            out[-1].append(n)
            continue
        out.append([n])
        alone_flags.append(alone)
    return out


def _statements(para: list[int], lines: list[str], title: int | None) -> list[Said]:
    """Statements found in one paragraph, each attributed to the line where its match starts."""
    starts: list[int] = []
    parts: list[str] = []
    pos = 0
    for n in para:
        starts.append(pos)
        text = lines[n - 1].strip()
        parts.append(text)
        pos += len(text) + 1
    joined = " ".join(parts)
    out: list[Said] = []
    in_title = para == [title + 1] if title is not None else False
    for st, rx in _STATEMENTS:
        if st.title_only and not in_title:
            continue
        for m in rx.finditer(joined):
            if _NEGATED.search(joined[max(0, m.start() - 40) : m.start()]):
                continue
            k = max(j for j, at in enumerate(starts) if at <= m.start())
            n = para[k]
            out.append(Said(st.id, n, parts[k][:300], n - 1 == title))
            break
    return out


def read_ticket(text: str) -> Ticket:
    """Split `text` into what the scanner reads and what the reporter says."""
    lines = text.split("\n")  # the scanner's notion of a line: \r stays inside it
    if lines and lines[-1] == "":
        lines.pop()
    has_fence = any(_FENCE.match(line) for line in lines)
    t = _title_index(lines, has_fence)
    is_ticket = has_fence or t is not None
    out: list[str] = []
    said: list[Said] = []
    prose: list[int] = []
    fenced = False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            out.append("")
            continue
        keep = line
        statement = False
        if i == t:
            keep, statement = "", True
        elif line.lstrip().startswith("|") and _prose_like(line):
            statement = True  # tables: statements, and still scanned (acceptance tables)
        elif _prose_like(line) and not (fenced and _log_like(line)):
            statement = True
            # In a ticket, unfenced prose is not log: an error named in a sentence is a claim.
            if is_ticket and not fenced and not _log_like(line):
                keep = ""
        if statement:
            prose.append(i + 1)
        out.append(keep)
    title = lines[t].strip() if t is not None else None
    for para in _paragraphs(prose, lines, t):
        said += _statements(para, lines, t)
    said += _table_k_gated(lines)
    if title is not None and t is not None:
        said += _serving_graph(title, t + 1)
    log_text = "\n".join(out) + ("\n" if text.endswith("\n") else "")
    engine, versions = _engine_of(text)
    tl = None if t is None else t + 1
    draft = _draft_of(text)
    outside = next((name for name, rx in OUTSIDE_ENGINES if rx.search(text)), None)
    return Ticket(is_ticket, title, tl, log_text, said, prose, engine, versions, draft, outside)


def _draft_of(text: str) -> str | None:
    """The draft kind a ticket names: the most mentioned specific one, else a bare EAGLE."""
    counts = {d: len(rx.findall(text)) for d, rx in _DRAFTS}
    specific = [d for d, _ in DRAFT_MENTIONS[:-1] if counts[d]]
    if specific:
        return max(specific, key=lambda d: counts[d])
    return DRAFT_MENTIONS[-1][0] if counts[DRAFT_MENTIONS[-1][0]] else None


def _engine_of(text: str) -> tuple[str | None, dict[str, str]]:
    """The engine a ticket names most often, and the versions it states for each engine."""
    counts = {e: len(rx.findall(text)) for e, rx in _ENGINES}
    best = max(counts, key=lambda e: counts[e])
    versions: dict[str, str] = {}
    for m in _ENGINE_VERSION.finditer(text):
        name = m.group("engine").lower()
        engine = "trtllm" if name.startswith("tensorrt") else name
        versions.setdefault(engine, m.group("version"))
    engine = best if counts[best] else None
    bare = _BARE_VERSION.search(text)
    if engine is not None and engine not in versions and bare:
        versions[engine] = bare.group(1)  # "(v0.24.0)" in a title that names no engine
    return engine, versions
