"""The anchor contract that makes fast scanning safe, checked on every corpus line."""

from __future__ import annotations

import re

import pytest

from eaglegraph.known.triage_signals import ROOT
from eaglegraph.triage.patterns import LinePattern, _alternation
from eaglegraph.triage.prefixes import strip_prefixes
from eaglegraph.triage.registry import match_line, patterns, prefilter
from eaglegraph.triage.scan import TRIGGERS

from .helpers_triage import LOGS, dev_reports

EXTRA_LINES = [
    "*** SIGSEGV (@0x0) received by PID 4312 (TID 0x7f3e) from PID 0; stack trace: ***",
    "Segmentation fault (core dumped)",
    "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, unhandled cuda error",
    "IndexError: index 4096 is out of bounds for dimension 0 with size 4096",
    "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: [5,0,0] "
    'Assertion `-sizes[i] <= index && index < sizes[i] && "index out of bounds"` failed.',
    "RuntimeError: The size of tensor a (4096) must match the size of tensor b (12288) at non-singleton dimension 1",
    "ValueError: target_hidden_size 5120 of the draft does not match hidden_size 4096 of the target",
    "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0",
    "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`.",
    "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 20.00 MiB.",
    "TimeoutError: RPC call to execute_model timed out.",
    "Overriding cudagraph_mode from FULL_AND_PIECEWISE to PIECEWISE for reliability",
    "Skipping CUDA graph capture. To turn on CUDA graph capture, ensure `cudagraph_mode` was not manually set to `NONE`",
    'Thread 0x7F3A12345678 (active): "MainThread"',
    "    all_reduce (vllm/distributed/parallel_state.py:377)",
    "No available shared memory broadcast block found in 60 second. This typically happens when some processes are hanging.",
]


def _corpus() -> list[str]:
    lines: list[str] = []
    for r in dev_reports():
        lines += r["log_excerpt"].splitlines()
    for path in sorted(LOGS.glob("*.log")):
        lines += path.read_text(encoding="utf-8").splitlines()
    lines += EXTRA_LINES
    out: list[str] = []
    for line in lines:
        for seg in line.split("\r"):
            if seg.strip():
                out.append(strip_prefixes(seg)[0])
    return out


CORPUS = _corpus()


@pytest.mark.parametrize("pattern", patterns(), ids=lambda p: p.id)
def test_every_match_is_gated_by_an_anchor(pattern: LinePattern) -> None:
    for msg in CORPUS:
        if pattern.regex.search(msg):
            assert pattern.gated(msg), (pattern.id, msg)


def test_match_line_agrees_with_ungated_matching() -> None:
    for msg in CORPUS:
        fast = {p.id for p, _ in match_line(msg)}
        slow = {
            p.id for p in patterns() if p.regex.search(msg) and not any(u in msg for u in p.unless)
        }
        assert fast == slow, msg


# Failures that can happen in the middle of a long log must carry a trigger literal; the
# exemptions are read in the head (startup) or the tail (how the log ended).
_TRIGGER_EXEMPT = {"memory.negative-estimate", "hang.stall"}


def test_root_errors_carry_a_trigger_literal() -> None:
    for msg in CORPUS:
        for p, _ in match_line(msg):
            if p.id in ROOT and p.id not in _TRIGGER_EXEMPT:
                raw = msg.encode()
                assert any(t in raw for t in TRIGGERS), (p.id, msg)


def _top_level_branches(source: str) -> list[str]:
    branches, depth, current, i = [], 0, "", 0
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            current += source[i : i + 2]
            i += 2
            continue
        if ch == "[":
            end = source.index("]", i + 1)
            current += source[i : end + 1]
            i = end + 1
            continue
        depth += ch == "("
        depth -= ch == ")"
        if ch == "|" and depth == 0:
            branches.append(current)
            current = ""
        else:
            current += ch
        i += 1
    return [*branches, current]


def test_prefilter_starts_every_branch_with_a_literal() -> None:
    for rx in (prefilter(),):
        for branch in _top_level_branches(rx.pattern.decode()):
            assert branch and (branch[0] not in "()[]{}?*+|^$." or branch[0] == "\\"), branch


def test_alternation_groups_by_first_character() -> None:
    rx = _alternation(["Error", "ERROR", "CUDA"], [r"GPU \d"]).decode()
    assert rx == r"C(?:UDA)|E(?:RROR|rror)|GPU \d".replace("C(?:UDA)", "CUDA")
    compiled = re.compile(rx.encode())
    assert compiled.findall(b"x CUDA y ERROR z GPU 3 Error") == [
        b"CUDA",
        b"ERROR",
        b"GPU 3",
        b"Error",
    ]


def test_no_pattern_backtracks_quadratically_on_long_lines() -> None:
    """Lines are matched up to 64 KiB; adversarial repetitions must stay linear-ish."""
    import time

    anchors = sorted({a for p in patterns() for a in p.anchors})
    worst = (0.0, "")
    for anchor in anchors:
        for sep in (" ", "0", "|", "'"):
            for line in (
                (anchor + sep) * (16_000 // (len(anchor) + len(sep))),
                anchor + sep * 16_000,
            ):
                start = time.perf_counter()
                match_line(line)
                worst = max(worst, (time.perf_counter() - start, anchor + sep))
    assert worst[0] < 1.0, worst


def test_match_order_is_declared_not_import_order() -> None:
    """Importing a pattern module first (as a test or a tool may) does not reorder matching."""
    import subprocess
    import sys

    code = (
        "import eaglegraph.triage.signals, eaglegraph.triage.phases\n"
        "from eaglegraph.triage.registry import GROUPS, patterns\n"
        "assert [g for g, _ in GROUPS] == ['config', 'health', 'capture', 'signals']\n"
        "assert patterns() == tuple(p for _, g in GROUPS for p in g)\n"
        "print(patterns()[0].id, patterns()[-1].id)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["cfg.vllm-engine", "structure.traceback"]


def test_no_import_cycle_inside_triage() -> None:
    import ast
    from pathlib import Path

    import eaglegraph.triage as pkg

    graph: dict[str, set[str]] = {}
    for path in Path(pkg.__file__).parent.glob("*.py"):
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "eaglegraph.triage."
            ):
                deps.add((node.module or "").rsplit(".", 1)[-1])
        graph[path.stem] = deps

    def reaches(start: str, target: str, seen: set[str]) -> bool:
        for d in graph.get(start, ()):
            if d == target or (d not in seen and reaches(d, target, seen | {d})):
                return True
        return False

    assert [m for m in graph if reaches(m, m, set())] == []


def _raw_lines() -> list[str]:
    lines: list[str] = []
    for r in dev_reports():
        lines += r["log_excerpt"].split("\n")
    for path in sorted(LOGS.glob("*.log")):
        lines += path.read_text(encoding="utf-8").split("\n")
    return lines + EXTRA_LINES


def test_required_literals_hold_in_every_match() -> None:
    """`requires` may skip a regex only where it cannot match: every corpus match (and the
    same line in other cases, for a regex that ignores case) holds one of the literals."""
    with_requires = [p for p in patterns() if p.requires]
    assert with_requires, "no pattern declares required literals any more"
    for p in with_requires:
        ignores_case = bool(p.regex.flags & re.IGNORECASE)
        # a scoped (?i:...) would make a case-sensitive check wrong
        assert ignores_case or "(?i" not in p.regex.pattern, p.id
        assert not ignores_case or all(r == r.lower() for r in p.requires), p.id
        for msg in CORPUS:
            for variant in (msg, msg.upper(), msg.lower()) if ignores_case else (msg,):
                if p.regex.search(variant):
                    assert p.may_match(variant), (p.id, variant)


def test_required_literals_skip_metrics_lines() -> None:
    by_id = {p.id: p for p in patterns()}
    decode = (
        "Decode batch. #running-req: 12, #token: 3311, token usage: 0.04, accept len: 2.31, "
        "cuda graph: True, gen throughput (token/s): 811.3, #queue-req: 0, "
    )
    metrics = (
        "SpecDecoding metrics: Mean acceptance length: 3.16, Accepted: 92 tokens, Drafted: 120 "
        "tokens, Per-position acceptance rate: 0.844, 0.600, Avg Draft acceptance rate: 43.1%"
    )
    assert not by_id["mode.skip"].may_match(decode)
    assert not by_id["mode.unsupported"].may_match(decode)
    assert not by_id["health.gibberish"].may_match(metrics)
    assert by_id["health.gibberish"].may_match("Acceptance rate DROPS to zero")
    # non-ASCII text is always searched: lower() is not the regex's case folding there
    assert by_id["health.gibberish"].may_match("acceptance ſtays")


def test_anchors_found_over_the_line_equal_findall_over_the_message() -> None:
    """The scan hands `match_line` the prefilter's matches over the whole raw line; for ASCII
    lines they must be exactly what `findall` over the prefix-stripped message finds."""
    from eaglegraph.triage.registry import ANCHORS_STAY_IN_LINE, MATCHER
    from eaglegraph.triage.scan import _anchors_in

    assert ANCHORS_STAY_IN_LINE
    straddled = 0
    lines = [*_raw_lines(), "(APIServer pid=1) Timed out of range", "[2025-07-25 TP0] ERRORx"]
    for line in lines:
        if not line.isascii() or "\x00" in line:
            continue
        raw = line.encode()
        hits = list(prefilter().finditer(raw))
        seg_start = 0
        for seg in line.split("\r"):
            seg_end = seg_start + len(seg)
            msg, _ = strip_prefixes(seg)
            found = _anchors_in(hits, 0, seg_end - len(msg), seg_end)
            if found is None:
                straddled += 1
            else:
                assert found == MATCHER._index.findall(msg), (line, seg)
            seg_start = seg_end + 1
    assert straddled < len(lines) // 100


def test_anchor_regexes_that_could_leave_the_line_turn_the_shortcut_off() -> None:
    from eaglegraph.triage.patterns import _stays_in_line

    assert _stays_in_line(r"GPU \d") and _stays_in_line(r"Thread (?:0x)?[0-9A-Fa-f]+ \(")
    for source in (r"a.b", r"a\sb", r"x(?=y)", r"(?<=x)y", r"[^a]b", r"a$", r"(?i)ab", r"\Wab"):
        assert not _stays_in_line(source), source
