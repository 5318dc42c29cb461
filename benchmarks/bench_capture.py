"""GPU benchmark: capture instrumentation overhead, and replayed vs eager step latency.

1. Capture time with eaglegraph's per-graph instrumentation (allocator reads around every
   capture) against a bare capture of the same graphs: fresh rig each time, alternating order,
   median of `--repeat` runs. Target: under 10 % overhead.
2. Step latency at batch 1 on a tiny preset, eager (mode NONE) against replayed graphs
   (FULL_AND_PIECEWISE): the launch-overhead win graphs exist for.

Run on the GPU machine: PYTHONPATH=. python3 benchmarks/bench_capture.py
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.probes.spec import rig_config
from eaglegraph.rig.driver import Session
from eaglegraph.rig.step import Rig


def capture_seconds(pair, plan: dict, instrument: bool, random_weights: bool) -> float:  # type: ignore[no-untyped-def]
    # uncompiled: a fresh rig would otherwise re-trace the target inside the timed capture,
    # and compilation is not instrumentation
    config = rig_config(
        pair, plan, device="cuda", max_model_len=512, random_weights=random_weights,
        compile_model=False,
    )  # fmt: skip
    rig = Rig(pair, config)
    torch.cuda.synchronize()
    start = time.perf_counter()
    rig.capture(instrument=instrument)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    del rig
    gc.collect()
    torch.cuda.empty_cache()
    return seconds


def step_latency(pair, mode: str, steps: int) -> float:  # type: ignore[no-untyped-def]
    plan = {"max_num_seqs": 4, "num_speculative_tokens": 3, "mode": mode}
    rig = Rig(pair, rig_config(pair, plan, device="cuda", max_model_len=2048))
    if mode != "NONE":
        rig.capture()
    session = Session(rig)
    session.admit(0, [5, 6, 7, 8, 9, 10], max_new_tokens=400)
    session.step()  # prefill
    for _ in range(3):
        session.step()  # warm
    times = []
    for _ in range(steps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        session.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--preset", default="llama3.1-8b-eagle3")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    pair = load_pair(materialize(args.preset))
    random_weights = not pair.target.weights.weight_bytes  # type: ignore[union-attr]
    plan = {"max_num_seqs": 64, "num_speculative_tokens": 3, "mode": "FULL_AND_PIECEWISE"}
    capture_seconds(pair, plan, True, random_weights)  # compile kernels, warm caches
    bare, instrumented = [], []
    for i in range(args.repeat):
        for instrument in (False, True) if i % 2 == 0 else (True, False):
            t = capture_seconds(pair, plan, instrument, random_weights)
            (instrumented if instrument else bare).append(t)
    b, m = statistics.median(bare), statistics.median(instrumented)
    print(
        f"capture {args.preset} (max_num_seqs 64, K=3, FULL_AND_PIECEWISE): bare {b:.2f} s, "
        f"instrumented {m:.2f} s, overhead {100 * (m - b) / b:+.1f}% (median of {args.repeat})"
    )
    tiny = load_pair(materialize("tiny-llama-eagle3"))
    eager = step_latency(tiny, "NONE", args.steps)
    graphs = step_latency(tiny, "FULL_AND_PIECEWISE", args.steps)
    print(
        f"step latency tiny-llama-eagle3, batch 1, K=3: eager {eager * 1e3:.2f} ms, "
        f"graphs {graphs * 1e3:.2f} ms, speedup ×{eager / graphs:.2f} (median of {args.steps})"
    )


if __name__ == "__main__":
    main()
