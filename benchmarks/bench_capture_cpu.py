"""CPU benchmark: how long `eaglegraph capture tiny-llama-eagle3` takes with no options.

What a new user without a GPU runs first. The command runs in a fresh process (imports, preset
materialisation and Triton's interpreter included), output piped as in a script; wall time
and the child's CPU time (user + system) are recorded, with the load average, because the CI
machine is shared and wall time alone says little there. `--full-plan` times the engine's
whole default plan instead of the quick CPU one.

    python benchmarks/bench_capture_cpu.py [--full-plan] [--repeat N]

Recorded figures are in benchmarks/bench_capture_cpu.txt.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one_run(extra: list[str]) -> dict[str, float | int]:
    """One `capture` in a child process: wall and CPU seconds, graphs captured."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "eaglegraph", "capture", "tiny-llama-eagle3", "--json", *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
        check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"capture failed ({proc.returncode}): {proc.stderr[-2000:]}")
    run = json.loads(proc.stdout)
    return {
        "wall_s": round(wall, 1),
        "cpu_s": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 1),
        "graphs": run["totals"]["graphs"],
        "capture_s": round(run["totals"]["capture_seconds"], 1),
        "load_1min": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full-plan", action="store_true", help="time the whole default plan")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    extra = ["--full-plan"] if args.full_plan else []
    for _ in range(args.repeat):
        print(json.dumps({"args": extra, **one_run(extra)}))


if __name__ == "__main__":
    main()
