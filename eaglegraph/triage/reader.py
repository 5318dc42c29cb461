"""Streaming a log from a file, stdin or a compressed file, as blocks of whole lines.

Logs arrive gzip'ed, as UTF-16 from Windows shells, with binary junk from a crashed process,
with tqdm progress bars that rewrite one line with `\\r` for minutes, and sometimes as one
10 MB line. Reading works on bytes in fixed-size blocks so memory stays constant; every block
ends at a line boundary; an over-long line keeps its head and its tail (the tail of a progress
bar is its final state) joined by `\\r`, so it is still read as separate segments. Decoding
happens later, per candidate line, with `errors="replace"`: nothing in the input can make the
reader raise, only a path that cannot be opened (`BadInput`).
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import lzma
import os
import re
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, cast

from eaglegraph.errors import BadInput

BLOCK = 256 * 1024
MAX_LINE = 64 * 1024
# An endless input (/dev/zero, `yes |`) must end: past this many decoded bytes the rest is
# left unread and a note says so. Real crash logs are far smaller.
MAX_INPUT = int(os.environ.get("EAGLEGRAPH_TRIAGE_MAX_BYTES", 512 * 1024 * 1024))
# The head decides whether the input is text at all: noise is refused, not diagnosed.
_TEXT_HEAD = 64 * 1024
_NOT_TEXT_SHARE = 0.3
_TEXT_CONTROLS = frozenset(b"\t\n\r\x0b\x0c\x08\x1b")

_GZIP = b"\x1f\x8b"
_BZ2 = b"BZh"
_XZ = b"\xfd7zXZ\x00"


class _Chain(io.RawIOBase):
    """Bytes already read (to sniff the format) followed by the rest of the stream.

    `read` and `read1` hand the rest's bytes on as they come, so a chain needs no
    `BufferedReader` around it: every layer of buffering copied each block of a large log
    once more (sniffing, the text check and the ticket head each put one in front).
    """

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head = head
        self._at = 0  # how much of the head has been handed out
        self._rest = rest
        self._step = getattr(rest, "read1", rest.read)

    def readable(self) -> bool:
        return True

    def _take(self, n: int) -> bytes:
        if n < 0:
            n = len(self._head) - self._at
        take = self._head[self._at : self._at + n]
        self._at += len(take)
        if self._at >= len(self._head):
            self._head, self._at = b"", 0
        return take

    def read(self, n: int | None = -1) -> bytes:
        if n is None or n < 0:
            return self._take(-1) + self._rest.read()
        if self._head:
            return self._take(n)
        return self._rest.read(n)

    def read1(self, n: int = -1) -> bytes:
        if self._head:
            return self._take(n)
        return self._step(n)

    def readinto(self, buf) -> int:
        data = self.read1(len(buf))
        buf[: len(data)] = data
        return len(data)


class _Transcode(io.RawIOBase):
    """UTF-16 (with or without BOM) re-encoded as UTF-8, so the byte-level scan works."""

    def __init__(self, raw: BinaryIO, encoding: str) -> None:
        self._reader = codecs.getreader(encoding)(raw, "replace")
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        while not self._pending:
            text = self._reader.read(BLOCK // 2)
            if not text:
                return 0
            self._pending = text.encode("utf-8", "replace")
        n = min(len(buf), len(self._pending))
        buf[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n


def _utf16_without_bom(head: bytes) -> str | None:
    """ASCII text in UTF-16 has a NUL in every other byte; which half tells the byte order."""
    sample = head[:4096]
    if len(sample) < 64:
        return None
    even = sample[0::2].count(0)
    odd = sample[1::2].count(0)
    half = len(sample) // 2
    if odd > 0.8 * half and even < 0.1 * half:
        return "utf-16-le"
    if even > 0.8 * half and odd < 0.1 * half:
        return "utf-16-be"
    return None


def chain(head: bytes, rest: BinaryIO) -> BinaryIO:
    """`head` (bytes read ahead to look at them) put back in front of the rest of the stream."""
    return cast(BinaryIO, _Chain(head, rest))


_READ_ERRORS = (EOFError, OSError, zlib.error, lzma.LZMAError, ValueError)


class _Reader:
    """Reads up to n bytes in small steps, so a corrupt or cut stream keeps what came before."""

    def __init__(self, stream: BinaryIO, notes: list[str]) -> None:
        self.stream = stream
        self.notes = notes
        self.ended = False
        self._step = getattr(stream, "read1", stream.read)

    def read(self, n: int) -> bytes:
        if self.ended:
            return b""
        parts: list[bytes] = []
        got = 0
        while got < n:
            try:
                data = self._step(n - got)
            except _READ_ERRORS as exc:
                self.notes.append(
                    f"input ends early ({type(exc).__name__}: {exc}); read what came before"
                )
                self.ended = True
                break
            if not data:
                break
            parts.append(data)
            got += len(data)
        return b"".join(parts)


def _read_head(stream: BinaryIO, notes: list[str]) -> bytes:
    return _Reader(stream, notes).read(8192)


def sniff(raw: BinaryIO, notes: list[str]) -> BinaryIO:
    """Undo compression and UTF-16 by looking at the first bytes, not at the file name."""
    head = _read_head(raw, notes)
    stream: BinaryIO = chain(head, raw)
    if head.startswith(_GZIP):
        notes.append("input is gzip-compressed")
        stream = gzip.GzipFile(fileobj=stream, mode="rb")  # type: ignore[assignment]
        head = b""
    elif head.startswith(_BZ2):
        notes.append("input is bzip2-compressed")
        stream = bz2.BZ2File(stream)  # type: ignore[assignment]
        head = b""
    elif head.startswith(_XZ):
        notes.append("input is xz-compressed")
        stream = lzma.LZMAFile(stream)  # type: ignore[assignment]  # noqa: SIM115
        head = b""
    if not head:
        head = _read_head(stream, notes)
        stream = chain(head, stream)
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        notes.append("input is UTF-16 text")
        return io.BufferedReader(_Transcode(stream, "utf-16"), buffer_size=BLOCK)
    encoding = _utf16_without_bom(head)
    if encoding:
        notes.append(f"input looks like {encoding.upper()} text without a byte-order mark")
        return io.BufferedReader(_Transcode(stream, encoding), buffer_size=BLOCK)
    return stream


@contextmanager
def open_log(path: str | os.PathLike[str], stdin: BinaryIO | None = None) -> Iterator[BinaryIO]:
    """Open `path` ('-' for stdin) for reading; unreadable paths are `BadInput`."""
    if str(path) == "-":
        stream = stdin if stdin is not None else getattr(sys.stdin, "buffer", None)
        if stream is None:
            raise BadInput("LOG is '-' but there is no standard input to read")
        try:
            # a stream a library caller hands in is theirs to judge; the user's stdin is checked
            yield _checked(stream) if stdin is None else stream
        except InputRejected as exc:
            raise BadInput(f"standard input {exc.message}", exc.hint) from None
        return
    p = Path(path)
    if not p.exists():
        raise BadInput(f"log file {p} does not exist")
    if p.is_dir():
        raise BadInput(f"{p} is a directory, expected a log file (or '-' for stdin)")
    try:
        fh = open(p, "rb")  # noqa: SIM115 - closed below
    except PermissionError:
        raise BadInput(f"cannot read {p}: permission denied") from None
    except OSError as exc:
        raise BadInput(f"cannot read {p}: {exc.strerror or exc}") from None
    try:
        yield _checked(fh)
    except InputRejected as exc:
        raise BadInput(f"{p} {exc.message}", exc.hint) from None
    finally:
        fh.close()


class InputRejected(BadInput):
    """The input opened fine but holds nothing to diagnose (empty, or not text)."""


_PRINTABLE_RUN = re.compile(rb"[\x20-\x7e\t]{40}")


def check_text(head: bytes) -> None:
    """Refuse an empty input, or one whose head is binary noise rather than a log.

    Compressed and UTF-16 heads pass (the sniffer decodes them). A head counts as noise when
    most of it is NULs or invalid UTF-8 and no run of 40 printable characters appears, so a
    log with a crashed process's junk before its text is still read.
    """
    if not head:
        raise InputRejected("is empty", "nothing to diagnose")
    if head.startswith((_GZIP, _BZ2, _XZ, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return
    if _utf16_without_bom(head[:8192]):
        return
    if not head.strip(b" \t\r\n\x0b\x0c\x00"):
        raise InputRejected("holds only whitespace and NUL bytes", "nothing to diagnose")
    text = head.decode("utf-8", errors="replace")
    odd = sum(
        1 for ch in text if ch == "\ufffd" or (ord(ch) < 32 and ord(ch) not in _TEXT_CONTROLS)
    )
    if odd > _NOT_TEXT_SHARE * len(text) and not _PRINTABLE_RUN.search(head):
        raise InputRejected(
            f"is not a text log ({odd * 100 // len(text)}% of its first "
            f"{max(len(head) // 1024, 1)} KiB is binary)",
            "give the server's log as text; gzip, bzip2, xz and UTF-16 are decoded",
        )


def _checked(stream: BinaryIO) -> BinaryIO:
    """The stream with its head checked by `check_text` and put back in front of the rest."""
    head = _Reader(stream, []).read(_TEXT_HEAD)
    check_text(head)
    return chain(head, stream)


def iter_blocks(
    raw: BinaryIO, notes: list[str], block_size: int = BLOCK, max_line: int = MAX_LINE
) -> Iterator[bytes]:
    """Blocks of whole lines, each ending in b'\\n'; over-long lines shortened to head + tail."""
    reader = _Reader(sniff(raw, notes), notes)
    half = max_line // 2
    pending = b""
    long_head: bytes | None = None  # head of an over-long line being skipped
    long_tail = b""
    shortened = 0
    undecodable = _Undecodable()
    total = 0
    while True:
        data = reader.read(block_size)
        if not data:
            break
        total += len(data)
        if total > MAX_INPUT:
            notes.append(
                f"input is longer than {MAX_INPUT // 2**20} MiB (endless?): "
                "read only its first part"
            )
            break
        if long_head is not None:
            nl = data.find(b"\n")
            if nl < 0:
                long_tail = (long_tail + data)[-half:]
                continue
            long_tail = (long_tail + data[:nl])[-half:]
            yield long_head + b"\r" + long_tail + b"\n"
            long_head, long_tail = None, b""
            data = data[nl + 1 :]
        # `pending` never holds a newline, so the block ends at data's last one; joining
        # through a memoryview copies the bytes once
        cut = data.rfind(b"\n")
        if cut < 0:
            pending = pending + data if pending else data
        else:
            if pending:
                block = b"".join((pending, memoryview(data)[: cut + 1]))
            else:
                block = data if cut + 1 == len(data) else data[: cut + 1]
            pending = data[cut + 1 :]
            undecodable.count(block)
            yield block
        if len(pending) > max_line:
            shortened += 1
            long_head, long_tail, pending = pending[:half], pending[-half:], b""
    if long_head is not None:
        yield long_head + b"\r" + long_tail + b"\n"
    if pending:
        yield pending + b"\n"
    if shortened:
        notes.append(
            f"{shortened} line(s) longer than {max_line // 1024} KiB were shortened for matching"
        )
    if undecodable.lines:
        notes.append(
            f"{undecodable.lines} line(s) hold bytes that are not UTF-8: read with U+FFFD "
            "in their place"
        )


_DECODE_PIECE = 16 * 1024


class _Undecodable:
    """Counts the lines with bytes that are not UTF-8 (the scan decodes them with
    errors="replace", so the input is repaired, and the result says so). ASCII blocks, nearly
    every block of a log, cost one C-level check; in the others, decoding resumes after each
    bad line (a line being what `bytes.splitlines` cuts: `\\n`, `\\r` or both), in pieces of
    16 KiB, so a block is decoded about once however many bad lines it holds."""

    def __init__(self) -> None:
        self.lines = 0

    def count(self, block: bytes) -> None:
        if block.isascii():
            return
        view = memoryview(block)
        pos = 0
        cr = block.find(b"\r")  # the next b"\r" (-1: none left), looked up again once passed
        while pos < len(block):
            # a piece ending after a newline decodes as it would inside the whole block
            stop = block.find(b"\n", pos + _DECODE_PIECE)
            stop = len(block) if stop < 0 else stop + 1
            try:
                str(view[pos:stop], "utf-8")
                pos = stop
                continue
            except UnicodeDecodeError as exc:
                bad = pos + exc.start
            self.lines += 1
            # UTF-8 decoding starts afresh at every ASCII byte, so the bad bytes lie in the
            # line that holds the first of them; go on after that line's end
            if 0 <= cr < bad:
                cr = block.find(b"\r", bad)
            nl = block.find(b"\n", bad)
            if nl < 0 and cr < 0:
                return
            pos = (nl if cr < 0 or 0 <= nl < cr else cr) + 1
