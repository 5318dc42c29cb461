"""GPU check: the CPU pool prediction against CUDA captures, per preset, profile and pool.

Two steps, so that the prediction is literally made without a GPU:

  --predict-only --predictions P.json   on any machine (no GPU): record each case's capture
                                        sequence on meta tensors, simulate it under both pool
                                        policies, write the predicted bytes per pool.
  [--predictions P.json] [--json OUT]   on the GPU machine: capture each case under both
                                        policies (uncompiled, which is what the recording
                                        models) and compare every pool with the prediction
                                        (recorded on the spot for a case P.json lacks).

Prints one row per pool (predicted, measured, error) and writes the rows as JSON for the
README table. Run from the repository root: PYTHONPATH=. python3 benchmarks/predict_vs_measured.py
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.probes.capture import CaptureRequest, run_capture
from eaglegraph.probes.memory_predict import predict_policy, record_capture
from eaglegraph.probes.spec import rig_config

SMALL = {"max_num_seqs": 8, "num_speculative_tokens": 3}
# two MTP modules: vLLM refuses a K above the module count that is no multiple of it
SMALL_K2 = {"max_num_seqs": 8, "num_speculative_tokens": 2}
EIGHT_B = {"max_num_seqs": 64, "num_speculative_tokens": 3}
MEMDIFF = {"max_num_seqs": 1024, "num_speculative_tokens": 5}  # the PR #44078 setup
PROFILES = ("vllm-current", "vllm-0.22", "sglang-current")
# (preset, plan, profiles): every profile on the tiny pairs and on 8B EAGLE-1, the other
# real-width pairs under the current profile only, to keep the GPU run short; the PR #44078
# setup (R=1024, K=5) under 0.22 (its dedicated pool) and current
CASES: list[tuple[str, dict[str, int], tuple[str, ...]]] = [
    ("tiny-llama-eagle1", SMALL, PROFILES),
    ("tiny-llama-eagle3", SMALL, PROFILES),
    ("tiny-qwen3-eagle3", SMALL, PROFILES),
    ("tiny-deepseek-mtp", SMALL, ("vllm-current", "sglang-current")),
    ("tiny-deepseek-mtp2", SMALL_K2, ("vllm-current", "sglang-current")),
    ("tiny-qwen3-dflash", SMALL, ("vllm-current",)),
    ("llama3.1-8b-eagle1", EIGHT_B, PROFILES),
    ("llama3.1-8b-eagle3", EIGHT_B, ("vllm-current",)),
    ("deepseek-v3-mtp-4l", EIGHT_B, ("vllm-current",)),
    ("llama3.1-8b-eagle1", MEMDIFF, ("vllm-current", "vllm-0.22")),
    ("llama3.1-8b-eagle3", MEMDIFF, ("vllm-0.22",)),
]
POLICIES = ("shared", "dedicated")
MiB = 1 << 20


COMPILED = False  # --compile: measure the compiled target (the prediction stays uncompiled)


def _config(preset: str, plan: dict[str, int], behavior: str) -> tuple[object, object]:
    pair = load_pair(materialize(preset))
    random_weights = not pair.target.weights.weight_bytes  # type: ignore[union-attr]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    config = rig_config(
        pair, {**plan, "behavior": behavior}, device=device, max_model_len=512,
        random_weights=random_weights, compile_model=COMPILED and device == "cuda",
    )  # fmt: skip
    return pair, config


def predict_case(preset: str, plan: dict[str, int], behavior: str) -> dict[str, object]:
    """Predicted reserved bytes per pool label, under each policy (no GPU needed)."""
    pair, config = _config(preset, plan, behavior)
    t0 = time.perf_counter()
    recording = record_capture(pair, config)  # type: ignore[arg-type]
    seconds = time.perf_counter() - t0
    pools = {
        policy: {p.label: p.reserved_bytes for p in predict_policy(recording, policy).pools}
        for policy in POLICIES
    }
    return {"pools": pools, "record_seconds": seconds, "graphs": len(recording.scopes)}


def measure_case(
    preset: str, plan: dict[str, int], behavior: str, predicted: dict[str, object]
) -> list[dict[str, object]]:
    pair, config = _config(preset, plan, behavior)
    rows = []
    for policy in POLICIES:
        gc.collect()
        torch.cuda.empty_cache()
        request = CaptureRequest(config=config, pool=policy, predict=False)  # type: ignore[arg-type]
        run = run_capture(pair, request)  # type: ignore[arg-type]
        guesses: dict[str, int] = predicted["pools"][policy]  # type: ignore[index]
        for pool in (p for p in run.pools if p.graphs):
            want = guesses.get(pool.label, 0)
            rows.append(
                {
                    "preset": preset,
                    "max_num_seqs": plan["max_num_seqs"],
                    "num_speculative_tokens": plan["num_speculative_tokens"],
                    "behavior": behavior,
                    "policy": policy,
                    "compiled": bool(run.config.get("compiled")),
                    "pool": pool.label,
                    "graphs": pool.graphs,
                    "predicted_bytes": want,
                    "measured_bytes": pool.reserved_bytes,
                    "error": (want - pool.reserved_bytes) / pool.reserved_bytes,
                    "record_seconds": predicted["record_seconds"],
                }
            )
        del run
    return rows


def _key(preset: str, plan: dict[str, int], behavior: str) -> str:
    return f"{preset}/R{plan['max_num_seqs']}/K{plan['num_speculative_tokens']}/{behavior}"


def _measure_isolated(key: str, predictions: Path | None) -> list[dict[str, object]]:
    """Measure one case in a child process (a CUDA fault is sticky for its whole process)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.json"
        cmd = [sys.executable, __file__, "--case", key, "--json", str(out)]
        if COMPILED:
            cmd.append("--compile")
        if predictions is not None:
            cmd += ["--predictions", str(predictions)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        rows = json.loads(out.read_text()) if out.exists() else []
        if done.returncode != 0 or not rows:
            lines = (done.stdout + done.stderr).strip().splitlines()
            tail = [line for line in lines if "failed:" in line][-1:] or lines[-1:] or ["-"]
            raise RuntimeError(f"exit {done.returncode}: {tail[0].strip()[:200]}")
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", type=Path, default=None, help="write the rows here")
    parser.add_argument("--predictions", type=Path, default=None)
    parser.add_argument("--predict-only", action="store_true")
    parser.add_argument("--presets", default=",".join(dict.fromkeys(c[0] for c in CASES)))
    parser.add_argument("--max-num-seqs", type=int, default=None, help="only cases with this R")
    parser.add_argument(
        "--compile", action="store_true", help="measure with the target compiled (Inductor)"
    )
    parser.add_argument("--case", default=None, help=argparse.SUPPRESS)  # one case, in-process
    args = parser.parse_args()
    global COMPILED
    COMPILED = args.compile
    wanted = set(args.presets.split(","))
    cases = [
        (p, plan, b)
        for p, plan, profiles in CASES
        if p in wanted and args.max_num_seqs in (None, plan["max_num_seqs"])
        for b in profiles
        if args.case in (None, _key(p, plan, b))
    ]
    stored: dict[str, dict[str, object]] = {}
    if args.predictions is not None and args.predictions.exists():
        stored = json.loads(args.predictions.read_text())
    if args.predict_only:
        if args.predictions is None:
            parser.error("--predict-only needs --predictions FILE")
        for preset, plan, behavior in cases:
            try:
                stored[_key(preset, plan, behavior)] = predict_case(preset, plan, behavior)
            except Exception as exc:  # a case this machine cannot record is reported, not fatal
                print(_key(preset, plan, behavior), "failed:", repr(exc)[:300], flush=True)
                continue
            print(_key(preset, plan, behavior), stored[_key(preset, plan, behavior)], flush=True)
            args.predictions.write_text(json.dumps(stored, indent=1))
        return
    rows: list[dict[str, object]] = []
    print(f"{'preset':20} {'R/K':>6} {'profile':15} {'policy':9} {'pool':18} {'pred MiB':>9} "
          f"{'meas MiB':>9} {'error':>7}")  # fmt: skip
    for preset, plan, behavior in cases:
        key = _key(preset, plan, behavior)
        try:
            if args.case is None:  # each case in a fresh process: a CUDA fault kills only it
                case_rows = _measure_isolated(key, args.predictions)
            else:
                predicted = stored.get(key) or predict_case(preset, plan, behavior)
                case_rows = measure_case(preset, plan, behavior, predicted)
        except Exception as exc:  # one failing case must not hide the others' rows
            print(f"{preset:20} {behavior:15} failed: {exc!r}"[:300], flush=True)
            continue
        for row in case_rows:
            rows.append(row)
            print(
                f"{preset:20} {plan['max_num_seqs']:>4}/{plan['num_speculative_tokens']} "
                f"{behavior:15} {row['policy']:9} {row['pool']:18} "
                f"{row['predicted_bytes'] / MiB:9.1f} {row['measured_bytes'] / MiB:9.1f} "  # type: ignore[operator]
                f"{100 * row['error']:+6.1f}%",  # type: ignore[operator]
                flush=True,
            )
    worst = max((abs(r["error"]) for r in rows), default=0.0)  # type: ignore[arg-type]
    print(f"worst error {100 * worst:.1f}% over {len(rows)} pools")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
