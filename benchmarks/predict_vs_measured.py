"""GPU check: the CPU pool prediction against CUDA captures, per preset, profile and pool.

For each preset and behavior profile, the capture sequence is recorded once on meta tensors
(no GPU), simulated under the profile's pool policy and the other one, and each policy is then
captured on the GPU (uncompiled, which is what the recording models). Prints one row per pool
(predicted, measured, error) and writes the rows as JSON for the README table.

Run on the GPU machine: PYTHONPATH=. python3 benchmarks/predict_vs_measured.py [--json OUT]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.probes.capture import CaptureRequest, run_capture
from eaglegraph.probes.memory_predict import predict_policy, record_capture
from eaglegraph.probes.setup import rig_config

CASES = [
    ("tiny-llama-eagle1", {"max_num_seqs": 8, "num_speculative_tokens": 3}),
    ("tiny-llama-eagle3", {"max_num_seqs": 8, "num_speculative_tokens": 3}),
    ("tiny-qwen3-eagle3", {"max_num_seqs": 8, "num_speculative_tokens": 3}),
    ("llama3.1-8b-eagle1", {"max_num_seqs": 64, "num_speculative_tokens": 3}),
    ("llama3.1-8b-eagle3", {"max_num_seqs": 64, "num_speculative_tokens": 3}),
]
BEHAVIORS = ("vllm-current", "vllm-0.22", "sglang-current")
MiB = 1 << 20


def rows_for(preset: str, plan: dict[str, object], behavior: str) -> list[dict[str, object]]:
    pair = load_pair(materialize(preset))
    random_weights = not pair.target.weights.weight_bytes  # type: ignore[union-attr]
    config = rig_config(
        pair, {**plan, "behavior": behavior}, device="cuda", max_model_len=512,
        random_weights=random_weights,
    )  # fmt: skip
    t0 = time.perf_counter()
    recording = record_capture(pair, config)
    record_s = time.perf_counter() - t0
    rows = []
    for policy in ("shared", "dedicated"):
        gc.collect()
        torch.cuda.empty_cache()
        run = run_capture(pair, CaptureRequest(config=config, pool=policy))
        predicted = predict_policy(recording, policy)
        for pool in (p for p in run.pools if p.graphs):
            guess = predicted.pool(pool.label)
            want = guess.reserved_bytes if guess else 0
            rows.append(
                {
                    "preset": preset,
                    "behavior": behavior,
                    "policy": policy,
                    "pool": pool.label,
                    "graphs": pool.graphs,
                    "predicted_bytes": want,
                    "measured_bytes": pool.reserved_bytes,
                    "error": (want - pool.reserved_bytes) / pool.reserved_bytes,
                    "record_seconds": record_s,
                }
            )
        del run
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--presets", default=",".join(c[0] for c in CASES))
    args = parser.parse_args()
    wanted = set(args.presets.split(","))
    rows: list[dict[str, object]] = []
    print(f"{'preset':20} {'profile':15} {'policy':9} {'pool':18} {'pred MiB':>9} "
          f"{'meas MiB':>9} {'error':>7}")  # fmt: skip
    for preset, plan in CASES:
        if preset not in wanted:
            continue
        for behavior in BEHAVIORS:
            for row in rows_for(preset, plan, behavior):
                rows.append(row)
                print(
                    f"{preset:20} {behavior:15} {row['policy']:9} {row['pool']:18} "
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
