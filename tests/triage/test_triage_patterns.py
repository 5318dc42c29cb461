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
