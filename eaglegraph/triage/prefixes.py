"""Line prefixes added by serving frameworks, process wrappers and log collectors.

A crash report is rarely the raw message: vLLM tags each line with its process and log source,
SGLang with a timestamp and TP/DP/EP ranks, Ray with the actor name and IP, Kubernetes with a CRI
header, and they nest (CRI around SGLang, Ray around SGLang, dynamo around vLLM). Rules must see
the message itself, so prefixes are peeled off first, layer by layer, and what they carried
(framework, process, ranks, level) is kept: ranks give a lower bound on TP/DP, and process names
identify the framework even when the config line was not pasted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# vLLM V1 process tag, e.g. "(EngineCore_DP0 pid=774560) ", "(Worker_TP1 pid=3777738) ",
# "(VllmWorker rank=1 pid=12) "; Ray actors add ", ip=...": "(SGLangEngine pid=952, ip=10.1.2.3) ".
_PROC = re.compile(
    r"\((?P<proc>[A-Za-z_][\w.-]*)(?: rank=(?P<rank>\d+))?(?: pid=(?P<pid>\d+))?"
    r"(?:, ip=(?P<ip>[\d.]+|[0-9a-fA-F:]+))?\) ?"
)
# vLLM level/time/source after the process tag or alone (V0): "INFO 08-19 07:51:03 model_runner.py:732] "
# and "ERROR 07-15 00:27:03 [core.py:1231] ".
_VLLM_LEVEL = re.compile(
    r"(?P<lvl>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) (?P<ts>\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)? "
    r"\[?(?P<src>[\w./<>-]+:\d+)\]\s?"
)
# SGLang: "[2025-07-25 07:53:08 TP2] ", "[2026-07-22 15:49:08 DP0 TP0] ", "[2025-08-11 04:09:16 TP0 EP0] ",
# newer "[2026-03-21 03:31:56] INFO engine.py:177: ", and rank-only "[TP0] ".
_SGLANG = re.compile(
    r"\[(?:(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,]\d+)?)?"
    r"(?:(?(ts) )(?P<ranks>(?:(?:ATTN_DP|MOE_DP|DP|TP|EP|PP|CP|PD)\d+ ?)+))?\]\s?"
    r"(?:(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<src>[\w./-]+:\d+): )?"
)
_TRTLLM = re.compile(
    r"\[\d\d/\d\d/\d{4}-[\d:]+\] \[TRT-LLM\](?: \[RANK (?P<rank>\d+)\])? \[(?P<lvl>[IWEVD])\] "
)
# TensorRT-LLM's C++ runtime logger: "[TensorRT-LLM][INFO] ", "[TensorRT-LLM][RANK 0][ERROR] "
# (cpp/tensorrt_llm/common/logger.cpp): routine lines a pasted report quotes, never the
# reporter's words.
_TRTLLM_CPP = re.compile(
    r"\[TensorRT-LLM\](?:\[RANK (?P<rank>\d+)\])?"
    r"\[(?P<lvl>INFO|WARNING|ERROR|DEBUG|VERBOSE|TRACE)\] ?"
)
_CRI = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:?\d\d) (?:stdout|stderr) [FP] ")
_DYNAMO = re.compile(
    r"\d{4}-\d\d-\d\dT[\d:.]+Z?\s+(?P<lvl>TRACE|DEBUG|INFO|WARN|ERROR)\s+[\w:]+: (?:VLLM: )?"
)
_ISO_TS = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\s+")
_COMPOSE = re.compile(r"[\w.-]+-\d+\s+\| ")
_JOURNAL = re.compile(r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [\w.@-]+(?:\[\d+\])?: ")

_LEVEL_WORDS = ("DEBUG ", "INFO ", "WARNING ", "WARN ", "ERROR ", "CRITICAL ")
_VLLM_PROCS = ("EngineCore", "APIServer", "Worker", "VllmWorker", "RayWorkerWrapper", "Api")
_SGLANG_PROCS = ("SGLang", "Scheduler", "TokenizerManager", "DetokenizerManager")
_LEVELS = {
    "I": "INFO",
    "W": "WARNING",
    "E": "ERROR",
    "V": "DEBUG",
    "D": "DEBUG",
    "WARN": "WARNING",
    "VERBOSE": "DEBUG",
    "TRACE": "DEBUG",
}
_RANK = re.compile(r"(ATTN_DP|MOE_DP|DP|TP|EP|PP|CP|PD)(\d+)")
_PROC_RANK = re.compile(r"_(TP|DP|EP|PP)(\d+)")


@dataclass
class Prefix:
    """What the peeled prefixes said about the line's origin."""

    framework: str | None = None
    process: str | None = None
    pid: int | None = None
    level: str | None = None
    source: str | None = None
    ranks: dict[str, int] | None = None


def _add_rank(prefix: Prefix, kind: str, index: int) -> None:
    if prefix.ranks is None:
        prefix.ranks = {}
    prefix.ranks[kind] = max(index, prefix.ranks.get(kind, 0))


def _proc_framework(proc: str) -> str | None:
    if proc.startswith(_SGLANG_PROCS):
        return "sglang"
    if proc.startswith(_VLLM_PROCS):
        return "vllm"
    return None


def strip_prefixes(line: str) -> tuple[str, Prefix]:
    """Peel every recognised prefix off `line`; return the message and what the prefixes said.

    Only one optional space after a prefix is removed, so traceback indentation survives.
    Unknown text is left alone: a wrong strip would hide the very words the rules look for.
    """
    prefix = Prefix()
    text = line
    for _ in range(5):
        if not text:
            break
        head = text[0]
        m: re.Match[str] | None = None
        if head == "(":
            m = _PROC.match(text)
            if m:
                proc = m.group("proc")
                prefix.process = prefix.process or proc
                if m.group("pid"):
                    prefix.pid = int(m.group("pid"))
                fw = _proc_framework(proc)
                if fw and prefix.framework is None:
                    prefix.framework = fw
                for kind, idx in _PROC_RANK.findall(proc):
                    _add_rank(prefix, kind, int(idx))
                if m.group("rank"):
                    _add_rank(prefix, "TP", int(m.group("rank")))
                rest = text[m.end() :]
                lm = _VLLM_LEVEL.match(rest)
                if lm:
                    prefix.level = lm.group("lvl")
                    prefix.source = lm.group("src")
                    prefix.framework = prefix.framework or "vllm"
                    rest = rest[lm.end() :]
                text = rest
                continue
        elif head == "[":
            m = _TRTLLM.match(text) or _TRTLLM_CPP.match(text)
            if m:
                prefix.framework = "trtllm"
                prefix.level = _LEVELS.get(m.group("lvl"), m.group("lvl"))
                if m.group("rank"):
                    _add_rank(prefix, "TP", int(m.group("rank")))
                text = text[m.end() :]
                continue
            m = _SGLANG.match(text)
            if m and (m.group("ts") or m.group("ranks")):
                if prefix.framework is None or prefix.framework == "ray":
                    prefix.framework = "sglang"
                if m.group("ranks"):
                    for kind, idx in _RANK.findall(m.group("ranks")):
                        _add_rank(prefix, kind, int(idx))
                if m.group("lvl"):
                    prefix.level = m.group("lvl")
                    prefix.source = m.group("src")
                text = text[m.end() :]
                continue
        elif head.isdigit():
            m = _CRI.match(text) or _DYNAMO.match(text)
            if m:
                if m.re is _DYNAMO:
                    prefix.framework = prefix.framework or "vllm"
                text = text[m.end() :]
                continue
            m = _ISO_TS.match(text)
            if m and m.end() < len(text):
                text = text[m.end() :]
                continue
        elif head in "DIWEC" and text.startswith(_LEVEL_WORDS):
            m = _VLLM_LEVEL.match(text)
            if m:
                prefix.level = _LEVELS.get(m.group("lvl"), m.group("lvl"))
                prefix.source = m.group("src")
                prefix.framework = prefix.framework or "vllm"
                text = text[m.end() :]
                continue
        # the two cheap tests are what every journald / compose prefix has (a month name
        # and a space; a "| " after the service), so most lines skip both regexes
        if head.isalpha() and (text[3:4] == " " or "| " in text):
            m = _JOURNAL.match(text) or _COMPOSE.match(text)
            if m:
                text = text[m.end() :]
                continue
        break
    if prefix.level in _LEVELS:
        prefix.level = _LEVELS[prefix.level]
    return text, prefix
