"""Where in the engine's life the failure happened: capture, serving, profiling or startup.

An error's meaning depends on its phase: the same illegal-address fault is a capture failure
while a capture pass is open and a stale read when it follows "Graph capturing finished". The
phase comes from, in order: capture frames in the failing traceback, a capture pass still open
at the error line, replay frames, memory-profiling frames, padding lines, serving frames and
serving evidence before the error. py-spy dumps of a live process say where it is *stuck*.
"""

from __future__ import annotations

from eaglegraph import frames as fr
from eaglegraph.results.triage import PhaseInfo
from eaglegraph.triage.state import Frame, FrameBlock, Hit, ScanState


def relevant_frames(state: ScanState, error_line: int | None) -> list[Frame]:
    """Frames of the traceback (or dump) that belongs to the error, outermost first."""
    blocks = state.blocks()
    if not blocks:
        return []
    if error_line is None:
        chosen: list[FrameBlock] = [blocks[-1]]
        # A chained traceback prints several blocks in a row; keep the adjacent ones.
        for b in reversed(blocks[:-1]):
            if chosen[0].start - b.end <= 40:
                chosen.insert(0, b)
            else:
                break
        return [f for b in chosen for f in _ordered(b)]
    before = [b for b in blocks if b.start <= error_line and error_line - b.end <= 200]
    after = [b for b in blocks if 0 < b.start - error_line <= 6]  # faulthandler after a crash
    picked = before[-2:] + after[:1]
    return [f for b in picked for f in _ordered(b)]


def _ordered(block: FrameBlock) -> list[Frame]:
    """Outermost first: py-spy prints the innermost frame first, Python tracebacks last."""
    return list(reversed(block.frames)) if block.source == "py-spy" else list(block.frames)


def crash_frames(frames: list[Frame]) -> list[Frame]:
    """Frames of a traceback or fault dump (a crash), not of a live process's stack dump."""
    return [f for f in frames if f.source != "py-spy"]


def tags_of(frames: list[Frame]) -> set[str]:
    return {t for f in frames for t in f.tags}


def _open_capture_at(state: ScanState, line: int | None):
    for ph in reversed(state.captures):
        if line is None:
            if not ph.finished:
                return ph
        elif ph.begin_line <= line and (not ph.finished or (ph.end_line or 0) > line):
            return ph
    return None


def phase_of(state: ScanState, primary: Hit | None, frames: list[Frame]) -> PhaseInfo:
    line = primary.line if primary else None
    live = [f for f in frames if f.source == "py-spy"]
    frames = crash_frames(frames)
    tags = tags_of(frames)
    captures = list(state.captures)
    finished: bool | None = None
    if captures:
        finished = all(ph.finished for ph in captures)
    if state.captures_finished_line is not None and (finished is None):
        finished = True
    open_ph = _open_capture_at(state, line)
    crashed = primary is not None or bool(frames)
    if live and not crashed:
        inner = next((f for f in reversed(live) if f.tags and f.tags != (fr.IDLE,)), live[-1])
        what = ", ".join(t for t in inner.tags if t != fr.IDLE) or "no graph/draft frame"
        return PhaseInfo(
            "stuck", f"live stack dump: innermost {inner.func} ({what})", captures, finished
        )

    def describe(ph) -> str:
        where = f"{ph.name}" + (f" ({ph.mode})" if ph.mode else "")
        if ph.done is not None and ph.total is not None:
            where += f" stopped at {ph.done}/{ph.total}"
        if ph.batch_size is not None:
            where += f", bs={ph.batch_size}"
        return where

    if fr.CAPTURE in tags:
        f = next(f for f in frames if fr.CAPTURE in f.tags)
        detail = f"traceback inside capture: {f.func} ({_short(f.file)})"
        if open_ph is not None:
            detail = f"capture of {describe(open_ph)}; " + detail
        return PhaseInfo("capture", detail, captures, finished)
    if open_ph is not None and crashed:
        return PhaseInfo("capture", f"capture of {describe(open_ph)}", captures, finished)
    if fr.REPLAY in tags:
        f = next(f for f in frames if fr.REPLAY in f.tags)
        return PhaseInfo(
            "serving", f"graph replay: {f.func} ({_short(f.file)})", captures, finished
        )
    if fr.PROFILE in tags:
        f = next(f for f in frames if fr.PROFILE in f.tags)
        return PhaseInfo("memory-profiling", f"{f.func} ({_short(f.file)})", captures, finished)
    served = state.serving_first_line is not None and (
        line is None or state.serving_first_line < line
    )
    done_before = state.captures_finished_line is not None and (
        line is None or state.captures_finished_line < line
    )
    ended_before = any(
        ph.finished and (line is None or (ph.end_line or 0) < line) for ph in captures
    )
    padded = [h for h in state.hits("context.padding") if line is None or h.line <= line]
    if padded and crashed:
        return PhaseInfo(
            "serving", f"padded graph replay: {padded[-1].text[:120]}", captures, finished
        )
    if fr.SERVING in tags:
        f = next(f for f in frames if fr.SERVING in f.tags)
        return PhaseInfo("serving", f"{f.func} ({_short(f.file)})", captures, finished)
    if fr.STARTUP in tags:
        f = next(f for f in frames if fr.STARTUP in f.tags)
        return PhaseInfo("startup", f"{f.func} ({_short(f.file)})", captures, finished)
    if done_before or (ended_before and crashed):
        return PhaseInfo("serving", "after CUDA-graph capture finished", captures, finished)
    if served:
        return PhaseInfo("serving", "while serving requests", captures, finished)
    if primary is not None and primary.signal == "memory.negative-estimate":
        return PhaseInfo(
            "memory-profiling", "CUDA-graph memory estimate before KV sizing", captures, finished
        )
    if open_ph is not None:
        return PhaseInfo(
            "capture", f"log ends during capture of {describe(open_ph)}", captures, False
        )
    if line is not None and captures and line < min(ph.begin_line for ph in captures):
        return PhaseInfo("startup", "before CUDA-graph capture", captures, finished)
    if not crashed:
        return PhaseInfo("none", "no failure line in the log", captures, finished)
    return PhaseInfo("unknown", None, captures, finished)


def _short(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 2)[-1] if path else ""
