"""Record the `--json` output of inspect, capture (CPU), probe and triage, normalised, so a
refactor can show its outputs are unchanged: run it before and after, then diff the folders.

Volatile fields (timings, the environment, absolute cache paths) are dropped or rewritten; every
other byte is kept. Usage:

    python scripts/json_snapshots.py OUT_DIR [--quick]     # --quick: inspect + triage only
    diff -r BEFORE_DIR AFTER_DIR
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_LOGS = [
    ROOT / "tests/fixtures/crash-logs-dev.jsonl",
    ROOT / "tests/fixtures/crash-logs-dev2.jsonl",
]
INSPECT_PRESETS = [
    "tiny-llama-eagle1",
    "tiny-llama-eagle3",
    "tiny-qwen3-eagle3",
    "tiny-deepseek-mtp",
    "tiny-deepseek-mtp2",
    "tiny-qwen3-mtp",
    "tiny-qwen3-dflash",
    "deepseek-v3-mtp",
    "deepseek-v3-mtp-4l",
    "llama3.1-8b-eagle3",
    "llama3.1-8b-eagle1",
    "qwen3-8b-eagle3",
]
# sized for inspect alone: predicting their pools records a 671B step (many minutes)
INSPECT_ONLY = {"deepseek-v3-mtp"}
CAPTURE_RUNS: list[list[str]] = [
    ["tiny-llama-eagle3"],
    ["tiny-llama-eagle1", "--framework", "sglang"],
    ["tiny-qwen3-eagle3", "--mode", "PIECEWISE", "--attention-backend", "flashinfer"],
    ["tiny-deepseek-mtp", "--capture-sizes", "4,8"],
    ["tiny-qwen3-dflash", "--capture-sizes", "4,8"],
    ["tiny-qwen3-mtp", "--capture-sizes", "4,8", "--pool", "dedicated"],
]
PROBE_RUNS: list[list[str]] = [
    ["tiny-llama-eagle3", "--behavior", "vllm-pre-39773", "--attention-backend", "flashinfer"],
    ["tiny-llama-eagle3", "--mode", "FULL_AND_PIECEWISE"],
    ["tiny-llama-eagle1", "--behavior", "sglang-pre-10892"],
    ["tiny-deepseek-mtp", "--mode", "FULL_AND_PIECEWISE"],
    ["tiny-qwen3-dflash", "--mode", "FULL_AND_PIECEWISE"],
    ["tiny-qwen3-mtp", "--mode", "PIECEWISE"],
    ["tiny-qwen3-dflash", "--behavior", "vllm-pre-50065", "--mode", "FULL_AND_PIECEWISE"],
    ["tiny-deepseek-mtp", "--framework", "sglang"],
]
VOLATILE = re.compile(
    r"(^|_)(s|seconds|duration|elapsed|wall|time|timestamp|started|finished|pid|host)(_s)?$"
)
DROP_KEYS = {
    "environment",
    "start_s",
    "duration_s",
    "warmup_s",
    "capture_seconds",
    "eaglegraph_version",
}


def _normalise(value: Any, cache: str) -> Any:
    if isinstance(value, dict):
        return {
            k: _normalise(v, cache)
            for k, v in value.items()
            if k not in DROP_KEYS and not VOLATILE.search(k)
        }
    if isinstance(value, list):
        return [_normalise(v, cache) for v in value]
    if isinstance(value, str):
        value = value.replace(cache, "$CACHE").replace(str(ROOT), "$ROOT")
        return re.sub(r"\b\d+(\.\d+)? ?(s|ms|min)\b", "<t>", value)
    if isinstance(value, float):
        return round(value, 9)
    return value


def _run(out: Path, name: str, args: list[str]) -> None:
    cmd = [sys.executable, "-m", "eaglegraph", *args, "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    cache = os.environ.get("EAGLEGRAPH_CACHE", str(Path.home() / ".cache/eaglegraph"))
    try:
        body: Any = _normalise(json.loads(proc.stdout), cache)
    except json.JSONDecodeError:
        body = {"unparsed_stdout": proc.stdout[-2000:], "stderr": proc.stderr[-2000:]}
    body = {"exit_code": proc.returncode, "output": body}
    (out / f"{name}.json").write_text(json.dumps(body, indent=1, sort_keys=True) + "\n")
    print(f"{name}: exit {proc.returncode}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--quick", action="store_true")
    opts = parser.parse_args()
    opts.out.mkdir(parents=True, exist_ok=True)
    for preset in INSPECT_PRESETS:
        _run(opts.out, f"inspect-{preset}", ["inspect", preset, "--fail-on", "never"])
        if preset not in INSPECT_ONLY:
            _run(
                opts.out,
                f"inspect-mem-{preset}",
                ["inspect", preset, "--predict-memory", "--fail-on", "never"],
            )
    for log in FIXTURE_LOGS:
        for i, line in enumerate(log.read_text().splitlines()):
            record = json.loads(line)
            text = record["log_excerpt"]
            path = opts.out / f".log-{log.stem}-{i}.txt"
            path.write_text(text)
            _run(opts.out, f"triage-{log.stem}-{i}", ["triage", str(path), "--fail-on", "never"])
            path.unlink()
    if opts.quick:
        return
    for args in CAPTURE_RUNS:
        _run(opts.out, "capture-" + "-".join(a.strip("-") for a in args), ["capture", *args])
    for args in PROBE_RUNS:
        _run(
            opts.out,
            "probe-" + "-".join(a.strip("-") for a in args),
            ["probe", *args, "--fail-on", "never", "--batches", "1,3"],
        )


if __name__ == "__main__":
    main()
