"""Category accuracy of `triage` on labelled real reports (JSONL, crash-triage.md fields).

    python benchmarks/triage_accuracy.py FILE.jsonl [FILE2.jsonl ...] [--as log|ticket] [-v]

`--as log` feeds only `log_excerpt` (what `eaglegraph triage LOG` sees); `--as ticket` feeds the
report as a pasted GitHub issue (title line, then the log in a fence); `--as issue` puts the
title line above the text as it is (for reports whose text already holds its own fences). Prints per-report
results, accuracy per file, a confusion table and a calibration table.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eaglegraph.triage.diagnose import triage_text


def load(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def as_input(report: dict, mode: str) -> str:
    if mode == "log":
        return report["log_excerpt"]
    if mode == "issue":
        return f"{report['title']}\n\n{report['log_excerpt']}\n"
    return f"{report['title']}\n\n```\n{report['log_excerpt']}\n```\n"


def evaluate(reports: list[dict], mode: str) -> list[tuple[dict, str, float]]:
    out = []
    for r in reports:
        res = triage_text(as_input(r, mode))
        out.append((r, res.category, float(res.confidence)))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--as", dest="mode", choices=["log", "ticket", "issue"], default="log")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    rows: list[tuple[dict, str, float]] = []
    for f in args.files:
        res = evaluate(load(f), args.mode)
        ok = sum(1 for r, c, _ in res if c == r["category"])
        print(f"{f.name}: {ok}/{len(res)} = {100 * ok / len(res):.0f}% ({args.mode})")
        if args.verbose:
            for r, c, conf in res:
                mark = "ok " if c == r["category"] else "BAD"
                name = f"{r['repo'].split('/')[-1]}#{r['number']}"
                print(f"  {mark} {name:<14} {r['category']:<27} -> {c:<27} {conf:.2f}")
        rows += res
    ok = sum(1 for r, c, _ in rows if c == r["category"])
    print(f"all: {ok}/{len(rows)} = {100 * ok / len(rows):.0f}%")
    confusion: dict[str, Counter] = defaultdict(Counter)
    for r, c, _ in rows:
        confusion[r["category"]][c] += 1
    print("\nconfusion (rows: label, cols: verdict)")
    cats = sorted({r["category"] for r, _, _ in rows} | {c for _, c, _ in rows})
    short = {c: c.split("/")[0][:6] for c in cats}
    print(" " * 28 + " ".join(f"{short[c]:>6}" for c in cats) + "   acc")
    for lab in cats:
        if lab not in confusion:
            continue
        n = sum(confusion[lab].values())
        cells = " ".join(f"{confusion[lab][c] or '.':>6}" for c in cats)
        print(f"{lab:<28}{cells}  {100 * confusion[lab][lab] / n:4.0f}%")
    print("\ncalibration (confidence bin: n, accuracy)")
    bins = [(0.0, 0.35), (0.35, 0.7), (0.7, 1.01)]
    for lo, hi in bins:
        sel = [(r, c) for r, c, conf in rows if lo <= conf < hi]
        if sel:
            acc = sum(1 for r, c in sel if c == r["category"]) / len(sel)
            print(f"  [{lo:.2f}, {min(hi, 1):.2f}): n={len(sel):3d}  accuracy {100 * acc:.0f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
