"""Mutation benchmark: plant each bug of `benchmarks/mutants.py` in the rig, one at a time, and
measure which of the probe's signals find it.

Signals: guards (stale/out-of-bounds reads logged by kernels), the sentinel differential and
NaN checks (outputs that change with the poison), KV canaries (writes into blocks no request
owns or the null block), metadata invariants, and the reference differential (the dense
plain-torch reference, step by step). A mutant counts as found when any finding appears, and
as located when a finding names its phase and one of its buffers. The unmutated rig is probed
first under each backend: it must give no finding at all.

Usage (CPU, about 30 s per mutant on an idle core):
    PYTHONPATH=. python3 benchmarks/bench_mutants.py [--only NAME ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.mutants import MUTANTS, Mutant, planted
from eaglegraph.probes.probing import probe
from eaglegraph.probes.spec import resolve_run
from eaglegraph.results.findings import Finding

SIGNALS = {
    "stale-read": "guards/poison",
    "oob-read": "guards/poison",
    "nan-read": "guards/poison",
    "kv-canary": "canaries",
    "invariant": "invariants",
    "reference-divergence": "reference",
    "crash": "crash",
}


def probe_once(backend: str, mode: str, batch: int, device: str = "cpu") -> Any:
    spec = resolve_run(
        "tiny-llama-eagle3",
        plan={"attention_backend": backend, "max_num_seqs": 4, "num_speculative_tokens": 3},
        device=device,
        max_model_len=256,
    )
    return probe(spec, modes=[mode], batches=[batch], isolate=False, timeout=600)


def located(mutant: Mutant, findings: list[Finding]) -> bool:
    return any(f.buffer in mutant.buffers and f.phase is not None for f in findings)


def evaluate(mutant: Mutant, mode: str, batch: int, device: str = "cpu") -> dict[str, Any]:
    t0 = time.perf_counter()
    with planted(mutant):
        run = probe_once(mutant.backend, mode, batch, device)
    signals = sorted({SIGNALS.get(f.kind or "", f.kind or "?") for f in run.findings})
    costs: dict[str, float] = {}
    for case in run.cases:
        for name, s in case.signal_s.items():
            costs[name] = costs.get(name, 0.0) + s
    return {
        "mutant": mutant.name,
        "backend": mutant.backend,
        "found": bool(run.findings),
        "located": located(mutant, run.findings),
        "signals": signals,
        "findings": [(f.kind, f.phase, f.buffer, f.kernel) for f in run.findings][:8],
        "seconds": round(time.perf_counter() - t0, 1),
        "signal_s": {k: round(v, 2) for k, v in costs.items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--mode", default="FULL_AND_PIECEWISE")
    ap.add_argument("--batch", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json", default=None)
    ap.add_argument("--skip-baseline", action="store_true")
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    if not args.skip_baseline:
        for backend in sorted({m.backend for m in MUTANTS}):
            run = probe_once(backend, args.mode, args.batch, args.device)
            print(f"baseline {backend}: {len(run.findings)} finding(s)", flush=True)
            if run.findings:
                for f in run.findings:
                    print(f"  FALSE POSITIVE {f.id}: {f.message}")
    picked = [m for m in MUTANTS if not args.only or m.name in args.only]
    print(f"{'mutant':30} {'found':6} {'located':8} {'s':>6}  signals")
    for m in picked:
        row = evaluate(m, args.mode, args.batch, args.device)
        rows.append(row)
        print(
            f"{m.name:30} {'yes' if row['found'] else 'NO':6} "
            f"{'yes' if row['located'] else 'no':8} {row['seconds']:6.1f}  "
            f"{', '.join(row['signals']) or '—'}",
            flush=True,
        )
    n = len(rows)
    share = {
        "probe": sum(r["found"] for r in rows) / n if n else 0.0,
        "located": sum(r["located"] for r in rows) / n if n else 0.0,
        "reference alone": sum("reference" in r["signals"] for r in rows) / n if n else 0.0,
        "invariants alone": sum("invariants" in r["signals"] for r in rows) / n if n else 0.0,
        "guards/poison alone": sum("guards/poison" in r["signals"] for r in rows) / n if n else 0.0,
    }
    cost: dict[str, float] = {}
    for r in rows:
        for k, v in r["signal_s"].items():
            cost[k] = cost.get(k, 0.0) + v / n
    print("share found: " + ", ".join(f"{k} {v:.0%}" for k, v in share.items()))
    print("mean cost per case (s): " + ", ".join(f"{k} {v:.2f}" for k, v in cost.items()))
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "share": share, "cost": cost}))


if __name__ == "__main__":
    main()
