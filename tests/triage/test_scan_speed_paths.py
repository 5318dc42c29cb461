"""The fast paths of the scan find exactly what the plain searches find.

`Matcher.finditer` (the anchor prefilter cut in pieces and merged) must yield the matches of
the one alternation, and each trigger finder the offsets of `bytes.find`; the end-to-end cases
pin a failure line in the middle of a big log wherever the reading puts it: across a block
boundary, first or last in a block, with CRLF endings, Latin-1 bytes, or after (and at the end
of) a 200 KB line.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from eaglegraph.triage.diagnose import triage_path
from eaglegraph.triage.reader import BLOCK
from eaglegraph.triage.registry import MATCHER, prefilter
from eaglegraph.triage.scan import _FINDERS, HEAD_BYTES, TAIL_BYTES, TRIGGERS, _rare_byte

from .helpers_triage import LOGS, dev_reports

FIXTURES = Path(__file__).parent / "fixtures"


def _spans(matches) -> list[tuple[int, int, bytes]]:
    return [(m.start(), m.end(), m.group()) for m in matches]


def _assert_split_prefilter_agrees(buf: bytes, start: int = 0, end: int | None = None) -> int:
    end = len(buf) if end is None else end
    want = _spans(prefilter().finditer(buf, start, end))
    assert _spans(MATCHER.finditer(buf, start, end)) == want
    return len(want)


def _literal_anchors() -> list[str]:
    return sorted({a for p in MATCHER.patterns for a in p.anchors if a})


def test_split_prefilter_agrees_on_the_corpus() -> None:
    texts = [r["log_excerpt"] for r in dev_reports()]
    texts += [path.read_text(encoding="utf-8") for path in sorted(LOGS.glob("*.log"))]
    for path in sorted(FIXTURES.glob("*.jsonl")):
        with open(path, encoding="utf-8") as fh:
            texts += [json.loads(line).get("log_excerpt") or "" for line in fh if line.strip()]
    buf = "\n".join(texts).encode("utf-8", "surrogatepass")
    assert _assert_split_prefilter_agrees(buf) > 1000
    # a region that starts and ends inside lines, as windows and samples do
    assert _assert_split_prefilter_agrees(buf, 1001, len(buf) - 777) > 1000


def test_split_prefilter_agrees_where_anchors_overlap() -> None:
    """Where one anchor's end is another's start, the one alternation takes the leftmost and
    skips what it covers; the pieces must too, including a piece's match that starts inside
    a match taken from another piece, behind which a match of its own is hidden."""
    anchors = _literal_anchors()
    pieces = []
    for a in anchors:
        for b in anchors:
            for k in range(1, min(len(a), len(b))):
                if a[-k:] == b[:k]:
                    pieces.append(a + b[k:])
    assert len(pieces) > 50
    buf = " | ".join(pieces).encode()
    assert _assert_split_prefilter_agrees(buf) > len(pieces)


def test_split_prefilter_agrees_on_anchor_soup() -> None:
    """Anchors run together and cut at random, so matches start inside other matches."""
    rng = random.Random(11)
    anchors = _literal_anchors()
    for _ in range(20):
        parts = []
        for _ in range(400):
            a = rng.choice(anchors)
            cut = rng.randint(0, len(a) - 1)
            parts.append(a[cut:] if rng.random() < 0.3 else a)
            if rng.random() < 0.3:
                parts.append(rng.choice(["", " ", "\n", "\r", "x", "GPU 3 ", "Thread 0x7f3e ("]))
        buf = "".join(parts).encode()
        _assert_split_prefilter_agrees(buf)
        _assert_split_prefilter_agrees(buf, rng.randint(0, 50), len(buf) - rng.randint(0, 50))


def test_split_prefilter_on_nothing() -> None:
    assert list(MATCHER.finditer(b"", 0, 0)) == []
    assert list(MATCHER.finditer(b"Error Error", 3, 3)) == []
    assert _spans(MATCHER.finditer(b"Error Error", 1, 11)) == [(6, 11, b"Error")]


@pytest.mark.parametrize("trigger", range(len(TRIGGERS)), ids=[t.decode() for t in TRIGGERS])
def test_trigger_finders_find_what_bytes_find_finds(trigger: int) -> None:
    needle = TRIGGERS[trigger]
    find = _FINDERS[trigger]
    rng = random.Random(trigger)
    alphabet = b"xVSIGEersoa \n" + needle
    for _ in range(30):
        data = bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 3000)))
        # the needle whole, cut short, at the very start and the very end
        data = needle + data[:1000] + needle[:-1] + data[1000:] + needle
        for start in range(0, len(data) + 2, 7):
            assert find(data, start) == data.find(needle, start), (needle, start)


def test_rare_byte_jumps_hand_over_to_find_where_the_byte_is_common() -> None:
    sigsegv = _rare_byte(b"SIGSEGV", 6)
    dense = b"V" * 100_000 + b"SIGSEGV" + b"GV" * 50_000 + b"SIGSEGV"
    assert sigsegv(dense, 0) == 100_000
    assert sigsegv(dense, 100_001) == len(dense) - 7
    assert sigsegv(dense, len(dense) - 6) == -1
    sparse = (b"VLLM_USE_V1=1 " + b"." * 2000) * 50 + b"SIGSEGV"
    assert sigsegv(sparse, 0) == len(sparse) - 7
    assert sigsegv(b"SIGSEG", 0) == -1 and sigsegv(b"", 0) == -1
    with pytest.raises(ValueError, match="once"):
        _rare_byte(b"SIGSEGV", 0)  # an "S" stands twice in it: no jump gives one place


# --- end to end: one failure line in the middle of a big log -----------------------------------

_LINE = 128  # every filler line, so blocks of 256 KiB hold exactly 2048 of them
_PER_BLOCK = BLOCK // _LINE
_FAILURE = "*** SIGSEGV (@0x0) received by PID 4312 (TID 0x7f3e) from PID 0; stack trace: ***"


def _filler(i: int, eol: bytes = b"\n") -> bytes:
    line = (
        f"(APIServer pid=1) INFO 05-13 10:46:{i % 60:02d} [loggers.py:271] Engine 000: Avg prompt "
        f"throughput: {i % 997}.0 tokens/s, Running: {i % 50} reqs"
    ).encode()
    assert len(line) + len(eol) <= _LINE
    return line.ljust(_LINE - len(eol), b" ") + eol


def _log_with(failure: bytes, before: int, eol: bytes = b"\n", pad: bytes = b"") -> bytes:
    """`before` filler lines, `pad` (a line or nothing), the failure line, 10 blocks more."""
    head = [_filler(i, eol) for i in range(before)]
    tail = [_filler(i, eol) for i in range(_PER_BLOCK * 10)]
    data = b"".join([*head, pad, failure, *tail])
    assert len(data) > HEAD_BYTES + TAIL_BYTES + 4 * BLOCK
    return data


def _primary(tmp_path: Path, data: bytes) -> tuple[int, str, str]:
    path = tmp_path / "serving.log"
    path.write_bytes(data)
    result = triage_path(path)
    assert result.lines == data.count(b"\n")
    assert result.primary_error is not None
    return result.primary_error.line, result.primary_error.text, result.primary_error.signal


def _padding(length: int, eol: bytes = b"\n") -> bytes:
    return b"(APIServer pid=1) INFO filler line ".ljust(length - len(eol), b"-") + eol


BLOCK_AT = 12  # the failure goes near the start of this block, well inside the middle


def test_failure_first_in_a_block(tmp_path: Path) -> None:
    data = _log_with(_FAILURE.encode() + b"\n", _PER_BLOCK * BLOCK_AT)
    assert data.index(b"*** SIGSEGV") == BLOCK * BLOCK_AT
    assert _primary(tmp_path, data) == (_PER_BLOCK * BLOCK_AT + 1, _FAILURE, "error.segfault")


def test_failure_last_in_a_block(tmp_path: Path) -> None:
    failure = _FAILURE.encode() + b"\n"
    pad = _padding(_LINE - len(failure))
    data = _log_with(failure, _PER_BLOCK * BLOCK_AT - 1, pad=pad)
    assert data.index(b"\n", data.index(b"*** SIGSEGV")) == BLOCK * BLOCK_AT - 1
    assert _primary(tmp_path, data) == (_PER_BLOCK * BLOCK_AT + 1, _FAILURE, "error.segfault")


@pytest.mark.parametrize("cut", [1, 7, 9, 40])
def test_failure_line_split_across_blocks(tmp_path: Path, cut: int) -> None:
    """The block boundary falls `cut` bytes into the failure line: at 7 and 9 inside the
    trigger word itself ("*** SIG|SEGV", "*** SIGSE|GV")."""
    pad = _padding(_LINE - cut)
    data = _log_with(_FAILURE.encode() + b"\n", _PER_BLOCK * BLOCK_AT - 1, pad=pad)
    assert data.index(b"*** SIGSEGV") == BLOCK * BLOCK_AT - cut
    assert _primary(tmp_path, data) == (_PER_BLOCK * BLOCK_AT + 1, _FAILURE, "error.segfault")


def test_failure_with_crlf_endings(tmp_path: Path) -> None:
    data = _log_with(_FAILURE.encode() + b"\r\n", _PER_BLOCK * BLOCK_AT, eol=b"\r\n")
    assert _primary(tmp_path, data) == (_PER_BLOCK * BLOCK_AT + 1, _FAILURE, "error.segfault")


def test_failure_with_latin1_bytes(tmp_path: Path) -> None:
    failure = _FAILURE.replace("stack trace", "Stapelr\xfcckverfolgung").encode("latin-1")
    data = _log_with(failure + b"\n", _PER_BLOCK * BLOCK_AT - 1, pad=_padding(77))
    line, text, signal = _primary(tmp_path, data)
    assert (line, signal) == (_PER_BLOCK * BLOCK_AT + 1, "error.segfault")
    assert text == _FAILURE.replace("stack trace", "Stapelr\ufffdckverfolgung")


def _long_line(size: int, end: str = "") -> bytes:
    rng = random.Random(5)
    words = ["the", "model", "token", "request", "latency", "batch", "prompt", "summary", "42"]
    text = " ".join(rng.choice(words) for _ in range(size // 5))
    return ('{"event": "request", "prompt": "' + text[:size] + '"}' + end + "\n").encode()


def test_failure_after_a_200_kb_line(tmp_path: Path) -> None:
    long = _long_line(200_000)
    data = _log_with(_FAILURE.encode() + b"\n", _PER_BLOCK * BLOCK_AT, pad=long)
    expected = _PER_BLOCK * BLOCK_AT + 2
    assert _primary(tmp_path, data) == (expected, _FAILURE, "error.segfault")


def test_failure_at_the_end_of_a_200_kb_line(tmp_path: Path) -> None:
    """An over-long line keeps its head and its tail; the failure in its tail is found, on
    that line (the evidence quotes the start of the tail's segment)."""
    long = _long_line(200_000, end=" " + _FAILURE)
    data = _log_with(long, _PER_BLOCK * BLOCK_AT)
    line, _, signal = _primary(tmp_path, data)
    assert (line, signal) == (_PER_BLOCK * BLOCK_AT + 1, "error.segfault")


def test_filler_has_no_trigger_and_every_failure_here_has_one() -> None:
    """The cases above test the trigger search only if the filler carries no trigger."""
    filler = b"".join(_filler(i) for i in range(3000)) + _long_line(200_000) + _padding(99)
    assert not any(t in filler for t in TRIGGERS)
    assert re.search(b"|".join(TRIGGERS), _FAILURE.encode())
