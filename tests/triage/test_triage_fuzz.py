"""Whatever bytes arrive, triage answers; only an unopenable path is an error."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eaglegraph.errors import BadInput
from eaglegraph.results.triage import CATEGORIES
from eaglegraph.triage.diagnose import triage_bytes, triage_path

from .helpers_triage import dev_reports

FRAGMENTS = [
    "(EngineCore_DP0 pid=1) ERROR 07-15 00:27:03 [core.py:1231] ",
    "[2025-07-25 07:53:08 TP2] ",
    "(SGLangEngine pid=952, ip=10.1.2.3) ",
    "2025-07-25T07:53:08.21748708+08:00 stdout F ",
    "[05/27/2025-21:12:36] [TRT-LLM] [E] ",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "Capturing CUDA graphs (decode, FULL):  49%|####     | 20/41",
    "Capture cuda graph begin. This can take up to several minutes. avail mem=3.66 GB",
    "Capture draft cuda graph end. Time elapsed: 5.48 s. mem usage=0.10 GB.",
    'File "/x/vllm/v1/worker/gpu/cudagraph_utils.py", line 359, in capture',
    "EAGLE draft cuda graph replay padding: raw_bs=3 graph_bs=4",
    "Assertion `index out of bounds: 0 <= tmp < 2048` failed.",
    "torch.OutOfMemoryError: CUDA out of memory.",
    "CUDAGraphMode.FULL_AND_PIECEWISE is not supported with spec-decode for attention backend FlashInferBackend; setting cudagraph_mode=PIECEWISE",
    "SpecDecoding metrics: Mean acceptance length: 1.00, Avg Draft acceptance rate: 0.0%",
    "| compile | cudagraph | acceptance |",
    "| on | on | **0%** |",
    "Watchdog caught collective operation timeout",
    "tree_speculative_sampling_target_only (sgl_kernel/speculative.py:36)",
    "Initializing a V1 LLM engine (v0.20.2) with config: model='m', speculative_config=SpeculativeConfig(method='eagle3', model='d', num_spec_tokens=3)",
    "server_args=ServerArgs(speculative_algorithm='EAGLE3', tp_size=2, cuda_graph_bs=[1, 2",
    "Traceback (most recent call last):",
    "\x00\x00\x00",
    "\ufffd\udcff",
    "Capturing batches (bs=5 avail_mem=29.83 GB):  78%|███████▊  | 18/23",
    "y:12)",
    '--speculative-config \'{"method": ',
]
SEPARATORS = ["\n", "\r", "\r\n", "", " ", "\x00"]


def _check(result) -> None:
    assert result.category in CATEGORIES
    assert 0.0 <= result.confidence <= 1.0
    for ev in result.evidence:
        assert 1 <= ev.line <= max(result.lines, 1)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=30_000))
def test_random_bytes_never_raise(data: bytes) -> None:
    _check(triage_bytes(data))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(FRAGMENTS), st.sampled_from(SEPARATORS)), max_size=60))
def test_random_realistic_lines_never_raise(parts: list[tuple[str, str]]) -> None:
    text = "".join(f + s for f, s in parts)
    _check(triage_bytes(text.encode("utf-8", "surrogatepass")))


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([r["log_excerpt"] for r in dev_reports()]), st.data())
def test_cut_real_reports_never_raise(excerpt: str, data: st.DataObject) -> None:
    raw = excerpt.encode()
    start = data.draw(st.integers(0, len(raw)))
    end = data.draw(st.integers(start, len(raw)))
    _check(triage_bytes(raw[start:end]))


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(min_size=1, max_size=40).filter(lambda s: s.strip() not in ("", "-", ".", "..")))
def test_paths_that_do_not_exist_are_bad_input(tmp_path: Path, name: str) -> None:
    target = tmp_path / "absent" / name.replace("\x00", "_")
    try:
        triage_path(target)
    except BadInput:
        return
    raise AssertionError("expected BadInput")
