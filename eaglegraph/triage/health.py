"""Serving health: speculative acceptance, running batch size, memory budget lines.

Periodic metrics lines are the only record of silent failures (acceptance falling to zero
with graphs on) and of the batch shrinking before a padded-replay crash. They are read where
they are cheap to read (head, tail, samples of the middle, windows around failures), from
vLLM's SpecDecoding metrics and scheduler stats, SGLang's decode/prefill batch lines, offline
benchmark summaries and markdown A/B tables pasted into reports. Memory lines (KV budget, graph
memory estimate) come from startup.
"""

from __future__ import annotations

import re

from eaglegraph.known.triage_signals import SignalKind
from eaglegraph.triage.patterns import PatternGroup
from eaglegraph.triage.prefixes import Prefix
from eaglegraph.triage.state import ScanState
from eaglegraph.triage.values import to_float, to_int

PATTERNS = PatternGroup()

# --- memory ----------------------------------------------------------------------------------


@PATTERNS.on(
    "cfg.memory",
    r"Available KV cache memory: (?P<kv>-?[\d.]+) ?GiB|"
    r"GPU KV cache size: (?P<tok>[\d,]+) tokens|"
    r"KV Cache is allocated\. #tokens: (?P<tok2>\d+)|"
    r"Maximum concurrency for [\d,]+ tokens per request: (?P<conc>[\d.]+)x|"
    r"Estimated CUDA graph memory: (?P<est>-?[\d.]+) ?GiB|"
    r"total_gpu_memory \((?P<total>[\d.]+) ?GiB\) x gpu_memory_utilization \((?P<util>[\d.]+)\)|"
    r"gpu_memory_utilization['\"]?[=:]\s*(?P<util2>[\d.]+)",
    anchors=("KV cache memory", "KV cache size", "KV Cache is", "Maximum concurrency", "CUDA"),
    extra=("_gpu_memory", "_memory_utilization"),
)
def _memory(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    mem = state.config.memory
    g = m.groupdict()
    if g.get("kv") is not None:
        mem.available_kv_gib = to_float(g["kv"])
    if (g.get("tok") or g.get("tok2")) is not None:
        mem.kv_cache_tokens = to_int(g.get("tok") or g.get("tok2"))
    if g.get("conc") is not None:
        mem.max_concurrency = to_float(g["conc"])
    if g.get("est") is not None:
        mem.graph_estimate_gib = to_float(g["est"])
    if (g.get("util") or g.get("util2")) is not None:
        mem.gpu_memory_utilization = to_float(g.get("util") or g.get("util2"))
    if g.get("total") is not None and state.config.gpu_memory_gib is None:
        state.config.gpu_memory_gib = to_float(g["total"])


# --- speculative-decoding health ---------------------------------------------------------------


def _accept(state: ScanState, line: int, length: float | None, rate: float | None) -> None:
    acc = state.config.acceptance
    if length is None and rate is None:
        return
    acc.samples += 1
    acc.first_line = acc.first_line or line
    acc.last_line = line
    if length is not None:
        if acc.mean_length_first is None:
            acc.mean_length_first = length
        acc.mean_length_last = length
        acc.mean_length_min = (
            length if acc.mean_length_min is None else min(acc.mean_length_min, length)
        )
    if rate is not None:
        if acc.rate_first is None:
            acc.rate_first = rate
        acc.rate_last = rate
        acc.rate_min = rate if acc.rate_min is None else min(acc.rate_min, rate)


_M_LENGTH = re.compile(r"[Mm]ean acceptance length:?\s*(?P<v>[\d.]+)|accept len: (?P<v2>[\d.]+)")
_M_RATE = re.compile(
    r"Avg Draft acceptance rate: (?P<pct>[\d.]+)%|Draft acceptance rate: (?P<frac>[\d.]+)\b|"
    r"accept rate: (?P<frac2>[\d.]+)"
)
_M_POS = re.compile(r"Per-position acceptance rate: (?P<pos>[\d., ]+)")


@PATTERNS.on(
    "health.acceptance",
    r"[Mm]ean acceptance length:?\s*[\d.]+|Draft acceptance rate: [\d.]+|accept len: [\d.]+|"
    r"accept rate: [\d.]+",
    extra=("cceptance", "accept len"),
)
def _metrics(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    """One metrics line carries several numbers; read each, not just the first alternative."""
    lm = _M_LENGTH.search(text)
    length = to_float(lm.group("v") or lm.group("v2")) if lm else None
    rate: float | None = None
    rm = _M_RATE.search(text)
    if rm:
        if rm.group("pct") is not None:
            pct = to_float(rm.group("pct"))
            rate = pct / 100.0 if pct is not None else None
        else:
            rate = to_float(rm.group("frac") or rm.group("frac2"))
    _accept(state, line, length, rate)
    pos = _M_POS.search(text)
    if pos:
        state.config.acceptance.per_position_last = [
            float(x) for x in re.findall(r"\d+(?:\.\d+)?", pos.group("pos"))
        ][:64]
    state.serving(line)


_ACCEPT_MACHINE = re.compile(r"[Mm]ean acceptance length|Draft acceptance rate|accept len:")


@PATTERNS.on(
    "health.acceptance-prose",
    r"(?i)(?<![\w-])accept(?:ance|ed)?(?: rate| length| len)?\b[^\n\d%|]{0,30}?(?<![\w.])"
    r"(?P<v>\d{1,6}(?:\.\d{1,4})?)\s*(?P<pct>%)?|(?<![\d.])(?P<v2>\d{1,3}(?:\.\d{1,4})?)\s*%\s*"
    r"(?:spec(?:-decode|ulative)? )?"
    r"acceptance",
    extra=("accept", "Accept"),
    unless=(
        "SpecDecoding metrics",
        "accept len:",
        "Mean acceptance length",
        "Draft acceptance rate",
        "mean acceptance length",
    ),
)
def _accept_prose(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    if _ACCEPT_MACHINE.search(text):
        return  # a metrics line, already read by health.acceptance
    value = to_float(m.group("v") or m.group("v2"))
    if value is None:
        return
    pct = bool(m.group("pct") or m.group("v2"))
    if "length" in m.group(0).lower() and not pct:
        _accept(state, line, value, None)
    else:
        _accept(state, line, None, value / 100.0 if pct or value > 1 else value)
    state.add(line, text.strip(), "health.acceptance-prose", SignalKind.NARRATIVE, {})


@PATTERNS.on(
    "health.table-row",
    r"^\s*\|(?P<cells>.*)\|\s*$",
    extra=("|",),
)
def _table(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    """Markdown tables: find an 'acceptance' column, then read each row's value in it."""
    cells = [c.strip().strip("*`").strip() for c in m.group("cells").split("|")]
    if all(re.fullmatch(r":?-{2,}:?", c) for c in cells if c):
        return
    header = [i for i, c in enumerate(cells) if re.search(r"(?i)accept", c)]
    if header:
        state.table_accept_col = header[0]
        state.table_header_line = line
        return
    col = state.table_accept_col
    if col is None or col >= len(cells) or line - (state.table_header_line or 0) > 50:
        return
    vm = re.search(r"(\d+(?:\.\d+)?)\s*(%)?", cells[col])
    if not vm:
        return
    value = float(vm.group(1))
    rate = value / 100.0 if vm.group(2) or value > 1 else value
    _accept(state, line, None, rate)
    label = " | ".join(c for i, c in enumerate(cells) if i != col and c)
    state.add(
        line,
        text.strip(),
        "health.acceptance-table",
        SignalKind.NARRATIVE,
        {"rate": f"{rate:.3f}", "row": label[:120]},
    )


@PATTERNS.on(
    "health.running",
    r"#running-req: (?P<n>\d+)|Running: (?P<n2>\d+) reqs",
    extra=("#running-req", "Running: "),
)
def _running(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    n = to_int(m.group("n") or m.group("n2"))
    if n is not None:
        state.running_reqs.append((line, n, text.strip()[:400]))
    state.serving(line)


@PATTERNS.on(
    "health.serving",
    r"Application startup complete|Uvicorn running|The server is fired up|Starting vLLM API server|"
    r"Avg prompt throughput|Decode batch\.|Prefill batch\.|\"POST /|Received request",
    extra=(
        "Application startup",
        "Uvicorn running",
        "Starting vLLM",
        "fired up",
        "Avg prompt",
        "Decode batch",
        "Prefill batch",
        '"POST',
        "Received request",
    ),
)
def _serving_marker(
    state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix
) -> None:
    state.serving(line)
    state.add(line, text.strip(), "context.serving", SignalKind.CONTEXT, {})
