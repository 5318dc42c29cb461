"""Streaming speed of `eaglegraph triage` on a large, realistic serving log.

Builds a synthetic log from the line forms real vLLM and SGLang servers print during hours of
serving (throughput and spec-decode metrics, access logs, request logs, Kubernetes CRI
prefixes), sprinkled with binary junk, Latin-1 bytes, tqdm progress bars, an occasional
200 KB JSON line and harmless warnings, with startup config and a real crash at the end. Then
it runs the full triage on the file (page cache warm) and prints MB/s.

    python benchmarks/bench_triage.py [--size-mb 256] [--repeat 3] [--keep PATH] [--cli N]
                                      [--out FILE]

Each run is timed in wall-clock and in this process's CPU time (the CPU figure is what other
work on a shared machine disturbs least); min and median are printed with the load average
before and after. `--cli N` also times `eaglegraph triage LOG --json` N times in a fresh
interpreter (imports, the knowledge base, rendering: what a user waits for). `--out` writes
the summary there (benchmarks/bench_triage.txt holds the last one recorded).

Not a timed test: the figure depends on the machine; the project's bar is >= 100 MB/s and a
50 MB log answered in under 3 s.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eaglegraph.triage.diagnose import triage_path

HEAD = [
    "(APIServer pid=1) INFO 05-13 10:40:01 [api_server.py:1805] vLLM API server version 0.22.1",
    "(EngineCore_DP0 pid=412) INFO 05-13 10:40:09 [core.py:93] Initializing a V1 LLM engine "
    "(v0.22.1) with config: model='meta-llama/Llama-3.1-8B-Instruct', speculative_config="
    "SpeculativeConfig(method='eagle3', model='yuhuili/EAGLE3-LLaMA3.1-Instruct-8B', "
    "num_spec_tokens=3), tokenizer='meta-llama/Llama-3.1-8B-Instruct', tensor_parallel_size=2, "
    "pipeline_parallel_size=1, data_parallel_size=1, enforce_eager=False, kv_cache_dtype=auto, "
    "quantization=None, compilation_config={'mode': <CompilationMode.VLLM_COMPILE: 3>, "
    "'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'cudagraph_capture_sizes': "
    "[1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 128, 256, 512]}",
    "(EngineCore_DP0 pid=412) INFO 05-13 10:40:15 [cuda.py:367] Using FLASHINFER attention "
    "backend out of potential backends: ['FLASHINFER', 'TRITON_ATTN'].",
    "(EngineCore_DP0 pid=412) WARNING 05-13 10:40:31 [compilation.py:1390] "
    "CUDAGraphMode.FULL_AND_PIECEWISE is not supported with spec-decode for attention backend "
    "FlashInferBackend (support: AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE); setting "
    "cudagraph_mode=PIECEWISE",
    "(EngineCore_DP0 pid=412) INFO 05-13 10:40:40 [gpu_worker.py:298] Available KV cache memory: "
    "52.31 GiB",
    "(EngineCore_DP0 pid=412) INFO 05-13 10:40:40 [kv_cache_utils.py:1087] GPU KV cache size: "
    "428,512 tokens",
    "\r".join(
        f"Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): {int(100 * i / 14)}%|"
        f"{'#' * i}{' ' * (14 - i)}| {i}/14 [00:0{i % 10}<00:01, 9.1it/s]"
        for i in range(15)
    ),
    "(EngineCore_DP0 pid=412) INFO 05-13 10:41:02 [gpu_model_runner.py:3480] Graph capturing "
    "finished in 21 secs, took 0.61 GiB",
    "(APIServer pid=1) INFO 05-13 10:41:10 [launcher.py:44] Application startup complete.",
]
BULK = [
    "(APIServer pid=1) INFO 05-13 {t} [loggers.py:271] Engine 000: Avg prompt throughput: "
    "{f} tokens/s, Avg generation throughput: {f} tokens/s, Running: {n} reqs, Waiting: 0 reqs, "
    "GPU KV cache usage: {p}%, Prefix cache hit rate: {p}%",
    "(APIServer pid=1) INFO 05-13 {t} [loggers.py:271] SpecDecoding metrics: Mean acceptance "
    "length: 3.16, Accepted throughput: {f} tokens/s, Drafted throughput: {f} tokens/s, Accepted: "
    "{n} tokens, Drafted: {n} tokens, Per-position acceptance rate: 0.844, 0.600, 0.378, Avg Draft "
    "acceptance rate: 43.1%",
    '(APIServer pid=1) INFO:     10.0.{n}.12:52314 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "[2025-07-25 {t} TP0] Decode batch. #running-req: {n}, #token: {n}{n}, token usage: 0.{n}, "
    "accept len: 2.31, cuda graph: True, gen throughput (token/s): {f}, #queue-req: 0, ",
    "2025-07-25T{t}.21748708+08:00 stdout F [2025-07-25 {t} TP1] Prefill batch. #new-seq: 1, "
    "#new-token: {n}, #cached-token: 0, cache hit rate: 0.00%, token usage: 0.01, #running-req: "
    "{n}, #queue-req: 5",
    "[2025-07-25 {t} TP0] Receive: obj=GenerateReqInput(rid='a{n}b', text='Summarise the quarterly "
    "report for the board in three short paragraphs', sampling_params={{'temperature': 0.7, "
    "'max_new_tokens': {n}}})",
    "(APIServer pid=1) INFO 05-13 {t} [logger.py:41] Received request chatcmpl-{n}{n}: prompt: "
    "'<|begin_of_text|><|start_header_id|>user<|end_header_id|> what is the capital of France?', "
    "params: SamplingParams(n=1, temperature=0.6, top_p=0.9, max_tokens={n})",
    "(APIServer pid=1) WARNING 05-13 {t} [protocol.py:93] The following fields were present in the "
    "request but ignored: {{'stream_options'}}",
]
CRASH = [
    "(EngineCore_DP0 pid=412) ERROR 05-13 14:02:11 [core.py:710] EngineCore encountered a fatal "
    "error.",
    "(EngineCore_DP0 pid=412) ERROR 05-13 14:02:11 [core.py:710] Traceback (most recent call last):",
    '(EngineCore_DP0 pid=412) ERROR 05-13 14:02:11 [core.py:710]   File "/usr/local/lib/python3.12/'
    'dist-packages/vllm/v1/engine/core.py", line 701, in run_engine_core',
    "(EngineCore_DP0 pid=412) ERROR 05-13 14:02:11 [core.py:710]     engine_core.run_busy_loop()",
    '(EngineCore_DP0 pid=412) ERROR 05-13 14:02:11 [core.py:710]   File "/usr/local/lib/python3.12/'
    'dist-packages/vllm/v1/worker/gpu_model_runner.py", line 1950, in execute_model',
    "(EngineCore_DP0 pid=412) ERROR 05-13 14:02:11 [core.py:710]     "
    "self.sampler_event.synchronize()",
    "(EngineCore_DP0 pid=412) ERROR 05-13 14:02:11 [core.py:710] torch.AcceleratorError: CUDA "
    "error: an illegal memory access was encountered",
    "[rank1]:[E513 14:02:41.0 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=88123, OpType=ALLREDUCE, NumelIn=8192, NumelOut=8192, "
    "Timeout(ms)=600000) ran for 600012 milliseconds before timing out.",
]


_WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "for",
    "on",
    "that",
    "with",
    "as",
    "this",
    "by",
    "from",
    "at",
    "be",
    "are",
    "was",
    "it",
    "or",
    "an",
    "which",
    "can",
    "model",
    "token",
    "request",
    "latency",
    "batch",
    "prompt",
    "answer",
    "summary",
    "report",
    "quarterly",
    "revenue",
    "growth",
    "customer",
    "2024",
    "42",
    "0.7",
    "user",
    "assistant",
    "system",
    "please",
    "explain",
    "why",
    "how",
    "what",
]


def _bulk_line(rng: random.Random) -> bytes:
    r = rng.random()
    if r < 0.002:
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(20, 400))).replace(b"\n", b" ")
    if r < 0.004:
        return "Warnung: Zeitüberschreitung beim Lesen — Größe überschritten".encode(
            "latin-1", "replace"
        )
    if r < 0.0041:
        words = " ".join(rng.choice(_WORDS) for _ in range(30_000))
        return ('{"event": "request", "prompt": "' + words + '"}').encode()
    t = f"{rng.randint(10, 23)}:{rng.randint(10, 59)}:{rng.randint(10, 59)}"
    template = rng.choice(BULK)
    return template.format(
        t=t, f=f"{rng.uniform(10, 2000):.1f}", n=rng.randint(1, 64), p=f"{rng.uniform(0, 99):.1f}"
    ).encode()


def build_log(path: Path, size_mb: int, seed: int = 7) -> int:
    rng = random.Random(seed)
    pool = [_bulk_line(rng) for _ in range(20_000)]
    target = size_mb * 1024 * 1024
    written = 0
    with open(path, "wb") as fh:
        head = ("\n".join(HEAD) + "\n").encode()
        fh.write(head)
        written += len(head)
        while written < target:
            chunk = b"\n".join(rng.choices(pool, k=4096)) + b"\n"
            fh.write(chunk)
            written += len(chunk)
        tail = ("\n".join(CRASH) + "\n").encode()
        fh.write(tail)
        written += len(tail)
    return written


def _figures(what: str, seconds: list[float], size: int) -> str:
    best, median = min(seconds), statistics.median(seconds)
    return (
        f"{what}: min {best:.2f} s ({size / 1e6 / best:.0f} MB/s), median {median:.2f} s "
        f"({size / 1e6 / median:.0f} MB/s)"
    )


def _cli_figures(path: Path, n: int) -> str:
    """`eaglegraph triage LOG --json` end to end, each in a fresh interpreter."""
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    walls = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "eaglegraph", "triage", str(path), "--json"],
            stdout=subprocess.DEVNULL,
            env=env,
            check=False,
        )
        walls.append(time.perf_counter() - t)
    return (
        f"eaglegraph triage LOG --json, fresh interpreter: min {min(walls):.2f} s, median "
        f"{statistics.median(walls):.2f} s, max {max(walls):.2f} s ({n} runs)"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, default=None, help="write the log here and keep it")
    ap.add_argument("--cli", type=int, default=0, help="also time the command N times")
    ap.add_argument("--out", type=Path, default=None, help="write the summary to this file")
    args = ap.parse_args(argv)
    tmpdir = None
    if args.keep:
        path = args.keep
    else:
        tmpdir = tempfile.TemporaryDirectory(prefix="eaglegraph-bench-")
        path = Path(tmpdir.name) / "serving.log"
    try:
        t0 = time.perf_counter()
        size = build_log(path, args.size_mb)
        print(f"built {size / 1e6:.0f} MB log in {time.perf_counter() - t0:.1f} s: {path}")
        load_before = os.getloadavg()[0]
        walls: list[float] = []
        cpus: list[float] = []
        result = None
        for _ in range(args.repeat):
            t, c = time.perf_counter(), time.process_time()
            result = triage_path(path)
            walls.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
            print(
                f"  {walls[-1]:.2f} s wall  {size / 1e6 / walls[-1]:.0f} MB/s   {cpus[-1]:.2f} s CPU"
            )
        assert result is not None
        lines = [
            f"triage of a {size / 1e6:.0f} MB synthetic log (benchmarks/bench_triage.py "
            f"--size-mb {args.size_mb}), {args.repeat} runs in one process, "
            f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}",
            f"verdict: {result.category} (confidence {result.confidence}), primary line "
            f"{result.primary_error.line if result.primary_error else None}, {result.lines} lines",
            _figures("wall", walls, size),
            _figures("CPU ", cpus, size),
        ]
        if args.cli:
            lines.append(_cli_figures(path, args.cli))
        lines.append(
            f"load average (1 min): {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
        )
        print("\n".join(lines))
        if args.out:
            args.out.write_text("\n".join(lines) + "\n")
    finally:
        if tmpdir is not None:
            tmpdir.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
