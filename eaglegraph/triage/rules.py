"""Weighing the evidence: which failure class explains the log, and how sure that is.

The order of reasoning follows how these failures actually arise:

1. Find the *primary* error: the first root error line, not its consequences (NCCL watchdog,
   engine death, "Scheduler hit an exception" wrappers, aborts after a C++ exception).
2. Name its *mechanism*: an asynchronous CUDA fault (illegal address, segfault...), a
   device-side index assert, an OOM, a stream-capture violation, a shape error, a watchdog.
3. Find the *phase* it happened in: during a capture (progress bar stopped at i<n, a
   `Capture ... begin` without its `end`, capture frames in the traceback), during serving
   (after captures finished; replay frames; padding lines), or at startup.
4. Weigh: the facts read here (`log.*`, `phase.*`, `log.mech-*`) carry no weight in code; the
   rules that weigh them are data in `eaglegraph.known.triage_log_rules` (specific mechanisms
   decide on their own; asynchronous faults take their class from phase and context).

Each contribution carries the lines that justify it; the confidence comes from how much
evidence the winner has and how far ahead of the runner-up it is.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

from eaglegraph import frames as fr
from eaglegraph.known.triage_log_rules import LOG_RULES
from eaglegraph.known.triage_rules import Rule
from eaglegraph.results.triage import CATEGORIES, Evidence, PhaseInfo
from eaglegraph.triage.locate import crash_frames, phase_of, relevant_frames, tags_of
from eaglegraph.triage.state import Frame, Hit, ScanState

STALE, OOB, OOM, CAPTURE, MODE, CONFIG, ACCEPT, HANG, OTHER = CATEGORIES

ASYNC = ("cuda.illegal-address", "cuda.misaligned", "cuda.launch-failure", "error.segfault")
SPECIFIC = (
    *ASYNC,
    "index.oob",
    "cuda.device-assert",
    "memory.oom",
    "memory.negative-estimate",
    "capture.unsupported",
    "shape.mismatch",
    "config.keys",
    "error.nan",
    "hang.watchdog",
    "hang.stall",
)
ROOT = (*SPECIFIC, "capture.failed", "error.exception")
SECONDARY = (
    "secondary.nccl-timeout",
    "secondary.nccl-error",
    "secondary.engine",
    "secondary.abort",
)

# Exception types that are themselves consequences of an earlier failure.
_SECONDARY_TYPES = re.compile(
    r"EngineDeadError|AsyncEngineDeadError|ActorDiedError|RayTaskError|KeyboardInterrupt|"
    r"SystemExit|BrokenPipeError|ConnectionResetError|CancelledError|ConnectionRefusedError"
)
_WRAPPER_TEXT = re.compile(
    r"Worker failed with error|please check the stack trace above|hit an exception|"
    r"Exception in worker|Engine core initialization failed|EngineCore failed to start|"
    r"See (?:the )?(?:root cause|stack trace) above"
)
# An asynchronous fault pinned on an eager kernel launch inside a library (FlashInfer .cuh,
# "at function cudaLaunchKernel"): not a graph replay, whose errors surface at cudaGraphLaunch
# or at the next synchronisation.
_EAGER_ATTRIBUTION = re.compile(r"cudaLaunchKernel|\.cuh\b|at function \w+|\.cu:\d+|launch_bounds")
_VOCABISH = re.compile(r"vocab|lm_head|logits|embed|d2t|t2d|token_map")
_HIDDENISH = re.compile(r"hidden|fc\.weight|\bfc\b|aux|width")
_NUMS = re.compile(r"\((\d+)\)|\b(\d{4,6})x(\d{3,6})\b")
_LEVEL_QUIET = ("INFO", "DEBUG")


@dataclass
class Contribution:
    category: str
    weight: float
    reason: str
    hits: list[Hit] = field(default_factory=list)


@dataclass
class Verdict:
    category: str
    confidence: float
    scores: dict[str, float]
    contributions: list[Contribution]
    primary: Hit | None
    primary_mechanism: str | None
    secondary: list[Hit]
    phase: PhaseInfo
    frames: list[Frame]
    facts: list[str] = field(default_factory=list)


def root_errors(state: ScanState) -> list[Hit]:
    """Candidate root errors in line order, wrappers and quiet log levels removed."""
    secondary_lines = {h.line for h in state.hits(*SECONDARY)}
    out: list[Hit] = []
    for h in state.hits(*ROOT):
        if h.text.startswith("|"):
            continue  # a Markdown table cell is the reporter's summary, not a log line
        level = h.groups.get("level")
        if h.signal in ("error.exception", "config.keys", "capture.failed", "error.nan"):
            if level in _LEVEL_QUIET or level == "WARNING":
                continue
            if h.signal == "error.exception":
                etype = h.groups.get("etype") or ""
                if _SECONDARY_TYPES.search(etype) or _WRAPPER_TEXT.search(h.text):
                    continue
        if h.line in secondary_lines and h.signal in ("error.exception", "config.keys"):
            continue
        if h.signal == "memory.oom" and level in _LEVEL_QUIET:
            continue
        if h.signal == "hang.stall" and level in _LEVEL_QUIET and "broadcast block" not in h.text:
            continue
        out.append(h)
    return out


def pick_primary(state: ScanState) -> Hit | None:
    """The first specific root error; else the first capture wrapper; else the first exception.

    A specific mechanism named only inside a wrapper line (e.g. "Worker failed with error
    'CUDA error: an illegal memory access'") still counts, but a bare line naming it wins.
    """
    roots = root_errors(state)
    if not roots:
        return None
    wrappers = {h.line for h in state.hits(*SECONDARY)}
    for tier in (
        [h for h in roots if h.signal in SPECIFIC and h.line not in wrappers],
        [h for h in roots if h.signal in SPECIFIC],
        [h for h in roots if h.signal == "capture.failed"],
        [h for h in roots if h.signal == "error.exception"],
    ):
        if tier:
            first = tier[0]
            # Several signals can name one line; report the most specific one.
            same = [h for h in roots if h.line == first.line]
            same.sort(key=lambda h: ROOT.index(h.signal))
            return same[0]
    return None


def mechanism(state: ScanState, primary: Hit | None) -> str | None:
    """The failure mechanism of the primary error line (all signals on that line count)."""
    if primary is None:
        return None
    on_line = {h.signal for h in state.hits(*ROOT) if h.line == primary.line}
    if on_line & {"index.oob"}:
        return "oob"
    if on_line & {"memory.oom", "memory.negative-estimate"}:
        return "oom"
    if on_line & {"shape.mismatch"}:
        return "shape"
    if on_line & {"capture.unsupported"}:
        return "capture"
    if on_line & set(ASYNC):
        return "async"
    if on_line & {"cuda.device-assert"}:
        return "assert"
    if on_line & {"config.keys"}:
        return "config"
    if on_line & {"error.nan"}:
        return "nan"
    if on_line & {"hang.watchdog", "hang.stall"}:
        return "hang"
    if on_line & {"capture.failed"}:
        return "capture-wrapper"
    return "exception"


# --- scoring -------------------------------------------------------------------------------


def confidence(score: float, total: float) -> float:
    """Saturates with the amount of evidence, shrinks with competition."""
    if score <= 0 or total <= 0:
        return 0.0
    return round((1.0 - math.exp(-score / 2.5)) * (score / total), 2)


_PAD_SIZES = re.compile(
    r"raw_bs=(\d+)[ ,]+(?:graph_bs|bs|padded_bs|capture_bs)=(\d+)|"
    r"(?:padded|padding) (?:from )?(?:bs|batch(?: size)?)[ =:]+(\d+)[^\n]{0,20}?(?:to|->|→)\s*(\d+)"
)


def padding_sizes(hit: Hit) -> tuple[int, int] | None:
    """(raw batch, captured batch) from a padding line, when it states them."""
    m = _PAD_SIZES.search(hit.text)
    if not m:
        return None
    raw, graph = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    return int(raw), int(graph)


def _replay_context(state: ScanState, primary: Hit | None, frames: list[Frame]) -> list[Hit]:
    """Lines that say the batch was padded or shrinking around the failure."""
    line = primary.line if primary else None
    hits: list[Hit] = []
    for h in state.hits("context.padding"):
        if line is None or h.line <= line + 5:
            sizes = padding_sizes(h)
            if sizes is None or sizes[0] < sizes[1]:
                hits.append(h)
    hits += [
        h for h in state.hits("context.batch-shrink") if line is None or abs(h.line - line) < 400
    ]
    return hits


def _shrinking(state: ScanState, line: int | None) -> list[Hit]:
    """`#running-req` / `Running: N reqs` fell by a third or more just before the failure."""
    recent = [(ln, n, t) for ln, n, t in state.running_reqs if line is None or ln <= line][-8:]
    vals = [n for _, n, _ in recent]
    if len(vals) >= 3 and max(vals) >= 4 and 0 < vals[-1] <= 0.67 * max(vals):
        peak = max(recent, key=lambda r: r[1])
        return [
            Hit(peak[0], peak[2], "health.running", "context"),
            Hit(recent[-1][0], recent[-1][2], "health.running", "context"),
        ]
    return []


class LogFacts:
    """Facts read off the log, each with the lines that show it (and a detail for the reason)."""

    def __init__(self) -> None:
        self.hits: dict[str, list[Hit]] = {}
        self.detail: dict[str, str] = {}

    def add(self, fact: str, hits: list[Hit] | None = None, detail: str | None = None) -> None:
        self.hits.setdefault(fact, []).extend(h for h in hits or [] if h is not None)
        if detail:
            self.detail[fact] = detail

    def __contains__(self, fact: str) -> bool:
        return fact in self.hits


def _holds(rule: Rule, facts: LogFacts) -> bool:
    return (
        all(f in facts for f in rule.needs)
        and (not rule.any_of or any(f in facts for f in rule.any_of))
        and not any(f in facts for f in rule.unless)
    )


def weigh(facts: LogFacts, table: tuple[Rule, ...] = LOG_RULES) -> list[Contribution]:
    """One contribution per rule of `table` whose facts hold, with the lines behind them."""
    out: list[Contribution] = []
    for rule in table:
        if not _holds(rule, facts):
            continue
        hits: list[Hit] = []
        details: list[str] = []
        for f in (*rule.needs, *rule.any_of):
            if f not in facts:
                continue
            hits += [h for h in facts.hits[f] if h not in hits]
            if f in facts.detail and facts.detail[f] not in details:
                details.append(facts.detail[f])
        reason = rule.why + (f" ({'; '.join(details)})" if details else "")
        if rule.weight > 0:
            out.append(Contribution(rule.category, rule.weight, reason, hits))
    return out


def log_facts(state: ScanState) -> tuple[LogFacts, Hit | None, str | None, PhaseInfo, list]:
    """The log's facts: mechanism and phase of the first root error, and the context around it.

    The weights these facts carry are data (`known.triage_log_rules`); this function only
    reads the log.
    """
    f = LogFacts()
    primary = pick_primary(state)
    mech = mechanism(state, primary)
    line = primary.line if primary else None
    all_frames = relevant_frames(state, line)
    frames = crash_frames(all_frames)
    tags = tags_of(frames)
    phase = phase_of(state, primary, all_frames)
    p = [primary] if primary else []
    cfg = state.config
    in_capture = phase.at_failure == "capture"
    if mech is not None:
        f.add(f"log.mech-{mech}", p)
    if primary is not None:
        f.add("log.error", p)
    if primary is not None or frames:
        f.add("log.failed", p)
    if in_capture:
        f.add("phase.capture", p, phase.detail)
    if phase.at_failure == "serving":
        f.add("phase.serving", p)

    # index asserts
    oob = state.hits("index.oob")
    if oob:
        f.add("log.index-oob", oob[:1])
    if state.hits("cuda.device-assert"):
        f.add("log.device-assert", state.hits("cuda.device-assert")[:1])
    for h in state.hits("config.keys"):
        if h.groups.get("key") == "max_position_embeddings":
            f.add("log.position-key", [h])
            break

    # memory
    ooms = [h for h in state.hits("memory.oom") if h.groups.get("level") not in _LEVEL_QUIET]
    if ooms:
        f.add("log.oom", ooms[:1])
    neg = state.hits("memory.negative-estimate")
    if neg:
        f.add("log.negative-estimate", neg[:1])
    kv = cfg.memory.available_kv_gib
    if kv is not None and kv < 1.0 and (ooms or neg or cfg.spec_method):
        f.add("log.kv-squeezed", [], f"{kv} GiB")

    # shapes and configs
    shapes = state.hits("shape.mismatch")
    if shapes:
        f.add("log.shape", shapes[:1])
        text = shapes[0].text.lower()
        nums = [int(x) for m in _NUMS.finditer(text) for x in m.groups() if x]
        if _VOCABISH.search(text) or _HIDDENISH.search(text) or any(n >= 30000 for n in nums):
            f.add("log.shape-width", shapes[:1])
    keys = [
        h for h in state.hits("config.keys") if h.groups.get("key") != "max_position_embeddings"
    ]
    if keys and (primary is None or mech in ("config", "exception", "shape")):
        f.add("log.config-key", keys[:1], f"key {keys[0].groups.get('key')}")

    # capture
    unsupported = state.hits("capture.unsupported")
    if unsupported:
        f.add("log.capture-unsupported", unsupported[:1])
    wrapper = state.hits("capture.failed")
    if wrapper:
        f.add("log.capture-wrapper", wrapper[:1])
    if in_capture and mech is None and frames:
        f.add("log.capture-frames", p + _frame_hits(state, frames, fr.CAPTURE), phase.detail)

    # context of the phase
    replay = _replay_context(state, primary, frames)
    shrink = _shrinking(state, line)
    if mech in ("async", "assert", "nan") and not in_capture:
        fault = primary.text if primary else ""
        if replay or shrink or fr.REPLAY in tags:
            ctx = p + replay[:2] + _frame_hits(state, frames, fr.REPLAY)[:1]
            f.add("log.fault-replay", ctx)
        elif _EAGER_ATTRIBUTION.search(fault) and mech == "async":
            f.add("log.fault-eager-kernel", p)
        elif mech == "nan":
            f.add("log.fault-nan", p)
        elif mech == "async":
            f.add("log.fault-bare", p)
    if replay:
        f.add("log.padding", replay[:3])
    if shrink and (mech in ("async", "assert") or (primary is None and frames)):
        f.add("log.shrink-fault", shrink)
    forward = fr.SERVING in tags or fr.SPEC in tags or fr.REPLAY in tags
    if primary is None and frames and not in_capture and forward:
        f.add("log.serving-frames", _frame_hits(state, frames, fr.SERVING, fr.SPEC, fr.REPLAY))
    for h in state.hits("context.none-still-fails")[:1]:
        f.add("log.none-still-fails", [h])

    # modes
    downgrades = state.hits("mode.downgrade")
    if downgrades:
        f.add("log.mode-downgrade", downgrades[:1])
    overrides = state.hits("mode.override")
    if overrides:
        f.add("log.mode-override", overrides[:1])
    hard = [
        h
        for h in state.hits("mode.unsupported")
        if "is not supported with spec" not in h.text
        and (
            h.groups.get("level") in ("ERROR", "CRITICAL") or re.search(r"Error|Exception", h.text)
        )
    ]
    if hard:
        f.add("log.mode-refused", hard[:1])
    soft = [
        h
        for h in state.hits("mode.unsupported", "mode.skip")
        if h not in hard and "is not supported with spec" not in h.text
    ]
    if soft:
        f.add("log.mode-soft", soft[:1])
    mode_info = (
        downgrades or overrides or soft or any(ph.mode for ph in state.captures) or cfg.mode_changes
    )
    if primary is None and not frames and mode_info:
        f.add("log.mode-info-only", (downgrades or overrides or soft)[:1])
    req, res = cfg.cudagraph_mode_requested, cfg.cudagraph_mode_resolved
    if req and res and req != res and res != "NONE" and (primary is None or downgrades):
        f.add("log.mode-changed", [], f"requested {req}, ran {res}")

    # acceptance
    acc = cfg.acceptance
    acc_hits = state.hits("health.acceptance-table", "health.acceptance-prose")
    collapsed = (acc.rate_min is not None and acc.rate_min <= 0.05) or (
        acc.mean_length_min is not None and acc.mean_length_min <= 1.05
    )
    if collapsed:
        f.add("log.acceptance-collapsed", acc_hits[:2])
        if acc.rate_first is not None and acc.rate_min is not None:
            healthy = [
                h
                for h in state.hits("health.acceptance-table")
                if float(h.groups.get("rate") or 0) >= 0.3
            ]
            if healthy:
                f.add("log.acceptance-healthy-elsewhere", healthy[:1])
    elif (
        acc.rate_first is not None
        and acc.rate_last is not None
        and acc.rate_first >= 0.2
        and (acc.rate_last < 0.5 * acc.rate_first)
    ):
        f.add("log.acceptance-fell", [], f"rate {acc.rate_first:.2f} to {acc.rate_last:.2f}")
    elif (
        acc.mean_length_first is not None
        and acc.mean_length_last is not None
        and (acc.mean_length_first - acc.mean_length_last >= 1.0)
    ):
        f.add(
            "log.acceptance-fell",
            [],
            f"mean length {acc.mean_length_first} to {acc.mean_length_last}",
        )
    gib = state.hits("health.gibberish")
    if gib:
        f.add("log.gibberish", gib[:1])

    # hangs
    watchdog = state.hits("hang.watchdog")
    if watchdog:
        f.add("log.watchdog", watchdog[:1])
    stall = [
        h
        for h in state.hits("hang.stall")
        if h.groups.get("level") not in _LEVEL_QUIET or "broadcast block" in h.text
    ]
    if stall:
        f.add("log.stall", stall[:1])
    nccl = state.hits("secondary.nccl-timeout")
    if nccl and (primary is None or mech == "hang"):
        f.add("log.nccl-timeout-alone", nccl[:1])
    pyspy = state.hits("pyspy.frame", "pyspy.thread")
    if pyspy:
        f.add("log.pyspy", pyspy[:2])
    prose = state.hits("hang.narrative")
    if prose:
        f.add("log.hang-prose", prose[:1])
    if primary is None and not frames and phase.at_failure == "capture":
        f.add("log.capture-stopped", [], phase.detail)
    return f, primary, mech, phase, all_frames


def score(state: ScanState) -> Verdict:
    """The log's verdict: its facts weighed by `known.triage_log_rules.LOG_RULES`."""
    facts, primary, mech, phase, all_frames = log_facts(state)
    secondary = state.hits(*SECONDARY)
    if primary is not None:
        secondary = [h for h in secondary if h.line != primary.line]
    v = Verdict(OTHER, 0.0, {}, [], primary, mech, secondary, phase, all_frames)
    return settle(v, weigh(facts))


def settle(
    v: Verdict, contributions: list[Contribution], facts: list[str] | None = None
) -> Verdict:
    """The verdict these contributions give: best category and its raw confidence."""
    out = dict.fromkeys(CATEGORIES, 0.0)
    for c in contributions:
        out[c.category] += c.weight
    scores = {k: round(w, 3) for k, w in out.items()}
    total = sum(scores.values())
    best = max(CATEGORIES, key=lambda c: (scores[c], c == OTHER))
    if scores[best] <= 0:
        best = OTHER
    conf = confidence(scores[best], total) if scores[best] > 0 else 0.1
    return replace(
        v,
        category=best,
        confidence=conf,
        scores=scores,
        contributions=list(contributions),
        facts=list(facts if facts is not None else v.facts),
    )


def _frame_hits(state: ScanState, frames: list[Frame], *tags: str) -> list[Hit]:
    """Frames carrying a tag, as evidence lines (innermost first, at most three)."""
    out = []
    for f in reversed(frames):
        if set(f.tags) & set(tags):
            out.append(
                Hit(
                    f.line,
                    f.text or f"{f.func} ({f.file})",
                    "frame",
                    "context",
                    {"tags": ",".join(f.tags)},
                )
            )
        if len(out) == 3:
            break
    return out


def alternatives(v: Verdict, limit: int = 3) -> list[tuple[str, float, float]]:
    total = sum(v.scores.values())
    ranked = sorted(
        (c for c in CATEGORIES if c != v.category and v.scores[c] > 0), key=lambda c: -v.scores[c]
    )
    return [(c, v.scores[c], confidence(v.scores[c], total)) for c in ranked[:limit]]


def evidence_of(v: Verdict, limit: int = 40) -> list[Evidence]:
    """Deduplicated evidence lines: the primary error, contributions, secondary errors."""
    out: dict[tuple[int, str], Evidence] = {}
    if v.primary is not None:
        out[(v.primary.line, v.primary.signal)] = Evidence(
            v.primary.line, v.primary.text, v.primary.signal, "primary", None, 0.0
        )
    for c in sorted(v.contributions, key=lambda c: -c.weight):
        for h in c.hits:
            key = (h.line, h.signal)
            if key in out:
                ev = out[key]
                if ev.category is None or (c.category == v.category and ev.category != v.category):
                    ev.category, ev.weight = c.category, c.weight
                continue
            role = "primary" if v.primary is not None and h.line == v.primary.line else "context"
            out[key] = Evidence(h.line, h.text, h.signal, role, c.category, c.weight)
    for h in v.secondary[:8]:
        key = (h.line, h.signal)
        if key not in out:
            out[key] = Evidence(h.line, h.text, h.signal, "secondary", None, 0.0)
    items = sorted(out.values(), key=lambda e: (e.line, e.signal))
    return items[:limit]
