"""Inputs as they arrive: compressed, UTF-16, CRLF, NUL bytes, junk, huge lines, big files."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
from pathlib import Path

import pytest

from eaglegraph.errors import BadInput
from eaglegraph.triage.diagnose import triage_bytes, triage_path
from eaglegraph.triage.reader import iter_blocks
from eaglegraph.triage.scan import HEAD_BYTES, TAIL_BYTES

from .helpers_triage import LOGS

CRASH = (LOGS / "vllm_mrv2_stale_ima.log").read_bytes()
PRIMARY_LINE = 23


def _check_crash(result) -> None:
    assert result.category == "stale-buffer-read"
    assert result.primary_error is not None and result.primary_error.line == PRIMARY_LINE
    assert result.version == "0.19.1"


@pytest.mark.parametrize(
    ("suffix", "pack", "note"),
    [
        (".gz", gzip.compress, "gzip"),
        (".bz2", bz2.compress, "bzip2"),
        (".xz", lzma.compress, "xz"),
        (".log", lambda b: b, None),
    ],
)
def test_compressed_files_are_detected_from_content(
    tmp_path: Path, suffix: str, pack, note
) -> None:
    path = tmp_path / f"crash{suffix}.bin"  # the name does not say what it is
    path.write_bytes(pack(CRASH))
    result = triage_path(path)
    _check_crash(result)
    if note:
        assert any(note in n for n in result.notes)


def test_truncated_gzip_reads_what_came_before(tmp_path: Path) -> None:
    data = gzip.compress(CRASH)
    path = tmp_path / "cut.log.gz"
    path.write_bytes(data[: len(data) * 2 // 3])
    result = triage_path(path)
    assert any("ends early" in n for n in result.notes)
    assert result.lines > 0


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_logs(encoding: str) -> None:
    result = triage_bytes(CRASH.decode("utf-8").encode(encoding))
    _check_crash(result)


def test_crlf_nul_bytes_and_latin1() -> None:
    text = CRASH.replace(b"\n", b"\r\n")
    text = text.replace(b"EngineCore encountered", b"Engine\x00Core encountered")
    text = b"Warnung: Gr\xf6\xdfe \xfcberschritten\r\n" + text
    result = triage_bytes(text)
    assert result.category == "stale-buffer-read"
    assert result.primary_error.line == PRIMARY_LINE + 1


def test_binary_junk_between_lines() -> None:
    junk = bytes(range(256)).replace(b"\n", b"") * 40
    result = triage_bytes(junk + b"\n" + CRASH + junk)
    assert result.category == "stale-buffer-read"
    assert result.primary_error.line == PRIMARY_LINE + 1


def test_empty_input() -> None:
    result = triage_bytes(b"")
    assert (result.category, result.lines, result.bytes_read) == ("other", 0, 0)
    assert result.confidence <= 0.1
    assert any("empty" in n for n in result.notes)


def test_ten_megabyte_line_is_shortened_not_fatal() -> None:
    bar = "\r".join(
        f"Capturing CUDA graphs (decode, FULL): {i % 100:3d}%|#####| {i}/60000 [00:01<00:01]"
        for i in range(0, 120_000, 1)
    ).encode()
    assert len(bar) > 9_000_000
    data = (
        b"header\n"
        + bar
        + b"\nRuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    result = triage_bytes(data)
    assert result.lines == 3
    assert result.primary_error is not None and result.primary_error.line == 3
    cap = result.phase.captures[-1]
    # The tail of the bar survives truncation: its last state is what the log ended with.
    assert (cap.done, cap.total) == (119_999, 60_000)
    assert any("shortened" in n for n in result.notes)


def test_blocks_end_on_line_boundaries_and_keep_every_byte() -> None:
    import io

    data = b"".join(f"line {i} {'x' * (i % 300)}\n".encode() for i in range(5000))
    notes: list[str] = []
    blocks = list(iter_blocks(io.BytesIO(data), notes, block_size=4096, max_line=1024))
    assert all(b.endswith(b"\n") for b in blocks)
    assert b"".join(blocks) == data


def _bulk_line(i: int) -> bytes:
    line = (
        f"(APIServer pid=1) INFO 05-13 10:46:{i % 60:02d} [loggers.py:271] Engine 000: Avg prompt "
        f"throughput: {i % 997}.0 tokens/s, Running: {i % 50} reqs, GPU KV cache usage: 1.0%"
    ).encode()
    return line.ljust(127, b" ") + b"\n"  # 128 bytes: blocks of 256 KiB hold exactly 2048 lines


def test_failure_in_the_middle_of_a_big_log_straddling_a_block_boundary(tmp_path: Path) -> None:
    """The trigger is in one block, its traceback frames in the previous one."""
    per_block = 2048
    crash_at = per_block * 24 - 4  # in the middle, well past the head window
    lines = [_bulk_line(i) for i in range(crash_at)]
    tb = [
        b"(EngineCore_DP0 pid=88) ERROR 04-10 09:12:33 [core.py:710] Traceback (most recent call last):\n",
        b'(EngineCore_DP0 pid=88) ERROR 04-10 09:12:33 [core.py:710]   File "/v/vllm/v1/worker/gpu/'
        b'cudagraph_utils.py", line 402, in run\n',
        b"(EngineCore_DP0 pid=88) ERROR 04-10 09:12:33 [core.py:710]     self.graphs[n].replay()\n",
        b"[TP0] EAGLE draft cuda graph replay padding: raw_bs=3 graph_bs=4\n",
    ]
    error = b"(EngineCore_DP0 pid=88) ERROR 04-10 09:12:33 [core.py:710] torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
    tail = [_bulk_line(i) for i in range(per_block * 10)]
    data = b"".join(lines + tb + [error] + tail)
    assert len(data) > HEAD_BYTES + TAIL_BYTES + 2 * 1024 * 1024
    path = tmp_path / "big.log"
    path.write_bytes(data)
    result = triage_path(path)
    expected_line = crash_at + len(tb) + 1
    assert result.lines == data.count(b"\n")
    assert result.primary_error is not None and result.primary_error.line == expected_line
    assert result.category == "stale-buffer-read"
    assert result.phase.at_failure == "serving"
    assert result.config.padding is not None and result.config.padding.line == crash_at + 4
    frames = [e for e in result.evidence if e.signal == "frame"]
    assert frames and frames[0].line == crash_at + 2


def _startup_line(i: int) -> bytes:
    line = (
        f"(EngineCore_DP0 pid=88) INFO 04-10 09:00:{i % 60:02d} [loader.py:120] Loading "
        f"safetensors checkpoint shard {i % 163} of 163"
    ).encode()
    return line.ljust(127, b" ") + b"\n"


def test_a_long_startup_is_read_in_full_up_to_the_head_limit(tmp_path: Path) -> None:
    """The head ends one block after serving begins, never before: a startup of 900 KiB (slow
    shard loading, a DEBUG config dump) keeps its last lines, here the server's version line."""
    startup = [_startup_line(i) for i in range(900 * 1024 // 128)]
    version = b"(APIServer pid=1) INFO 04-10 09:05:00 [api_server.py:1805] vLLM API server version 0.19.1\n"
    serving = [_bulk_line(i) for i in range(2048 * 24)]
    data = b"".join([*startup, version, *serving])
    assert len(startup) * 128 < HEAD_BYTES < len(data) - TAIL_BYTES
    path = tmp_path / "slow-start.log"
    path.write_bytes(data)
    result = triage_path(path)
    assert result.version == "0.19.1"
    assert result.lines == data.count(b"\n")


def test_unreadable_paths_are_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="does not exist"):
        triage_path(tmp_path / "missing.log")
    with pytest.raises(BadInput, match="directory"):
        triage_path(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files regardless of their mode")
def test_permission_denied_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "secret.log"
    path.write_bytes(CRASH)
    path.chmod(0)
    with pytest.raises(BadInput, match="permission denied"):
        triage_path(path)


@pytest.mark.parametrize("piece", [1, 7, 16 * 1024])
def test_undecodable_lines_are_counted_as_splitlines_cuts_them(
    piece: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The count decodes in pieces and resumes after each bad line; it must equal decoding
    every line on its own."""
    import random

    from eaglegraph.triage import reader
    from eaglegraph.triage.reader import _Undecodable

    monkeypatch.setattr(reader, "_DECODE_PIECE", piece)

    def reference(block: bytes) -> int:
        bad = 0
        for line in block.splitlines():
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                bad += 1
        return bad

    pieces = [b"a", b"\n", b"\r", b"\r\n", b"\xe9", b"\xc3\xa9", b"\xe2\x82\xac", b"\xe2\x82"]
    pieces += [b"\xff", b"\xed\xa0\x80", b"\xf0\x9f\x98\x80", b"\xf0\x9f", b" "]
    rng = random.Random(0)
    for _ in range(3000):
        block = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))) + b"\n"
        counter = _Undecodable()
        counter.count(block)
        assert counter.lines == reference(block), block
