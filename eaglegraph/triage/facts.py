"""Every fact of a log, derived in one place: the namespace all triage rules read.

`read_log` turns a scanned log into one `LogFacts`: the primary error, its mechanism and phase,
the frames around it, and named facts, each with the lines that show it:

- `log.*`: what a line or the context around the failure shows (an index assert, a padded
  replay, a stopped capture, collapsed acceptance); signals that are facts by themselves are
  listed as data (`known.triage_log_rules.SIGNAL_FACTS`), the rest are derived below;
- `phase.*`: where the first root error happened; `log.mech-*` and `mech.*`: its mechanism;
- `ctx.*`, `fw.*`, `draft.*`, `attn.*`: context the reporter-statement rules combine with
  what the reporter says (`said_facts`, the `says.*` facts of a pasted ticket).

The rules that weigh these facts are data (`known.triage_log_rules`, `known.triage_rules`), and
so are the thresholds and line forms read here (`known.triage_facts`). Nothing here weighs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from eaglegraph import frames as fr
from eaglegraph.known import triage_facts as k
from eaglegraph.known.triage_log_rules import SIGNAL_FACTS
from eaglegraph.known.triage_signals import (
    MECHANISMS,
    ROOT,
    SECONDARY_SIGNALS,
    SPECIFIC,
    Mechanism,
    SignalKind,
)
from eaglegraph.results.triage import Phase, PhaseInfo
from eaglegraph.triage.locate import crash_frames, phase_of, relevant_frames, tags_of
from eaglegraph.triage.state import Frame, Hit, ScanState
from eaglegraph.triage.ticket import Said, Ticket

# The mechanism facts the reporter-statement rules read (an assert is an index check).
_MECH_FACT = {
    Mechanism.ASSERT: "mech.oob",
    Mechanism.CAPTURE_WRAPPER: "mech.capture",
}


@dataclass
class LogFacts:
    """The facts of one log, each with the lines that show it (and a detail for the reason)."""

    primary: Hit | None
    mechanism: Mechanism | None
    phase: PhaseInfo
    frames: list[Frame]
    secondary: list[Hit]
    hits: dict[str, list[Hit]] = field(default_factory=dict)
    detail: dict[str, str] = field(default_factory=dict)

    def add(self, fact: str, hits: Iterable[Hit | None] = (), detail: str | None = None) -> None:
        self.hits.setdefault(fact, []).extend(h for h in hits if h is not None)
        if detail:
            self.detail[fact] = detail

    def __contains__(self, fact: object) -> bool:
        return fact in self.hits

    def names(self) -> set[str]:
        return set(self.hits)


def loud(hits: list[Hit]) -> list[Hit]:
    """Hits not at a level that makes their signal harmless (known.triage_facts.QUIET)."""
    out = []
    for h in hits:
        quiet = k.QUIET.get(h.signal, ())
        level = h.groups.get("level")
        anyway = k.LOUD_ANYWAY.get(h.signal)
        if level in quiet and not (anyway and anyway in h.text):
            continue
        out.append(h)
    return out


def root_errors(state: ScanState) -> list[Hit]:
    """Candidate root errors in line order, wrappers and quiet log levels removed."""
    secondary_lines = {h.line for h in state.hits(*SECONDARY_SIGNALS)}
    out: list[Hit] = []
    for h in loud(state.hits(*ROOT)):
        if h.text.startswith(k.TABLE_CELL):
            continue
        if h.signal == "error.exception":
            etype = h.groups.get("etype") or ""
            if k.SECONDARY_TYPES.search(etype) or k.WRAPPER_TEXT.search(h.text):
                continue
        if h.line in secondary_lines and h.signal in ("error.exception", "config.keys"):
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
    wrappers = {h.line for h in state.hits(*SECONDARY_SIGNALS)}
    for tier in (
        [h for h in roots if h.signal in SPECIFIC and h.line not in wrappers],
        [h for h in roots if h.signal in SPECIFIC],
        [h for h in roots if h.signal == "capture.failed"],
        [h for h in roots if h.signal == "error.exception"],
    ):
        if tier:
            # Several signals can name one line; report the most specific one.
            same = [h for h in roots if h.line == tier[0].line]
            same.sort(key=lambda h: ROOT.index(h.signal))
            return same[0]
    return None


def mechanism(state: ScanState, primary: Hit | None) -> Mechanism | None:
    """The failure mechanism of the primary error line (all signals on that line count)."""
    if primary is None:
        return None
    on_line = {h.signal for h in state.hits(*ROOT) if h.line == primary.line}
    for mech, signals in MECHANISMS:
        if on_line.intersection(signals):
            return mech
    return Mechanism.EXCEPTION


def padding_sizes(hit: Hit) -> tuple[int, int] | None:
    """(raw batch, captured batch) from a padding line, when it states them."""
    m = k.PAD_SIZES.search(hit.text)
    if not m:
        return None
    raw, graph = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    return int(raw), int(graph)


def _replay_context(state: ScanState, line: int | None) -> list[Hit]:
    """Lines that say the batch was padded or shrinking around the failure."""
    hits: list[Hit] = []
    for h in state.hits("context.padding"):
        if line is None or h.line <= line + k.PADDING_AFTER_LINES:
            sizes = padding_sizes(h)
            if sizes is None or sizes[0] < sizes[1]:
                hits.append(h)
    hits += [
        h
        for h in state.hits("context.batch-shrink")
        if line is None or abs(h.line - line) < k.SHRINK_NEAR_LINES
    ]
    return hits


def _shrinking(state: ScanState, line: int | None) -> list[Hit]:
    """`#running-req` / `Running: N reqs` fell by a third or more just before the failure."""
    recent = [(ln, n, t) for ln, n, t in state.running_reqs if line is None or ln <= line]
    recent = recent[-k.SHRINK_SAMPLES :]
    vals = [n for _, n, _ in recent]
    if (
        len(vals) >= k.SHRINK_MIN_SAMPLES
        and max(vals) >= k.SHRINK_MIN_PEAK
        and 0 < vals[-1] <= k.SHRINK_RATIO * max(vals)
    ):
        peak = max(recent, key=lambda r: r[1])
        return [
            Hit(peak[0], peak[2], "health.running", SignalKind.CONTEXT),
            Hit(recent[-1][0], recent[-1][2], "health.running", SignalKind.CONTEXT),
        ]
    return []


def _frame_hits(frames: list[Frame], *tags: str) -> list[Hit]:
    """Frames carrying a tag, as evidence lines (innermost first, at most three)."""
    out = []
    for f in reversed(frames):
        if set(f.tags) & set(tags):
            text = f.text or f"{f.func} ({f.file})"
            out.append(Hit(f.line, text, "frame", SignalKind.CONTEXT, {"tags": ",".join(f.tags)}))
        if len(out) == 3:
            break
    return out


def read_log(state: ScanState) -> LogFacts:
    """The log's facts: mechanism and phase of the first root error, and the context around it.

    Read after the configuration is settled (framework, draft kind), which some facts name.
    """
    primary = pick_primary(state)
    all_frames = relevant_frames(state, primary.line if primary else None)
    secondary = [
        h for h in state.hits(*SECONDARY_SIGNALS) if primary is None or h.line != primary.line
    ]
    f = LogFacts(
        primary,
        mechanism(state, primary),
        phase_of(state, primary, all_frames),
        all_frames,
        secondary,
    )
    for sf in SIGNAL_FACTS:
        hits = state.hits(*sf.signals)
        hits = loud(hits) if sf.loud_only else hits
        if hits:
            f.add(sf.fact, hits[: sf.keep])
    _failure(f, state)
    _context(f, state)
    _modes(f, state)
    _acceptance(f, state)
    _statement_context(f, state)
    return f


def _failure(f: LogFacts, state: ScanState) -> None:
    """The primary error: its mechanism and phase, and what kind of failure the lines name."""
    p = [f.primary] if f.primary else []
    mech = f.mechanism
    frames = crash_frames(f.frames)
    if (
        f.primary is not None
        and f.phase.at_failure != Phase.CAPTURE
        and k.CAPTURE_ON_ERROR_LINE.search(f.primary.text)
    ):
        f.phase = replace(f.phase, at_failure=Phase.CAPTURE, detail="the error line names it")
    phase = f.phase.at_failure
    if mech is not None:
        f.add(f"log.mech-{mech}", p)
        f.add(_MECH_FACT.get(mech, f"mech.{mech}"), p)
        f.add("ctx.log-fault", p)
    if f.primary is not None:
        f.add("log.error", p)
    if f.primary is not None or frames:
        f.add("log.failed", p)
    if phase:
        f.add(f"phase.{phase}", p, f.phase.detail if phase == Phase.CAPTURE else None)
    for h in state.hits("config.keys"):
        if h.groups.get("key") == "max_position_embeddings":
            f.add("log.position-key", [h])
            break
    cfg = state.config
    kv = cfg.memory.available_kv_gib
    squeezing = "log.oom" in f or "log.negative-estimate" in f or cfg.spec_method
    if kv is not None and kv < k.KV_SQUEEZED_GIB and squeezing:
        f.add("log.kv-squeezed", [], f"{kv} GiB")
    shapes = state.hits("shape.mismatch")
    if shapes:
        _shape_facts(f, shapes)
    for h in state.hits("copy.overflow")[:1]:
        src, dst = h.groups.get("src"), h.groups.get("dst")
        # The same error copying a shorter array is a length mismatch, not an overflow.
        if not (src and dst) or int(src) > int(dst):
            f.add("log.copy-overflow", [h], f"{src} into {dst}" if src and dst else None)
    keys = [
        h for h in state.hits("config.keys") if h.groups.get("key") != "max_position_embeddings"
    ]
    if keys and (f.primary is None or mech in ("config", "exception", "shape")):
        f.add("log.config-key", keys[:1], f"key {keys[0].groups.get('key')}")
    for h in state.hits("index.oob")[:3]:
        bounds = {int(b) for b in k.INDEX_BOUND.findall(h.text)}
        if bounds & k.POSITION_LIMITS or "position" in h.text:
            f.add("ctx.position-bound", [h])
            break
    if phase == Phase.CAPTURE and mech is None and frames:
        f.add("log.capture-frames", p + _frame_hits(frames, fr.CAPTURE), f.phase.detail)
    if f.primary is None and not frames and phase == Phase.CAPTURE:
        f.add("log.capture-stopped", [], f.phase.detail)
    nccl = state.hits("secondary.nccl-timeout")
    if nccl and (f.primary is None or mech == Mechanism.HANG):
        f.add("log.nccl-timeout-alone", nccl[:1])


def _context(f: LogFacts, state: ScanState) -> None:
    """Padded replay, a shrinking batch, replay or serving frames around the failure."""
    p = [f.primary] if f.primary else []
    mech = f.mechanism
    line = f.primary.line if f.primary else None
    frames = crash_frames(f.frames)
    tags = tags_of(frames)
    in_capture = f.phase.at_failure == Phase.CAPTURE
    replay = _replay_context(state, line)
    shrink = _shrinking(state, line)
    if mech in ("async", "assert", "nan") and not in_capture:
        fault = f.primary.text if f.primary else ""
        if replay or shrink or fr.REPLAY in tags:
            f.add("log.fault-replay", p + replay[:2] + _frame_hits(frames, fr.REPLAY)[:1])
        elif k.EAGER_ATTRIBUTION.search(fault) and mech == "async":
            f.add("log.fault-eager-kernel", p)
        elif mech == "nan":
            f.add("log.fault-nan", p)
        elif mech == "async":
            f.add("log.fault-bare", p)
    if replay:
        f.add("log.padding", replay[:3])
    if shrink and (mech in ("async", "assert") or (f.primary is None and frames)):
        f.add("log.shrink-fault", shrink)
    forward = fr.SERVING in tags or fr.SPEC in tags or fr.REPLAY in tags
    if f.primary is None and frames and not in_capture and forward:
        f.add("log.serving-frames", _frame_hits(frames, fr.SERVING, fr.SPEC, fr.REPLAY))
        # the same context for the reporter-statement rules, which read ctx.* facts
        f.add("ctx.serving-crash", _frame_hits(frames, fr.SERVING, fr.SPEC, fr.REPLAY)[:1])
    padding = state.hits("context.padding")
    if padding or fr.REPLAY in tags:
        f.add("ctx.replay", padding[:1])
    if frames and frames[-1].code and k.SUBSCRIPT.search(frames[-1].code):
        last = frames[-1]
        hit = Hit(last.line, last.text or last.code or "", "frame", SignalKind.CONTEXT)
        f.add("ctx.fault-at-index", [hit])


def _modes(f: LogFacts, state: ScanState) -> None:
    """How the engine resolved the graph mode, and whether that is all the log shows."""
    cfg = state.config
    downgrades = state.hits("mode.downgrade")
    overrides = state.hits("mode.override")
    hard = [
        h
        for h in state.hits("mode.unsupported")
        if k.DOWNGRADE_TEXT not in h.text
        and (h.groups.get("level") in k.LOUD_LEVELS or k.RAISED.search(h.text))
    ]
    if hard:
        f.add("log.mode-refused", hard[:1])
    soft = [
        h
        for h in state.hits("mode.unsupported", "mode.skip")
        if h not in hard and k.DOWNGRADE_TEXT not in h.text
    ]
    if soft:
        f.add("log.mode-soft", soft[:1])
    mode_info = (
        downgrades or overrides or soft or any(ph.mode for ph in state.captures) or cfg.mode_changes
    )
    if f.primary is None and not crash_frames(f.frames) and mode_info:
        f.add("log.mode-info-only", (downgrades or overrides or soft)[:1])
    req, res = cfg.cudagraph_mode_requested, cfg.cudagraph_mode_resolved
    if req and res and req != res and res != "NONE" and (f.primary is None or downgrades):
        f.add("log.mode-changed", [], f"requested {req}, ran {res}")


def _acceptance(f: LogFacts, state: ScanState) -> None:
    """Acceptance that collapsed or fell during the run (metrics lines, pasted tables)."""
    acc = state.config.acceptance
    table = state.hits("health.acceptance-table")
    collapsed = (acc.rate_min is not None and acc.rate_min <= k.COLLAPSED_RATE) or (
        acc.mean_length_min is not None and acc.mean_length_min <= k.COLLAPSED_LENGTH
    )
    if collapsed:
        f.add("log.acceptance-collapsed", state.hits(*_ACCEPT_SIGNALS)[:2])
        if acc.rate_first is not None and acc.rate_min is not None:
            healthy = [h for h in table if float(h.groups.get("rate") or 0) >= k.HEALTHY_RATE]
            if healthy:
                f.add("log.acceptance-healthy-elsewhere", healthy[:1])
    elif (
        acc.rate_first is not None
        and acc.rate_last is not None
        and acc.rate_first >= k.FELL_FROM_RATE
        and (acc.rate_last < k.FELL_RATIO * acc.rate_first)
    ):
        f.add("log.acceptance-fell", [], f"rate {acc.rate_first:.2f} to {acc.rate_last:.2f}")
    elif (
        acc.mean_length_first is not None
        and acc.mean_length_last is not None
        and (acc.mean_length_first - acc.mean_length_last >= k.FELL_LENGTH)
    ):
        detail = f"mean length {acc.mean_length_first} to {acc.mean_length_last}"
        f.add("log.acceptance-fell", [], detail)


_ACCEPT_SIGNALS = ("health.acceptance-table", "health.acceptance-prose")


def _statement_context(f: LogFacts, state: ScanState) -> None:
    """What the reporter-statement rules combine with: engine, draft, backend, spec decode."""
    cfg = state.config
    if cfg.attention_backend:
        f.add(f"attn.{cfg.attention_backend}")
    if cfg.spec_method or any(fr.SPEC in fr_.tags for fr_ in f.frames):
        f.add("ctx.spec")
    if cfg.framework:
        f.add(f"fw.{cfg.framework}")
    if cfg.spec_method:
        f.add(f"draft.{cfg.spec_method.lower()}")


def said_facts(ticket: Ticket | None) -> dict[str, list[Said]]:
    """The reporter's statements by fact, title statements first."""
    out: dict[str, list[Said]] = {}
    for s in ticket.statements if ticket is not None else []:
        out.setdefault(s.id, []).append(s)
    return {fact: sorted(said, key=lambda s: not s.title) for fact, said in out.items()}


def _shape_facts(f: LogFacts, shapes: list[Hit]) -> None:
    """What a shape error's sizes are (issue 29). Widths or vocabularies (`log.shape-sized`)
    name a config mismatch; token counts (`log.shape-tokens`) name bookkeeping; sizes that say
    neither name nothing (symbolic token lengths such as `(N+len(...))` were once read as
    widths). The first few shape lines are read, as a reporter's sentence often precedes the
    quoted error."""
    for h in shapes[:3]:
        text = h.text.lower()
        if _view_rows_disagree(text):
            f.add("log.shape-tokens", [h], "the view's rows fit its widths; its count does not")
            return
        nums = [int(x) for m in k.SHAPE_NUMBERS.finditer(text) for x in m.groups() if x]
        vocab = k.VOCABISH.search(text) or any(n >= k.VOCAB_MIN for n in nums)
        hidden = k.HIDDENISH.search(text)
        widths = [n for n in nums if n >= k.WIDTH_MIN and n % k.WIDTH_STEP == 0]
        if vocab or hidden or widths or k.WEIGHTISH.search(text):
            f.add("log.shape-sized", [h])
            if vocab or hidden:
                f.add("log.shape-width", [h])
                f.add("ctx.vocab-shape" if vocab else "ctx.hidden-shape", [h])
            return
    first = shapes[0]
    text = first.text.lower()
    nums = [int(x) for m in k.SHAPE_NUMBERS.finditer(text) for x in m.groups() if x]
    if nums:
        f.add("log.shape-tokens", [first], f"sizes {', '.join(map(str, nums))}")
    elif k.TOKENISH.search(text):
        f.add("log.shape-tokens", [first], "sizes named as token counts")


def _view_rows_disagree(text: str) -> bool:
    """A view refused although the input divides by the widths after its leading count: the
    rows are as wide as the view says, so the mismatch is the count of rows (tokens or
    requests), not a width. A `-1` stands for the one size torch would infer."""
    m = k.VIEW_SHAPE.search(text)
    if m is None:
        return False
    dims = [int(d) for d in m.group("dims").replace(" ", "").split(",")]
    lead, width = dims[0], math.prod(d for d in dims[1:] if d != -1)
    if lead <= 0 or width <= 0:
        return False
    return int(m.group("n")) % width == 0
