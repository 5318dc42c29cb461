"""What running every rank costs: a TP 2 capture against TP 1 on the same device set, and the
collective ledger's overhead per collective.

1. Capture cost: `capture PRESET` at TP 1 (one process, as the CLI runs it) against `--tp 2`
   (two rank processes, NCCL or gloo), interleaved run by run so drift falls on both sides;
   medians of the wall time and of each rank's own capture seconds.
2. Ledger overhead: two gloo (CPU) or NCCL (CUDA) processes all-reduce a small tensor M times
   with `rig.ledger.Ledger.observe` around each call and M times without, alternating blocks;
   the difference per collective in microseconds (on CUDA the ledger also waits for the
   stream, as the rank runtime asks it to, so a stuck collective stays open).

    PYTHONPATH=. python3 benchmarks/bench_ranks.py --device cpu --runs 3
    PYTHONPATH=. python3 benchmarks/bench_ranks.py --device cuda --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def capture(preset: str, device: str, tp: int, seqs: int) -> tuple[float, list[float], list[float]]:
    """Wall seconds of one `capture` command, each rank's capture seconds, and each rank's
    first warm-up (the first eager pass loads every kernel and, at TP > 1, sets up NCCL's
    connections on first use; it is reported apart so the rest compares like with like)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.json"
        cmd = [
            sys.executable, "-m", "eaglegraph", "capture", preset, "--device", device,
            "--random-weights", "--max-num-seqs", str(seqs), "-K", "2", "--no-compile",
            "--save", str(out),
        ]  # fmt: skip
        if tp > 1:
            cmd += ["--tp", str(tp)]
        start = time.perf_counter()
        subprocess.run(
            cmd, check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
        )
        wall = time.perf_counter() - start
        doc = json.loads(out.read_text())
    runs = [doc] if tp == 1 else [r["capture"] for r in doc["ranks"]]
    seconds = [run["totals"]["capture_seconds"] for run in runs]
    first = [run["events"][0]["warmup_s"] if run["events"] else 0.0 for run in runs]
    return wall, seconds, first


_LEDGER_WORKER = r"""
import os, sys, time, tempfile, datetime
from pathlib import Path
import torch, torch.distributed as dist
from eaglegraph.rig.ledger import Ledger
rank, world, port, device, n = (int(sys.argv[1]), 2, sys.argv[2], sys.argv[3], int(sys.argv[4]))
if device == "cuda":
    torch.cuda.set_device(rank)
dist.init_process_group("nccl" if device == "cuda" else "gloo", init_method=f"tcp://127.0.0.1:{port}",
                        rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60))
x = torch.ones(1024, device=device)
ledger = Ledger(Path(tempfile.mkdtemp()) / f"r{rank}.ledger", rank)
ledger.sync_replays = device == "cuda"
def plain():
    dist.all_reduce(x)
    if device == "cuda":
        torch.cuda.current_stream().synchronize()
def recorded():
    done = ledger.observe("all_reduce", x)
    dist.all_reduce(x)
    done()
for f in (plain, recorded):
    for _ in range(50):
        f()
times = {"plain": [], "recorded": []}
for block in range(10):
    for name, f in (("plain", plain), ("recorded", recorded)) if block % 2 == 0 else (("recorded", recorded), ("plain", plain)):
        dist.barrier()
        t = time.perf_counter()
        for _ in range(n):
            f()
        times[name].append((time.perf_counter() - t) / n)
if rank == 0:
    import statistics
    p, r = statistics.median(times["plain"]), statistics.median(times["recorded"])
    print(f"{p * 1e6:.1f} {r * 1e6:.1f}")
dist.destroy_process_group()
"""


def ledger_overhead(device: str, n: int) -> tuple[float, float]:
    """Median µs per all-reduce, without and with the ledger (2 ranks)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NCCL_NVLS_ENABLE": "0"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _LEDGER_WORKER, str(r), str(port), device, str(n)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for r in range(2)
    ]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    plain, recorded = (float(v) for v in outs[0].split())
    return plain, recorded


def observe_cost(n: int = 5000) -> float:
    """µs of one `observe` + its end on a CPU tensor, in this process: the ledger alone."""
    import torch

    from eaglegraph.rig.ledger import Ledger

    with tempfile.TemporaryDirectory() as tmp:
        ledger = Ledger(Path(tmp) / "bench.ledger", 0)
        x = torch.ones(1024)
        for _ in range(100):
            ledger.observe("all_reduce", x)()
        start = time.perf_counter()
        for _ in range(n):
            ledger.observe("all_reduce", x)()
        seconds = (time.perf_counter() - start) / n
        ledger.close()
    return seconds * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--preset", default="tiny-llama-eagle3")
    parser.add_argument("--max-num-seqs", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3, help="capture runs per side")
    parser.add_argument("--collectives", type=int, default=500, help="all-reduces per block")
    args = parser.parse_args()
    walls: dict[int, list[float]] = {1: [], 2: []}
    ranks: dict[int, list[float]] = {1: [], 2: []}
    firsts: dict[int, list[float]] = {1: [], 2: []}
    rests: dict[int, list[float]] = {1: [], 2: []}
    for i in range(args.runs):
        for tp in (1, 2) if i % 2 == 0 else (2, 1):
            wall, seconds, first = capture(args.preset, args.device, tp, args.max_num_seqs)
            walls[tp].append(wall)
            ranks[tp].append(max(seconds))
            firsts[tp].append(max(first))
            rests[tp].append(max(s - f for s, f in zip(seconds, first, strict=True)))
    w1, w2 = statistics.median(walls[1]), statistics.median(walls[2])
    c1, c2 = statistics.median(ranks[1]), statistics.median(ranks[2])
    f1, f2 = statistics.median(firsts[1]), statistics.median(firsts[2])
    r1, r2 = statistics.median(rests[1]), statistics.median(rests[2])
    print(
        f"capture {args.preset} on {args.device} (max_num_seqs {args.max_num_seqs}, K=2, "
        f"uncompiled), median of {args.runs} interleaved runs:"
    )
    print(f"  wall: TP 1 {w1:.1f} s, TP 2 {w2:.1f} s (×{w2 / w1:.2f})")
    print(f"  capture seconds (slowest rank): TP 1 {c1:.2f} s, TP 2 {c2:.2f} s (×{c2 / c1:.2f})")
    print(f"    of which the first graph's warm-up: TP 1 {f1:.2f} s, TP 2 {f2:.2f} s")
    print(
        f"    the rest (every capture after it): TP 1 {r1:.2f} s, TP 2 {r2:.2f} s (×{r2 / r1:.2f})"
    )
    plain, recorded = ledger_overhead(args.device, args.collectives)
    print(
        f"ledger: all-reduce of 1024 floats over 2 ranks, {plain:.1f} µs plain, "
        f"{recorded:.1f} µs recorded: {recorded - plain:+.1f} µs per collective"
    )
    print(f"ledger alone (observe + end, one process): {observe_cost():.1f} µs per collective")


if __name__ == "__main__":
    main()
