"""Benchmark: `eaglegraph explore RUN.json` startup, process start to the first full screen.

Each repeat is a fresh interpreter (cold imports, as a user starts it): it loads the run, builds
the explorer and runs the Textual app headless until the first screen is laid out, then exits.
The issue's bar is under 1 s on a saved probe run of `--mode all`.

Run: python benchmarks/bench_explore.py RUN.json [--repeat 5]
Make the run: python -m eaglegraph --json probe tiny-llama-eagle3 --behavior vllm-pre-39773 \\
    --attention-backend flashinfer --mode all > probe-all.json
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time

_CHILD = """
import asyncio, sys
from eaglegraph.results import load_run
from eaglegraph.reports.explore_app import ExploreApp

async def main():
    app = ExploreApp(load_run(sys.argv[1]))
    async with app.run_test(size=(80, 30)) as pilot:
        await pilot.pause()
        assert app.selected is not None

asyncio.run(main())
"""

# The floor the explorer stands on: a bare Textual app to its first screen, timed the same way,
# so a figure taken on a loaded machine can be read against what Textual alone costs there.
_BARE = """
import asyncio
from textual.app import App
from textual.widgets import Static

class Bare(App):
    def compose(self):
        yield Static("hello")

async def main():
    async with Bare().run_test(size=(80, 30)) as pilot:
        await pilot.pause()

asyncio.run(main())
"""


def _time(code: str, args: list[str], repeat: int) -> tuple[list[float], list[float]]:
    times, cpu = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code, *args], check=True)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return times, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    times, cpu = _time(_CHILD, [args.run], args.repeat)
    bare_times, bare_cpu = _time(_BARE, [], args.repeat)
    # CPU seconds beside wall time: on a shared, loaded machine wall time waits for cores.
    print(
        f"explore startup ({args.run}): wall median {statistics.median(times):.3f} s "
        f"(min {min(times):.3f}), CPU median {statistics.median(cpu):.3f} s over {len(times)} runs"
    )
    print(
        f"bare Textual app, same harness: wall median {statistics.median(bare_times):.3f} s, "
        f"CPU median {statistics.median(bare_cpu):.3f} s"
    )


if __name__ == "__main__":
    main()
