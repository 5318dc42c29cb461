"""One pass over the log: decide which lines are worth decoding, then dispatch pattern matches.

Reading every line in Python caps out far below disk speed, and so does one big regex
alternation (`re` spends ~10 ns per byte scanning for a set of first characters). What is fast
is `bytes.find` for a single literal (~1 GB/s). So the log is read in three ways:

- *full* regions: the head (startup, config dump, captures: up to 1 MiB, ending one block
  after the block in which the server began serving), the tail (last 512 KiB: how it ended)
  and one block in 128 of the middle (a sample of periodic metrics) go through the anchor
  prefilter of every pattern (prose, command lines, metrics included);
- *trigger* search in the rest: six literals that every failure line carries ("rror",
  "xception", "ssert", "egmentation", "atchdog", "SIGSEGV") are searched with `bytes.find`
  or whatever finds the same offsets faster for that literal (`_FINDERS`);
- *windows*: around every trigger, the preceding 48 KiB and following 16 KiB are read as a
  full region, which recovers the traceback frames, the capture progress bar, the padding
  line and the watchdog lines that belong to the failure.

Memory stays constant: at most the current and the previous block plus the tail window.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from typing import BinaryIO

from eaglegraph.triage.prefixes import strip_prefixes
from eaglegraph.triage.reader import MAX_LINE, iter_blocks
from eaglegraph.triage.registry import ANCHORS_STAY_IN_LINE, find_anchors, match_line
from eaglegraph.triage.state import ScanState

HEAD_BYTES = 1024 * 1024
TAIL_BYTES = 512 * 1024
SAMPLE_EVERY = 128
WINDOW_BEFORE = 48 * 1024
WINDOW_AFTER = 16 * 1024
TRIGGERS = (b"rror", b"xception", b"ssert", b"egmentation", b"atchdog", b"SIGSEGV")
_FRAME_IDS = ("frame.python",)


Finder = Callable[[bytes, int], int]


def _word(needle: bytes) -> Finder:
    """`bytes.find`: ~1 GB/s whatever the word (measured faster than `re` for these)."""
    return lambda data, start: data.find(needle, start)


def _first_char(needle: bytes) -> Finder:
    """A literal regex: `re` skips to a rare first character faster than `bytes.find` scans."""
    search = re.compile(re.escape(needle)).search

    def find(data: bytes, start: int) -> int:
        m = search(data, start)
        return -1 if m is None else m.start()

    return find


# Rare bytes closer than this on average make the jumps of `_rare_byte` (~200 ns each in
# Python) slower than `bytes.find` of the word; then the word is searched from there on.
_DENSE = 256


def _rare_byte(needle: bytes, at: int) -> Finder:
    """Jumps between the bytes `needle[at]`, rare in logs (a capital "V"), comparing the needle
    around each: `bytes.find` of one byte is memchr (~20 GB/s), of a word ~1 GB/s.

    Each occurrence of the needle has that byte `at` bytes in, so the first rare byte at which
    the needle stands gives the first occurrence. Where rare bytes come thick (more than one in
    `_DENSE` bytes, past a few), `bytes.find` takes over after the last one looked at.
    """
    rare = needle[at : at + 1]
    if needle.count(rare) != 1:
        raise ValueError(f"{rare!r} must stand once in {needle!r}")

    def find(data: bytes, start: int) -> int:
        pos = data.find(rare, start + at)
        misses = 0
        while pos >= 0:
            if data.startswith(needle, pos - at):
                return pos - at
            misses += 1
            if misses > 16 + (pos - start) // _DENSE:
                return data.find(needle, pos - at + 1)
            pos = data.find(rare, pos + 1)
        return -1

    return find


# How each trigger is searched, whichever measured fastest over serving logs.
_FINDERS: tuple[Finder, ...] = (
    _word(b"rror"),
    _first_char(b"xception"),
    _word(b"ssert"),
    _word(b"egmentation"),
    _word(b"atchdog"),
    _rare_byte(b"SIGSEGV", 6),
)


class _Scanner:
    """Keeps absolute offsets and line numbers straight across blocks and windows."""

    def __init__(self, state: ScanState) -> None:
        self.state = state
        self.done_to = 0  # absolute byte offset up to which lines have been read in full
        self.prev: tuple[int, int, bytes] | None = None  # (offset, lines before, data)
        self.offset = 0  # absolute offset of the next block
        self.lines = 0  # newlines before the next block

    # -- regions --------------------------------------------------------------------------
    def full(self, buf: bytes, buf_off: int, buf_lines: int, start: int, end: int) -> None:
        """Read lines of buf[start:end] (line-aligned) that were not read before.

        One pass of the anchor prefilter over the region (`find_anchors`) finds the candidate
        lines and, for each, every anchor in it, which `match_line` then needs not look for
        again.
        """
        skip = self.done_to - buf_off
        if skip > start:
            start = min(skip, end)
        if start >= end:
            return
        seen = buf_lines + buf.count(b"\n", 0, start)
        counted_to = start
        ls = le = -1  # the candidate line being gathered: buf[ls:le]
        hits: list[re.Match[bytes]] = []
        for m in find_anchors(buf, start, end):
            if m.start() <= le:
                hits.append(m)
                continue
            if hits:
                seen += buf.count(b"\n", counted_to, ls)
                counted_to = ls
                _handle(self.state, buf, ls, le, seen + 1, hits)
            ls = buf.rfind(b"\n", 0, m.start()) + 1
            le = buf.find(b"\n", m.end(), end)
            if le < 0:
                le = end
            hits = [m]
        if hits:
            seen += buf.count(b"\n", counted_to, ls)
            _handle(self.state, buf, ls, le, seen + 1, hits)
        self.done_to = buf_off + end

    def block(self, data: bytes, mode: str) -> None:
        off, lines = self.offset, self.lines
        if mode == "full":
            self.full(data, off, lines, 0, len(data))
        else:
            self._triggers(data, off, lines)
        self.prev = (off, lines, data)
        self.offset += len(data)
        self.lines += data.count(b"\n")
        self.state.lines = self.lines
        self.state.bytes_read = self.offset

    def _triggers(self, data: bytes, off: int, lines: int) -> None:
        hits: list[int] = []  # the first of each trigger in each line that holds it
        for find in _FINDERS:
            pos = find(data, 0)
            while pos >= 0:
                hits.append(pos)
                nl = data.find(b"\n", pos)
                if nl < 0:
                    break
                pos = find(data, nl + 1)
        if not hits:
            return
        hits.sort()
        if len(hits) > 64:  # a flood of errors: read the block whole
            self._window(data, off, lines, 0, len(data))
            return
        for pos in hits:
            if off + pos < self.done_to:
                continue
            self._window(data, off, lines, pos, pos)

    def _window(self, data: bytes, off: int, lines: int, lo: int, hi: int) -> None:
        """Full-read [lo - WINDOW_BEFORE, hi + WINDOW_AFTER], reaching into the previous block."""
        start = lo - WINDOW_BEFORE
        end = data.find(b"\n", min(len(data) - 1, hi + WINDOW_AFTER))
        end = len(data) if end < 0 else end + 1
        if start < 0 and self.prev is not None and self.prev[0] + len(self.prev[2]) == off:
            p_off, p_lines, p_data = self.prev
            cut = max(0, len(p_data) + start)
            cut = p_data.rfind(b"\n", 0, cut) + 1 if cut > 0 else 0
            buf = p_data[cut:] + data[:end]
            buf_lines = p_lines + p_data.count(b"\n", 0, cut)
            self.full(buf, p_off + cut, buf_lines, 0, len(buf))
            return
        start = max(0, start)
        start = data.rfind(b"\n", 0, start) + 1 if start > 0 else 0
        self.full(data, off, lines, start, end)


def scan(
    raw: BinaryIO,
    state: ScanState | None = None,
    progress: Callable[[int], None] | None = None,
) -> ScanState:
    """Read the whole stream into a `ScanState`; never raises on content.

    `progress`, if given, is called with the size of each block read (for a progress display).
    """
    state = state or ScanState()
    sc = _Scanner(state)
    head_left = HEAD_BYTES
    window: deque[bytes] = deque()
    window_size = 0
    middle = 0
    for block in iter_blocks(raw, state.notes):
        if progress is not None:
            progress(len(block))
        if head_left > 0:
            head_left -= len(block)
            serving = state.serving_first_line is not None
            sc.block(block, "full")
            if serving:
                # The server was serving before this block began: startup is behind, and what
                # follows is the middle's kind (metrics and requests, sampled; failures found
                # by their triggers).
                head_left = 0
            continue
        window.append(block)
        window_size += len(block)
        while window and window_size - len(window[0]) >= TAIL_BYTES:
            old = window.popleft()
            window_size -= len(old)
            middle += 1
            sc.block(old, "full" if middle % SAMPLE_EVERY == 0 else "triggers")
    for block in window:
        sc.block(block, "full")
    state.close_block()
    return state


def _line_at(block: bytes, start: int, end: int) -> str:
    if end - start > MAX_LINE:
        half = MAX_LINE // 2
        raw = block[start : start + half] + b"\r" + block[end - half : end]
    else:
        raw = block[start:end]
    text = raw.decode("utf-8", "replace")
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text


def _anchors_in(
    hits: list[re.Match[bytes]], line_start: int, msg_start: int, msg_end: int
) -> list[str] | None:
    """The anchors `match_line` would find in the message at line offsets [msg_start, msg_end),
    from the prefilter's matches over the whole line; None when they may differ.

    They are the same when the line is ASCII (a byte is a character, and the bytes and str
    patterns agree), no match straddles the message's start (the prefixes peeled off before
    it), and no anchor can match across a line's or segment's end (`ANCHORS_STAY_IN_LINE`):
    the prefilter's scan then meets the message's start between matches, exactly where
    `findall` over the message starts.
    """
    found: list[str] = []
    for m in hits:
        s = m.start() - line_start
        if s >= msg_end:
            break
        if s >= msg_start:
            found.append(m.group().decode("ascii"))
        elif m.end() - line_start > msg_start:
            return None
    return found


def _handle(
    state: ScanState,
    block: bytes,
    start: int,
    end: int,
    lineno: int,
    hits: list[re.Match[bytes]] | None = None,
) -> None:
    if hits is not None and (
        end - start > MAX_LINE or not ANCHORS_STAY_IN_LINE or not block[start:end].isascii()
    ):
        hits = None
    text = _line_at(block, start, end)
    if hits is not None and len(text) != end - start:
        hits = None  # NULs were dropped: offsets no longer line up
    segments = text.split("\r") if "\r" in text else (text,)
    seg_start = 0
    for seg in segments:
        seg_end = seg_start + len(seg)
        if not seg.strip():
            seg_start = seg_end + 1
            continue
        msg, prefix = strip_prefixes(seg)
        found = None if hits is None else _anchors_in(hits, start, seg_end - len(msg), seg_end)
        seg_start = seg_end + 1
        if prefix.framework:
            state.framework_votes[prefix.framework] += 1
        elif "vllm" in msg:
            state.framework_votes["vllm"] += 1
        elif "sglang" in msg or "sgl_kernel" in msg:
            state.framework_votes["sglang"] += 1
        elif "tensorrt_llm" in msg or "TensorRT-LLM" in msg:
            state.framework_votes["trtllm"] += 1
        if prefix.ranks:
            for kind, idx in prefix.ranks.items():
                state.ranks[kind] = max(idx, state.ranks.get(kind, -1))
        for pattern, m in match_line(msg, found):
            pattern.handler(state, lineno, msg, m, prefix)
            if pattern.id in _FRAME_IDS:
                _attach_code(state, block, end)


def _attach_code(state: ScanState, block: bytes, end: int) -> None:
    """The source line printed under a traceback frame tells capture from replay."""
    current = state.current_block
    if current is None or not current.frames or end + 1 >= len(block):
        return
    nxt_end = block.find(b"\n", end + 1)
    if nxt_end < 0:
        nxt_end = len(block)
    code, _ = strip_prefixes(_line_at(block, end + 1, min(nxt_end, end + 1 + 1024)))
    stripped = code.strip()
    if (
        not stripped
        or stripped.startswith(('File "', "Traceback", "^", "~"))
        or not code[:1].isspace()
    ):
        return
    from eaglegraph.frames import classify

    frame = current.frames[-1]
    frame.code = stripped[:300]
    frame.tags = classify(frame.func, frame.file, frame.code)
