"""Failure signals and traceback frames: the patterns that record what a log line shows.

The signal table itself is data (`eaglegraph.known.triage_signals.SIGNALS`): each row becomes
a pattern whose handler records a hit of the row's id and kind, with the regex's named groups
and the line's log level. What the hits mean is decided later, by `triage.facts`.

Frames (Python tracebacks, faulthandler and py-spy dumps) are collected into blocks and tagged
by `frames.classify`, which is what tells capture from replay.
"""

from __future__ import annotations

import re

from eaglegraph import frames as framecls
from eaglegraph.known.triage_signals import SIGNALS, SignalKind
from eaglegraph.triage.patterns import Handler, PatternGroup
from eaglegraph.triage.prefixes import Prefix
from eaglegraph.triage.state import Frame, ScanState


def _recorder(signal: str, kind: SignalKind) -> Handler:
    def handle(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
        groups: dict[str, str | None] = {k: v for k, v in m.groupdict().items() if v is not None}
        if prefix.level:
            groups["level"] = prefix.level
        state.add(line, text.strip(), signal, kind, groups)

    return handle


PATTERNS = PatternGroup()
for _spec in SIGNALS:
    PATTERNS.register(
        _spec.id,
        _spec.regex,
        _recorder(_spec.id, _spec.kind),
        anchors=_spec.anchors,
        extra=_spec.extra,
        unless=_spec.unless,
        why=_spec.why,
        requires=_spec.requires,
    )


# --- frames ---------------------------------------------------------------------------------
def _vote_path(state: ScanState, path: str) -> None:
    if "/vllm/" in path or path.startswith("vllm/"):
        state.framework_votes["vllm"] += 1
        if "/v1/worker/gpu/" in path or "v1/worker/gpu/" in path:
            state.config.runner = "mrv2"
        elif "/v1/" in path and state.config.runner is None:
            state.config.runner = "v1"
        elif "vllm/worker/" in path and state.config.runner is None:
            state.config.runner = "v0"
    elif "/sglang/" in path or path.startswith("sglang/") or "sgl_kernel" in path:
        state.framework_votes["sglang"] += 1
    elif "tensorrt_llm" in path:
        state.framework_votes["trtllm"] += 1


def _python_frame(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    file, func = m.group("file"), m.group("func")
    _vote_path(state, file)
    state.add_frame(
        Frame(
            line, file, func, None, framecls.classify(func, file), "traceback", text.strip()[:400]
        )
    )


def _pyspy_frame(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    file, func = m.group("file"), m.group("func")
    _vote_path(state, file)
    state.add_frame(
        Frame(line, file, func, None, framecls.classify(func, file), "py-spy", text.strip()[:400])
    )
    state.add(line, text.strip(), "pyspy.frame", SignalKind.CONTEXT, {"func": func})


def _pyspy_header(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    state.close_block()
    state.add(line, text.strip(), "pyspy.thread", SignalKind.CONTEXT, {})


def _traceback_marker(
    state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix
) -> None:
    state.close_block()
    state.add(line, text.strip(), "structure.traceback", SignalKind.CONTEXT, {})


PATTERNS.register(
    "frame.python",
    r'^\s*File "(?P<file>[^"]+)", line (?P<lineno>\d+),? in (?P<func>\S+)',
    _python_frame,
    anchors=('File "',),
)
PATTERNS.register(
    "frame.pyspy",
    r"^\s*(?P<func>[\w<>.$\[\]-]+(?: \[\w+\])?) \((?P<file>[^()\s]+?\.(?:py|pyx|pyi)):"
    r"(?P<lineno>\d+)\)\s*$",
    _pyspy_frame,
    extra_res=(r"y:\d+\)",),
)
PATTERNS.register(
    "frame.native",
    r"^\s*(?P<func>[\w:<>~.]+) \((?P<file>[\w.+-]+\.so(?:\.[\d.]+)?)\)\s*$",
    _pyspy_frame,
    extra_res=(r"\.so(?:\.\d+)*\)",),
)
PATTERNS.register(
    "pyspy.thread",
    r"^Thread (?:0x)?[0-9A-Fa-f]+ \((?:active|idle)[^)]*\)",
    _pyspy_header,
    extra_res=(r"Thread (?:0x)?[0-9A-Fa-f]+ \(",),
)
PATTERNS.register(
    "structure.traceback",
    r"Traceback \(most recent call last\)|During handling of the above exception|"
    r"The above exception was the direct cause|\(most recent call first\)",
    _traceback_marker,
    anchors=("back (most", "xception", "Current thread"),
    extra=("(most recent call first)",),
)
