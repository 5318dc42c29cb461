"""Mutation benchmark: plant each bug of `benchmarks/mutants.py` in the rig, one at a time, and
measure which of the probe's signals find it.

Signals: guards (stale/out-of-bounds reads logged by kernels), the sentinel differential and
NaN checks (outputs that change with the poison), KV canaries (writes into blocks no request
owns or the null block), metadata invariants, and the reference differential (the dense
plain-torch reference, step by step). Each mutant is probed under each mode on its own; in a
mode it counts as found when any finding appears, as located when a finding names one of its
buffers in the phase it breaks (and a kernel), and as equivalent where it says it cannot change what that
mode runs (a mutant that counts its firings must then not have fired). A mutant is found
(located) when some mode finds (locates) it, and missed only when a mode it is not equivalent
under finds nothing. The unmutated rig is probed first under each backend: no finding at all.

`--equivalent` probes each mutant only under the modes it claims to be equivalent in (under
the default live schedules too): none may produce a finding.

Usage (CPU, about 30 s per mutant on an idle core; `--jobs N` runs N mutants at once, each
in its own process):
    PYTHONPATH=. python3 benchmarks/bench_mutants.py [--only NAME ...] [--jobs N] [--json OUT]
    PYTHONPATH=. python3 benchmarks/bench_mutants.py --equivalent [--only NAME ...]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from unittest import mock

from benchmarks.mutants import ACTIVITY, MUTANTS, Mutant, by_name, planted
from eaglegraph.probes.cases import BuiltRig, schedule_limits
from eaglegraph.probes.probing import probe
from eaglegraph.probes.schedules import default_schedules
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


def probe_once(
    backend: str,
    mode: str,
    batch: int,
    device: str = "cpu",
    preset: str = "tiny-llama-eagle3",
    **plan: Any,
) -> Any:
    spec = resolve_run(
        preset,
        plan={"attention_backend": backend, "max_num_seqs": 4, "num_speculative_tokens": 3, **plan},
        device=device,
        max_model_len=256,
    )
    o = spec.options  # the padded batch and the default live schedule (issue 27)
    lim = schedule_limits(spec)
    live = default_schedules(
        o.max_num_seqs, o.num_speculative_tokens, lim.block_size, lim.max_model_len
    )
    return probe(
        spec, modes=mode.split(","), batches=[batch], isolate=False, timeout=600, schedules=live
    )


def located(mutant: Mutant, findings: list[Finding]) -> bool:
    """A finding names one of the mutant's buffers in the phase it breaks, and a kernel."""
    return any(
        f.buffer in mutant.buffers and f.phase == mutant.phase and f.kernel is not None
        for f in findings
    )


def equivalent_named(name: str, batch: int, device: str) -> dict[str, list[str]]:
    """A mutant's findings under each mode it claims to be equivalent in (none expected)."""
    mutant = by_name(name)
    out: dict[str, list[str]] = {}
    for mode in mutant.equivalent:
        with planted(mutant):
            run = probe_once(mutant.backend, mode, batch, device, mutant.preset, **mutant.plan)
        out[mode] = [f"{f.id}: {f.message}" for f in run.findings]
        out[mode] += [f"case {c.name}: {c.error}" for c in run.cases if c.status != "ok"]
    return out


def _equivalents(names: list[str], args: argparse.Namespace) -> None:
    with ProcessPoolExecutor(
        max_workers=max(1, args.jobs), mp_context=multiprocessing.get_context("spawn")
    ) as pool:
        futures = [pool.submit(equivalent_named, n, args.batch, args.device) for n in names]
        bad = 0
        for name, future in zip(names, futures, strict=True):
            for mode, found in future.result().items():
                bad += bool(found)
                print(f"{name:36} {mode:20} {'FINDINGS' if found else 'no finding'}")
                for line in found[:4]:
                    print(f"  {line}")
    print(f"{bad} of the equivalent (mutant, mode) pairs produced a finding")


def evaluate_named(name: str, mode: str, batch: int, device: str) -> dict[str, Any]:
    """`evaluate` by mutant name (what a worker process of `--jobs` is handed)."""
    return evaluate(by_name(name), mode, batch, device)


def baseline(backend: str, mode: str, batch: int, device: str) -> list[str]:
    """The unmutated rig's findings (there must be none)."""
    run = probe_once(backend, mode, batch, device)
    return [f"{f.id}: {f.message}" for f in run.findings]


def _counting_from_capture() -> Any:
    """Reset the mutants' firing count as each case starts (after the rig's captures)."""
    fresh = BuiltRig.fresh

    def patched(self: BuiltRig) -> Any:
        ACTIVITY["fired"] = 0
        return fresh(self)

    return mock.patch.object(BuiltRig, "fresh", patched)


def evaluate(mutant: Mutant, modes: str, batch: int, device: str = "cpu") -> dict[str, Any]:
    t0 = time.perf_counter()
    per_mode: dict[str, dict[str, Any]] = {}
    findings: list[Finding] = []
    costs: dict[str, float] = {}
    for mode in modes.split(","):
        with planted(mutant), _counting_from_capture():
            run = probe_once(mutant.backend, mode, batch, device, mutant.preset, **mutant.plan)
            fired = ACTIVITY["fired"] if mutant.tracked else None
        findings += run.findings
        for case in run.cases:
            for name, s in case.signal_s.items():
                costs[name] = costs.get(name, 0.0) + s
        claim = mutant.equivalent.get(mode)
        per_mode[mode] = {
            "found": bool(run.findings),
            "located": located(mutant, run.findings),
            # claimed equivalent, and (where counted) never fired in the probed schedule
            "equivalent": claim is not None and not fired,
            "fired": fired,
            "why": claim,
        }
    missed = [m for m, r in per_mode.items() if not r["found"] and not r["equivalent"]]
    signals = sorted({SIGNALS.get(f.kind or "", f.kind or "?") for f in findings})
    return {
        "mutant": mutant.name,
        "backend": mutant.backend,
        "found": any(r["found"] for r in per_mode.values()) and not missed,
        "located": any(r["located"] for r in per_mode.values()) and not missed,
        "modes": per_mode,
        "missed_in": missed,
        "signals": signals,
        "findings": [(f.kind, f.mode, f.phase, f.buffer, f.kernel) for f in findings][:8],
        "seconds": round(time.perf_counter() - t0, 1),
        "signal_s": {k: round(v, 2) for k, v in costs.items()},
    }


def _cell(row: dict[str, Any]) -> str:
    if row["located"]:
        return "located"
    if row["found"]:
        return "found"
    return "equivalent" if row["equivalent"] else "MISSED"


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--only", nargs="*", default=None)
    # eager and graphs: a bug of unpadded builds (a stale CSR offset kept from a larger
    # build) is equivalent when FULL graphs pad every build to the same request count
    ap.add_argument("--mode", default="NONE,FULL_AND_PIECEWISE", help="comma-separated modes")
    ap.add_argument("--batch", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--jobs", type=int, default=1, help="mutants probed at once (processes)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--skip-baseline", action="store_true")
    ap.add_argument(
        "--equivalent",
        action="store_true",
        help="probe each mutant only in the modes it claims equivalent",
    )
    args = ap.parse_args()
    picked = [m for m in MUTANTS if not args.only or m.name in args.only]
    if args.equivalent:
        _equivalents([m.name for m in picked if m.equivalent], args)
        return
    backends = [] if args.skip_baseline else sorted({m.backend for m in MUTANTS})
    common = (args.mode, args.batch, args.device)
    t0 = time.perf_counter()
    with ProcessPoolExecutor(
        max_workers=max(1, args.jobs), mp_context=multiprocessing.get_context("spawn")
    ) as pool:
        bases = [pool.submit(baseline, b, *common) for b in backends]
        futures = [pool.submit(evaluate_named, m.name, *common) for m in picked]
        for backend, base in zip(backends, bases, strict=True):
            found = base.result()
            print(f"baseline {backend}: {len(found)} finding(s)", flush=True)
            for line in found:
                print(f"  FALSE POSITIVE {line}")
        modes = args.mode.split(",")
        print(f"{'mutant':36} {'found':6} {'located':8} {'s':>6}  " + "  ".join(modes))
        rows: list[dict[str, Any]] = []
        for m, future in zip(picked, futures, strict=True):
            row = future.result()
            rows.append(row)
            print(
                f"{m.name:36} {'yes' if row['found'] else 'NO':6} "
                f"{'yes' if row['located'] else 'no':8} {row['seconds']:6.1f}  "
                + "  ".join(f"{mode}: {_cell(row['modes'][mode])}" for mode in modes)
                + f"  [{', '.join(row['signals']) or '—'}]",
                flush=True,
            )
            for mode, r in row["modes"].items():
                if r["equivalent"]:
                    print(f"  equivalent under {mode}: {r['why']}")
                elif r["why"] and r["fired"]:
                    print(f"  NOT equivalent under {mode}: fired {r['fired']} time(s)")
    print(f"wall {time.perf_counter() - t0:.0f} s with {args.jobs} job(s)")
    n = len(rows)
    print(
        f"found {sum(r['found'] for r in rows)}/{n}, located {sum(r['located'] for r in rows)}/{n}"
    )
    held = [r for r in rows if by_name(r["mutant"]).held_out]
    if held:  # written before the probe was tuned on them: reported apart
        print(
            f"held out: found {sum(r['found'] for r in held)}/{len(held)}, "
            f"located {sum(r['located'] for r in held)}/{len(held)}"
        )
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
