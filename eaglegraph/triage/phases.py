"""Capture phases: which CUDA-graph capture pass was running, and whether it finished.

Every framework announces captures differently: vLLM with tqdm bars whose label names the
runner and mode ("Capturing CUDA graphs (decode, FULL)", MRV2's "Capturing <drafter> CUDA
graphs (FULL)"), SGLang with begin/end lines per runner plus a "Capturing batches (bs=...)"
bar, TensorRT-LLM with warmup lines per batch size. A bar stopped at i<n, or a `begin`
without its `end`, followed by an error, localises a crash to a capture and a batch size.
Bars pasted without their carriage returns are read by their last state.
"""

from __future__ import annotations

import re

from eaglegraph.results.triage import CapturePhase
from eaglegraph.triage.patterns import PatternGroup
from eaglegraph.triage.prefixes import Prefix
from eaglegraph.triage.state import ScanState
from eaglegraph.triage.values import set_missing, to_float, to_int, to_ints, vote

PATTERNS = PatternGroup()


def _phase(state: ScanState, name: str, mode: str | None, line: int) -> CapturePhase:
    """The open phase with this name and mode, or a new one."""
    for ph in reversed(state.captures):
        if ph.name == name and ph.mode == mode and not ph.finished:
            return ph
    ph = CapturePhase(name=name, mode=mode, begin_line=line, last_line=line)
    state.captures.append(ph)
    if len(state.captures) > 64:
        del state.captures[1]
    return ph


def _progress(ph: CapturePhase, line: int, done: str | None, total: str | None) -> None:
    ph.last_line = line
    if done is not None and total is not None:
        ph.done, ph.total = int(done), int(total)
        if ph.total and ph.done >= ph.total:
            ph.finished = True
            ph.end_line = line


@PATTERNS.on(
    "capture.vllm-bar",
    r"Capturing (?:(?P<who>[\w<>-]+) )?CUDA graphs? \((?:(?P<batch>[\w -]+?), )?(?P<mode>[A-Z_]+)\)"
    r"(?::\s*(?:(?P<pct>\d+)%\|[^|]*\|\s*)?(?P<i>\d+)/(?P<n>\d+))?",
    anchors=("Capturing",),
    last=True,
)
def _vllm_bar(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    who = (m.group("who") or "").strip("<>").lower()
    runner = {"drafter": "draft", "prefill": "draft prefill"}.get(who, who or "target")
    batch = m.group("batch")
    name = f"{runner} ({batch})" if batch else runner
    mode = m.group("mode")
    ph = _phase(state, name, mode, line)
    _progress(ph, line, m.group("i"), m.group("n"))
    vote(state, "vllm")


@PATTERNS.on(
    "capture.vllm-v0",
    r"Capturing (?:the model for CUDA graphs|cudagraphs for decoding)|"
    r"Capturing CUDA graph shapes:\s*(?:\d+%\|[^|]*\|\s*)?(?P<i>\d+)/(?P<n>\d+)",
    anchors=("Capturing",),
    last=True,
)
def _vllm_v0(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    ph = _phase(state, "target", None, line)
    _progress(ph, line, m.group("i"), m.group("n"))


@PATTERNS.on(
    "capture.vllm-finished",
    r"Graph capturing finished in (?P<secs>[\d.]+) secs?(?:, took (?P<gib>-?[\d.]+) ?GiB)?",
    anchors=("Graph capturing",),
)
def _vllm_done(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    state.captures_finished_line = line
    state.config.memory.graph_taken_gib = to_float(m.group("gib"))
    for ph in state.captures:
        if not ph.finished:
            ph.finished = True
            ph.end_line = line
    vote(state, "vllm")


_SG_NAMES = {
    "": "target verify",
    "target verify": "target verify",
    "target prefill": "target prefill",
    "draft": "draft decode",
    "draft extend": "draft extend",
    "piecewise": "target prefill (piecewise)",
    "breakable": "breakable",
    "prefill": "target prefill",
}
_SG_REST = re.compile(
    r"avail mem=(?P<avail>[\d.]+) ?GB|mem usage=(?P<usage>[\d.]+) ?GB|backend=(?P<backend>\w+)|"
    r"bs=\[(?P<bs>[\d, ]*)\]"
)


@PATTERNS.on(
    "capture.sglang",
    r"Capture (?P<what>(?:target (?:verify|prefill) |draft extend |draft |piecewise |breakable |"
    r"prefill )?)(?:cuda|CUDA) graph (?P<ev>begin|end)\b\.?(?P<rest>.*)",
    anchors=("Capture",),
)
def _sglang_capture(
    state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix
) -> None:
    vote(state, "sglang")
    name = _SG_NAMES.get(m.group("what").strip().lower(), m.group("what").strip().lower())
    rest = {
        k: v for rm in _SG_REST.finditer(m.group("rest")) for k, v in rm.groupdict().items() if v
    }
    if m.group("ev") == "begin":
        ph = CapturePhase(name=name, mode="FULL", begin_line=line, last_line=line)
        backend = rest.get("backend")
        if backend:
            ph.mode = {"full": "FULL", "tc_piecewise": "PIECEWISE", "breakable": "BREAKABLE"}.get(
                backend, backend.upper()
            )
        ph.avail_mem_gb = to_float(rest.get("avail"))
        state.captures.append(ph)
        if rest.get("bs"):
            set_missing(state.config, "capture_sizes", sorted(set(to_ints(rest["bs"]))))
        return
    for ph in reversed(state.captures):
        if ph.name == name and not ph.finished:
            ph.finished, ph.end_line, ph.last_line = True, line, line
            ph.mem_usage_gb = to_float(rest.get("usage"))
            if ph.total is not None:
                ph.done = ph.total
            break
    else:
        state.captures.append(
            CapturePhase(
                name=name,
                mode="FULL",
                begin_line=line,
                last_line=line,
                end_line=line,
                finished=True,
                mem_usage_gb=to_float(rest.get("usage")),
            )
        )


@PATTERNS.on(
    "capture.sglang-bar",
    r"Capturing batches \((?:bs|num_tokens)=(?P<bs>\d+) avail_mem=(?P<mem>[\d.]+) ?GB\)"
    r"(?::\s*(?:\d+%\|[^|]*\|\s*)?(?P<i>\d+)/(?P<n>\d+))?",
    anchors=("Capturing",),
    last=True,
)
def _sglang_bar(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    open_phases = [ph for ph in state.captures if not ph.finished]
    ph = open_phases[-1] if open_phases else _phase(state, "target", "FULL", line)
    ph.batch_size = to_int(m.group("bs"))
    ph.avail_mem_gb = to_float(m.group("mem"))
    ph.last_line = line
    if m.group("i") is not None:
        ph.done, ph.total = int(m.group("i")), int(m.group("n"))


@PATTERNS.on(
    "cfg.sglang-capture-bs",
    r"Capture cuda graph bs \[(?P<bs>[\d, ]*)\]",
    anchors=("Capture",),
)
def _sglang_sizes(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    set_missing(state.config, "capture_sizes", sorted(set(to_ints(m.group("bs")))))


@PATTERNS.on(
    "capture.trtllm",
    r"Creating CUDA graph instances for (?P<n>\d+) batch sizes|"
    r"Run generation only CUDA graph warmup for batch size=(?P<bs>\d+)",
    anchors=("CUDA",),
)
def _trt_capture(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    vote(state, "trtllm")
    set_missing(state.config, "cudagraph_mode_requested", "FULL")
    if m.group("n"):
        ph = CapturePhase("trtllm generation", "FULL", line, line, total=int(m.group("n")), done=0)
        state.captures.append(ph)
        return
    open_phases = [
        ph for ph in state.captures if not ph.finished and ph.name == "trtllm generation"
    ]
    ph = open_phases[-1] if open_phases else _phase(state, "trtllm generation", "FULL", line)
    ph.batch_size = to_int(m.group("bs"))
    ph.done = (ph.done or 0) + 1
    ph.last_line = line
    if ph.total and ph.done >= ph.total:
        ph.finished, ph.end_line = True, line
