"""Benchmark: `inspect` of a 30-shard checkpoint with thousands of tensors (headers only).

Run: python benchmarks/bench_inspect.py [--shards 30] [--layers 400] [--repeat 5]
Prints wall time per inspect (load_pair + plan + estimate) and the bytes the process read.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.synthetic_checkpoint import write_sparse_checkpoint
from eaglegraph.pair import load_pair
from eaglegraph.rig.inspect import inspect_pair
from eaglegraph.rig.options import resolve_plan_options


def read_bytes() -> int:
    with open("/proc/self/io") as fh:
        return int(next(line for line in fh if line.startswith("rchar:")).split()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shards", type=int, default=30)
    parser.add_argument("--layers", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "big"
        count, data = write_sparse_checkpoint(folder, args.shards, args.layers)
        options = resolve_plan_options()
        times, reads = [], []
        for _ in range(args.repeat):
            before, start = read_bytes(), time.perf_counter()
            pair = load_pair(folder)
            inspect_pair(pair, options)
            times.append(time.perf_counter() - start)
            reads.append(read_bytes() - before)
        assert pair.target is not None and pair.target.weights.tensor_count == count
        print(
            f"checkpoint: {args.shards} shards, {count} tensors, {data / 2**30:.1f} GiB of (sparse) data"
        )
        print(
            f"inspect: median {statistics.median(times) * 1000:.1f} ms, min {min(times) * 1000:.1f} ms "
            f"over {args.repeat} runs"
        )
        print(
            f"bytes read per inspect: {statistics.median(reads) / 1024:.0f} KiB "
            f"({statistics.median(reads) / data * 100:.5f}% of the tensor data)"
        )


if __name__ == "__main__":
    main()
