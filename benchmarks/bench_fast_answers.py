"""Wall time of the answers that should come at once: --help, every bad-flag error, triage,
report, an unwritable output, `inspect` of a preset or a config folder (headers and configs
only); each in a fresh interpreter (what a user waits for), with whether torch was imported on
the way. The presets are materialised before the clock starts, except for the cold-cache
case: a tiny preset's first use writes its weights (torch-free), once per cache.

    python benchmarks/bench_fast_answers.py [--repeat 5] [--out benchmarks/bench_fast_answers.txt]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from eaglegraph.pair.presets import materialize

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "tests" / "fixtures" / "runs" / "capture-tiny-llama-eagle3-cpu.json"
PRESET = "tiny-llama-eagle3"
CONFIG_PRESET = "llama3.1-8b-eagle3"  # config-only, real geometry
COLD = "inspect PRESET, cold cache"  # each run in an empty preset cache: writes the weights
CONFIG_FOLDER = ROOT / "tests" / "fixtures" / "configs" / "public" / "deepseek-v3"  # MTP target

# prints whether torch was imported, after the command ran (its own output discarded)
_PROBE = """
import contextlib, io, sys
from eaglegraph.cli import cli
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        cli.main(args=sys.argv[1:], prog_name="eaglegraph")
    except SystemExit:
        pass
print("torch" in sys.modules)
"""


def cases(log: Path) -> dict[str, list[str]]:
    return {
        "--help": ["--help"],
        "capture --help": ["capture", "--help"],
        "typo command (inpsect)": ["inpsect"],
        "typo preset": ["probe", "tiny-lama-eagle3"],
        "typo --gpu H10": ["inspect", PRESET, "--gpu", "H10"],
        "typo --mode FULLL": ["capture", PRESET, "--mode", "FULLL"],
        "typo --behavior": ["probe", PRESET, "--behavior", "vllm-pre-3977"],
        "unwritable --save": ["capture", PRESET, "--save", "/proc/run.json"],
        "triage LOG": ["triage", str(log)],
        "report RUN.json": ["report", str(RUN)],
        "inspect PRESET": ["inspect", PRESET],
        "inspect PRESET --json": ["inspect", PRESET, "--json"],
        COLD: ["inspect", PRESET, "--json"],
        "inspect 8B preset (configs)": ["inspect", CONFIG_PRESET],
        "inspect FOLDER --json (configs)": ["inspect", str(CONFIG_FOLDER), "--json"],
        "inspect MTP --framework sglang": [
            "inspect",
            "tiny-deepseek-mtp2",
            "--framework",
            "sglang",
        ],
    }


def measure(args: list[str], repeat: int, cold: bool = False) -> tuple[float, float, bool]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    times = []
    torch = False
    for _ in range(repeat):
        if cold:
            env["EAGLEGRAPH_CACHE"] = tempfile.mkdtemp(prefix="eaglegraph-cold-")
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", _PROBE, *args],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            check=True,
        )
        times.append(time.perf_counter() - start)
        if cold:
            shutil.rmtree(env["EAGLEGRAPH_CACHE"], ignore_errors=True)
        torch = proc.stdout.strip().splitlines()[-1] == "True"
    return statistics.median(times), max(times), torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    opts = parser.parse_args()
    for name in (PRESET, CONFIG_PRESET, "tiny-deepseek-mtp2"):
        materialize(name)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        log.write_text(
            "INFO vllm version 0.24.0\n"
            "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        )
        rows = {
            name: measure(args, opts.repeat, cold=name == COLD) for name, args in cases(log).items()
        }
    lines = [
        f"fast answers: median / max of {opts.repeat} fresh interpreters, "
        f"{os.cpu_count()} CPU(s), load {load_before[0]:.1f} before / {os.getloadavg()[0]:.1f} "
        f"after (1-min), Python {sys.version.split()[0]}",
        f"{'command':34} {'median':>8} {'max':>8}  torch",
    ]
    for name, (median, worst, torch) in rows.items():
        lines.append(f"{name:34} {median:7.2f}s {worst:7.2f}s  {'yes' if torch else 'no'}")
    text = "\n".join(lines)
    print(text)
    if opts.out is not None:
        opts.out.write_text(text + "\n")
    print(json.dumps({k: {"median_s": round(v[0], 3), "torch": v[2]} for k, v in rows.items()}))


if __name__ == "__main__":
    main()
