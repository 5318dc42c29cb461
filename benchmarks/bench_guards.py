"""GPU benchmark: guarded replay against plain replay of the same graphs.

Two rigs on the same pair and plan, one with guards compiled into every index-reading kernel,
one without; both capture FULL graphs and replay the same padded step. Reported per phase
(target FULL graph, draft-prefill FULL graph, one draft-decode FULL graph) and for the whole
step. Target: guards cost under 30 %.

Run on the GPU machine: PYTHONPATH=. python3 benchmarks/bench_guards.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.probes.spec import rig_config
from eaglegraph.rig.driver import Session
from eaglegraph.rig.step import Rig


def timed(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeat):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / repeat * 1e3  # µs


def measure(preset: str, guard: bool, batch: int, repeat: int) -> dict[str, float]:
    pair = load_pair(materialize(preset))
    random_weights = not pair.target.weights.weight_bytes  # type: ignore[union-attr]
    plan = {"max_num_seqs": 16, "num_speculative_tokens": 3, "mode": "FULL_AND_PIECEWISE"}
    rig = Rig(
        pair,
        rig_config(
            pair,
            plan,
            device="cuda",
            guard=guard,
            random_weights=random_weights,
            max_model_len=1024,
        ),
    )
    rig.capture()
    session = Session(rig)
    for rid in range(batch):
        session.admit(rid, [5 + rid, 6, 7, 8, 9], max_new_tokens=400)
    session.step()
    session.step()
    out: dict[str, float] = {}
    for phase in ("target", "draft_prefill", "draft_decode"):
        runner = rig.runners[phase]
        full = sorted(
            (d for d in runner.graphs if d.mode.name == "FULL"), key=lambda d: d.num_tokens
        )
        desc = next(d for d in full if (d.num_reqs or 0) >= batch)
        graph = runner.graphs[desc].full
        out[phase] = timed(graph.replay, repeat)
    out["step"] = timed(session.step, max(5, repeat // 20))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--preset", default="tiny-llama-eagle3")
    parser.add_argument("--batch", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    plain = measure(args.preset, False, args.batch, args.repeat)
    guarded = measure(args.preset, True, args.batch, args.repeat)
    print(f"guarded vs plain replay, {args.preset}, batch {args.batch} (padded FULL graphs):")
    for key in plain:
        p, g = plain[key], guarded[key]
        print(
            f"  {key:<14} plain {p:9.1f} µs  guarded {g:9.1f} µs  overhead {100 * (g - p) / p:+6.1f}%"
        )


if __name__ == "__main__":
    main()
