"""Capture-instrumentation overhead, measured so the figure can be trusted; and replayed vs
eager step latency.

1. Overhead: eaglegraph's per-graph instrumentation (a sync, the allocator counters and the
   driver's free memory around every capture) against a bare capture of the same plan. Runs
   come in interleaved pairs (bare/instrumented, the order alternating pair by pair, so drift
   and warm-up fall on both sides), each on a fresh rig; the figure is the mean of the pairs'
   relative differences with its 95 % confidence interval (Student t), and per graph the
   median seconds of each side. Pairs are added until `--pairs` or `--budget-s` is reached
   (at least 3). Target on CUDA: under 5 % (the interval's upper bound says whether it is).
2. Step latency (CUDA; `--no-latency` skips it) at batch 1 on a tiny preset, eager (mode NONE) against replayed
   graphs (FULL_AND_PIECEWISE): the launch-overhead win graphs exist for.

    PYTHONPATH=. python3 benchmarks/bench_capture.py                       # CUDA, 8B preset
    PYTHONPATH=. python3 benchmarks/bench_capture.py --device cpu --preset tiny-llama-eagle3
"""

from __future__ import annotations

import argparse
import gc
import math
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.probes.spec import rig_config
from eaglegraph.rig.driver import Session
from eaglegraph.rig.step import Rig

# two-sided 95 % Student t quantiles by degrees of freedom (beyond 30: the normal's 1.96)
_T95 = (12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16, 2.14,
        2.13, 2.12, 2.11, 2.10, 2.09, 2.09, 2.08, 2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05,
        2.05, 2.04)  # fmt: skip


def mean_ci(values: list[float]) -> tuple[float, float, float]:
    """Mean and its two-sided 95 % confidence interval."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, -math.inf, math.inf
    t = _T95[len(values) - 2] if len(values) - 1 <= len(_T95) else 1.96
    half = t * statistics.stdev(values) / math.sqrt(len(values))
    return mean, mean - half, mean + half


def median_ci(values: list[float]) -> tuple[float, float, float]:
    """Median and its distribution-free 95 % confidence interval (order statistics of the
    binomial(n, 1/2) sign test): one slow capture, a GC pause or a clock boost moves it by one
    rank at most, where it moves a mean by its whole size."""
    xs = sorted(values)
    n = len(xs)
    if n < 6:
        return statistics.median(xs), -math.inf, math.inf
    # the largest k with P(Binomial(n, 1/2) < k) <= 2.5 %
    k, cdf = 0, 0.0
    while True:
        p = math.comb(n, k) / 2**n
        if cdf + p > 0.025:
            break
        cdf += p
        k += 1
    return statistics.median(xs), xs[max(k - 1, 0)], xs[n - k]


@dataclass
class Capture:
    seconds: float  # wall time of the whole capture, synchronised
    graphs: list[tuple[str, float]]  # (label, seconds) per graph, in capture order


@dataclass
class Pairs:
    bare: list[Capture] = field(default_factory=list)
    instrumented: list[Capture] = field(default_factory=list)

    def relative(self) -> list[float]:
        return [
            (m.seconds - b.seconds) / b.seconds
            for b, m in zip(self.bare, self.instrumented, strict=True)
        ]


def capture_once(pair: Any, plan: dict[str, Any], device: str, instrument: bool) -> Capture:
    # uncompiled: a fresh rig would otherwise re-trace the target inside the timed capture,
    # and compilation is not instrumentation
    random_weights = not pair.target.weights.weight_bytes
    config = rig_config(
        pair, plan, device=device, max_model_len=512, random_weights=random_weights,
        compile_model=False,
    )  # fmt: skip
    rig = Rig(pair, config)
    cuda = device == "cuda"
    if cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    events, _ = rig.capture(instrument=instrument)
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    graphs = [(f"{e.phase} {e.mode} t{e.num_tokens}", e.duration_s) for e in events]
    del rig
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    return Capture(seconds, graphs)


def measure(args: argparse.Namespace, pair: Any, plan: dict[str, Any]) -> Pairs:
    capture_once(pair, plan, args.device, True)  # compile kernels, warm caches
    pairs = Pairs()
    started = time.monotonic()
    for i in range(args.pairs):
        if i >= 3 and time.monotonic() - started > args.budget_s:
            break
        for instrument in (False, True) if i % 2 == 0 else (True, False):
            run = capture_once(pair, plan, args.device, instrument)
            (pairs.instrumented if instrument else pairs.bare).append(run)
    return pairs


def report(args: argparse.Namespace, plan: dict[str, Any], pairs: Pairs) -> list[str]:
    rel = pairs.relative()
    mean, low, high = mean_ci(rel)
    bare = statistics.median(c.seconds for c in pairs.bare)
    med, med_low, med_high = median_ci(rel)

    def verdict(lo: float, hi: float) -> str:
        return "yes" if hi < 0.05 else "no" if lo >= 0.05 else "not shown (CI spans 5 %)"

    lines = [
        f"capture {args.preset} on {args.device} (max_num_seqs {plan['max_num_seqs']}, K=3, "
        f"{plan['mode']}): {len(pairs.bare[0].graphs)} graphs, bare median {bare:.2f} s",
        f"instrumentation overhead, mean of pairs {100 * mean:+.1f} % (95 % CI "
        f"{100 * low:+.1f} % .. {100 * high:+.1f} %) over {len(rel)} interleaved pairs; "
        f"under 5 %: {verdict(low, high)}",
        f"instrumentation overhead, median of pairs {100 * med:+.1f} % (distribution-free 95 % "
        f"CI {100 * med_low:+.1f} % .. {100 * med_high:+.1f} %); under 5 %: "
        f"{verdict(med_low, med_high)}",
    ]
    # per graph: the median of each side over the pairs, largest differences first
    labels = [label for label, _ in pairs.bare[0].graphs]
    per_graph = []
    for g, label in enumerate(labels):
        b = statistics.median(c.graphs[g][1] for c in pairs.bare if len(c.graphs) > g)
        m = statistics.median(c.graphs[g][1] for c in pairs.instrumented if len(c.graphs) > g)
        per_graph.append((m - b, label, b, m))
    lines.append(f"per graph (median ms over pairs; {args.top} largest differences):")
    lines.append(f"  {'graph':30} {'bare':>9} {'instr.':>9} {'diff':>8}")
    for diff, label, b, m in sorted(per_graph, reverse=True)[: args.top]:
        lines.append(f"  {label:30} {b * 1e3:9.2f} {m * 1e3:9.2f} {diff * 1e3:+8.2f}")
    total = sum(d for d, *_ in per_graph)
    lines.append(
        f"  sum over {len(per_graph)} graphs: {total * 1e3:+.1f} ms "
        f"({100 * total / bare:+.1f} % of the bare capture)"
    )
    return lines


def step_latency(pair: Any, mode: str, steps: int) -> float:
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
    parser.add_argument("--device", choices=("cuda", "cpu"), default=None)
    parser.add_argument("--max-num-seqs", type=int, default=None)
    parser.add_argument("--pairs", type=int, default=30, help="at most this many pairs")
    parser.add_argument("--budget-s", type=float, default=150.0, help="stop adding pairs after")
    parser.add_argument("--top", type=int, default=8)
    parser.add_argument(
        "--latency",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also the step latency, eager against replayed graphs (CUDA only)",
    )
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    args.device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if args.device == "cpu":
        torch.set_num_threads(1)
    seqs = args.max_num_seqs or (64 if args.device == "cuda" else 4)
    plan = {"max_num_seqs": seqs, "num_speculative_tokens": 3, "mode": "FULL_AND_PIECEWISE"}
    pair = load_pair(materialize(args.preset))
    pairs = measure(args, pair, plan)
    print("\n".join(report(args, plan, pairs)), flush=True)
    if args.latency and args.device == "cuda":
        tiny = load_pair(materialize("tiny-llama-eagle3"))
        eager = step_latency(tiny, "NONE", args.steps)
        graphs = step_latency(tiny, "FULL_AND_PIECEWISE", args.steps)
        print(
            f"step latency tiny-llama-eagle3, batch 1, K=3: eager {eager * 1e3:.2f} ms, "
            f"graphs {graphs * 1e3:.2f} ms, speedup ×{eager / graphs:.2f} (median of "
            f"{args.steps})"
        )


if __name__ == "__main__":
    main()
