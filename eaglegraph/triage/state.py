"""What a scan accumulates, in bounded memory, for the rules to weigh afterwards.

A log can be gigabytes long and repeat one error a million times (device asserts print once
per CUDA thread). Each signal therefore keeps only its first and last few hits plus a count,
and traceback/py-spy frames are kept as a bounded set of blocks. The first hits decide the
primary error; the last ones tell how the log ended.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field

from eaglegraph.known.triage_signals import SignalKind
from eaglegraph.results.triage import CapturePhase, TriageConfig

KEEP_FIRST = 24
KEEP_LAST = 24
TEXT_LIMIT = 400


@dataclass
class Hit:
    line: int
    text: str
    signal: str
    kind: SignalKind
    groups: dict[str, str | None] = field(default_factory=dict)


@dataclass
class SignalRecord:
    count: int = 0
    first: list[Hit] = field(default_factory=list)
    last: deque[Hit] = field(default_factory=lambda: deque(maxlen=KEEP_LAST))

    def add(self, hit: Hit) -> None:
        self.count += 1
        if len(self.first) < KEEP_FIRST:
            self.first.append(hit)
        else:
            self.last.append(hit)

    def hits(self) -> list[Hit]:
        return [*self.first, *self.last]


@dataclass
class Frame:
    """One stack frame from a Python traceback, a faulthandler dump or a py-spy dump."""

    line: int
    file: str
    func: str
    code: str | None
    tags: tuple[str, ...]
    source: str
    text: str = ""


@dataclass
class FrameBlock:
    start: int
    end: int
    source: str
    frames: list[Frame] = field(default_factory=list)


MAX_BLOCK_FRAMES = 400
MAX_BLOCKS_FIRST = 8
MAX_BLOCKS_LAST = 32


@dataclass
class ScanState:
    config: TriageConfig = field(default_factory=TriageConfig)
    signals: dict[str, SignalRecord] = field(default_factory=dict)
    blocks_first: list[FrameBlock] = field(default_factory=list)
    blocks_last: deque[FrameBlock] = field(default_factory=lambda: deque(maxlen=MAX_BLOCKS_LAST))
    current_block: FrameBlock | None = None
    captures: list[CapturePhase] = field(default_factory=list)
    captures_finished_line: int | None = None
    running_reqs: deque[tuple[int, int, str]] = field(default_factory=lambda: deque(maxlen=64))
    framework_votes: Counter[str] = field(default_factory=Counter)
    serving_first_line: int | None = None
    serving_last_line: int | None = None
    table_accept_col: int | None = None
    table_header_line: int | None = None
    lines: int = 0
    bytes_read: int = 0
    notes: list[str] = field(default_factory=list)
    ranks: dict[str, int] = field(default_factory=dict)

    # -- signals --------------------------------------------------------------------------
    def add(
        self,
        line: int,
        text: str,
        signal: str,
        kind: SignalKind,
        groups: dict[str, str | None] | None = None,
    ) -> None:
        rec = self.signals.get(signal)
        if rec is None:
            rec = self.signals[signal] = SignalRecord()
        rec.add(Hit(line, text[:TEXT_LIMIT], signal, kind, dict(groups or {})))

    def hits(self, *signals: str) -> list[Hit]:
        out: list[Hit] = []
        for s in signals:
            rec = self.signals.get(s)
            if rec is not None:
                out.extend(rec.hits())
        out.sort(key=lambda h: h.line)
        return out

    def count(self, *signals: str) -> int:
        return sum(self.signals[s].count for s in signals if s in self.signals)

    # -- frames ---------------------------------------------------------------------------
    def add_frame(self, frame: Frame, gap: int = 12) -> None:
        """Frames closer than `gap` lines (and of one source) belong to one block."""
        block = self.current_block
        if block is None or frame.line - block.end > gap or block.source != frame.source:
            self.close_block()
            block = self.current_block = FrameBlock(frame.line, frame.line, frame.source)
        block.end = frame.line
        if len(block.frames) < MAX_BLOCK_FRAMES:
            block.frames.append(frame)

    def close_block(self) -> None:
        if self.current_block is not None:
            if len(self.blocks_first) < MAX_BLOCKS_FIRST:
                self.blocks_first.append(self.current_block)
            else:
                self.blocks_last.append(self.current_block)
            self.current_block = None

    def blocks(self) -> list[FrameBlock]:
        self.close_block()
        return [*self.blocks_first, *self.blocks_last]

    # -- serving --------------------------------------------------------------------------
    def serving(self, line: int) -> None:
        if self.serving_first_line is None:
            self.serving_first_line = line
        self.serving_last_line = line
