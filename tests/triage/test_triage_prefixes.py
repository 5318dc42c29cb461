"""Line prefixes of each framework and wrapper, with the examples from crash-triage.md."""

from __future__ import annotations

import pytest

from eaglegraph.triage.prefixes import strip_prefixes

CASES = [
    # (line, message, framework, level, ranks)
    (
        "(EngineCore pid=1140) ERROR 07-15 00:27:03 core.py:1231]     super().capture_end()",
        "    super().capture_end()",
        "vllm",
        "ERROR",
        None,
    ),
    (
        "(EngineCore_DP0 pid=774560) INFO 10-30 14:20:52 [core.py:93] Initializing a V1 LLM engine",
        "Initializing a V1 LLM engine",
        "vllm",
        "INFO",
        {"DP": 0},
    ),
    (
        "(Worker_TP1 pid=3777738) ERROR 02-14 18:13:27 [multiproc_executor.py:863] WorkerProc hit an exception.",
        "WorkerProc hit an exception.",
        "vllm",
        "ERROR",
        {"TP": 1},
    ),
    (
        "(APIServer pid=1) INFO 05-13 10:46:43 [loggers.py:271] SpecDecoding metrics: Mean acceptance length: 3.16",
        "SpecDecoding metrics: Mean acceptance length: 3.16",
        "vllm",
        "INFO",
        None,
    ),
    (
        "INFO 08-19 07:51:03 model_runner.py:732] Capturing the model for CUDA graphs.",
        "Capturing the model for CUDA graphs.",
        "vllm",
        "INFO",
        None,
    ),
    (
        "(VllmWorkerProcess pid=13105) INFO 08-19 07:51:03 model_runner.py:1025] Graph capturing finished in 5 secs.",
        "Graph capturing finished in 5 secs.",
        "vllm",
        "INFO",
        None,
    ),
    (
        "[2025-07-25 07:53:08 TP2] Decode batch. #running-req: 12",
        "Decode batch. #running-req: 12",
        "sglang",
        None,
        {"TP": 2},
    ),
    (
        "[2026-07-22 15:49:08 DP0 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        "Scheduler hit an exception: Traceback (most recent call last):",
        "sglang",
        None,
        {"DP": 0, "TP": 0},
    ),
    (
        "[2025-08-11 04:09:16 TP0 EP0] Capture cuda graph begin. This can take up to several minutes. avail mem=3.66 GB",
        "Capture cuda graph begin. This can take up to several minutes. avail mem=3.66 GB",
        "sglang",
        None,
        {"TP": 0, "EP": 0},
    ),
    (
        "[2026-03-21 03:31:56] INFO engine.py:177: server_args=ServerArgs(model_path='x')",
        "server_args=ServerArgs(model_path='x')",
        "sglang",
        "INFO",
        None,
    ),
    (
        "[TP0] EAGLE draft cuda graph replay padding: raw_bs=3 graph_bs=4",
        "EAGLE draft cuda graph replay padding: raw_bs=3 graph_bs=4",
        "sglang",
        None,
        {"TP": 0},
    ),
    (
        "(SGLangEngine pid=952, ip=10.150.236.219) [2025-11-06 01:16:21 TP0] Scheduler hit an exception: Traceback",
        "Scheduler hit an exception: Traceback",
        "sglang",
        None,
        {"TP": 0},
    ),
    (
        '(SGLangEngine pid=952, ip=10.150.236.219)   File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2857',
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2857',
        "sglang",
        None,
        None,
    ),
    (
        "2025-07-25T07:53:08.21748708+08:00 stdout F [2025-07-25 07:53:08 TP2] Prefill batch. #new-seq: 1",
        "Prefill batch. #new-seq: 1",
        "sglang",
        None,
        {"TP": 2},
    ),
    (
        "2025-07-25T07:53:08.21748708Z stderr P Capturing batches (bs=5 avail_mem=29.83 GB):  78%",
        "Capturing batches (bs=5 avail_mem=29.83 GB):  78%",
        None,
        None,
        None,
    ),
    (
        "[05/27/2025-21:12:36] [TRT-LLM] [E] Failed to initialize executor on rank 3",
        "Failed to initialize executor on rank 3",
        "trtllm",
        "ERROR",
        None,
    ),
    (
        "[05/27/2025-21:12:36] [TRT-LLM] [RANK 2] [W] Falling back to greedy decoding for Eagle3.",
        "Falling back to greedy decoding for Eagle3.",
        "trtllm",
        "WARNING",
        {"TP": 2},
    ),
    (
        "2025-04-23T03:32:58.533Z  INFO dynamo_engine_vllm::worker: VLLM: Capturing cudagraphs for decoding.",
        "Capturing cudagraphs for decoding.",
        "vllm",
        None,
        None,
    ),
    (
        "vllm-1  | INFO 05-13 10:46:43 [loggers.py:271] Engine 000: Avg prompt throughput: 1.0 tokens/s",
        "Engine 000: Avg prompt throughput: 1.0 tokens/s",
        "vllm",
        "INFO",
        None,
    ),
]


@pytest.mark.parametrize(("line", "message", "framework", "level", "ranks"), CASES)
def test_strip(line: str, message: str, framework: str | None, level: str | None, ranks) -> None:
    text, prefix = strip_prefixes(line)
    assert text == message
    assert prefix.framework == framework
    if level is not None:
        assert prefix.level == level
    if ranks is not None:
        assert prefix.ranks == ranks


@pytest.mark.parametrize(
    "line",
    [
        "| compile | cudagraph | flag | acceptance |",
        "tree_speculative_sampling_target_only (sgl_kernel/speculative.py:36)",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "[rank1]:[E410 09:22:33.418 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective",
        "Out Of Bound Tensor access detected at dim[1]: assert(64 < 63)",
        "",
    ],
)
def test_unprefixed_lines_are_left_alone(line: str) -> None:
    assert strip_prefixes(line)[0] == line


def test_traceback_indentation_survives_the_vllm_prefix() -> None:
    text, _ = strip_prefixes(
        '(EngineCore pid=1140) ERROR 07-15 00:27:03 core.py:1231]   File "/x/graphs.py", line 126, in capture_end'
    )
    assert text == '  File "/x/graphs.py", line 126, in capture_end'


def test_pid_and_process_are_kept() -> None:
    _, prefix = strip_prefixes(
        "(EngineCore_DP1 pid=774560) WARNING 10-30 14:20:52 [compilation.py:1390] x"
    )
    assert (prefix.process, prefix.pid, prefix.ranks, prefix.source) == (
        "EngineCore_DP1",
        774560,
        {"DP": 1},
        "compilation.py:1390",
    )
