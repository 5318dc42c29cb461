"""Category accuracy of `triage` on labelled real reports (JSONL, crash-triage.md fields).

    python benchmarks/triage_accuracy.py FILE.jsonl [FILE2.jsonl ...] [--as auto|log|ticket|issue] [-v]

`--as log` feeds only `log_excerpt` (what `eaglegraph triage LOG` sees); `--as ticket` feeds the
report as a pasted GitHub issue (title line, then the log in a fence); `--as issue` puts the
title line above the text as it is (for reports whose text already holds its own fences, as in
tests/triage/data/). `auto` (default) picks `issue` for gathered reports (they carry a
`label_reason`) and `ticket` for the shared dev fixtures. Prints per-report results, accuracy per
file, a confusion table, and a reliability table: per stated (calibrated) confidence, how often
the verdict was right.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eaglegraph.triage.diagnose import triage_text

Row = tuple[dict, str, float]


def load(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def as_input(report: dict, mode: str) -> str:
    if mode == "auto":
        mode = "issue" if "label_reason" in report else "ticket"
    if mode == "log":
        return report["log_excerpt"]
    if mode == "issue":
        return f"{report['title']}\n\n{report['log_excerpt']}\n"
    return f"{report['title']}\n\n```\n{report['log_excerpt']}\n```\n"


def evaluate(reports: list[dict], mode: str = "auto") -> list[Row]:
    out = []
    for r in reports:
        res = triage_text(as_input(r, mode))
        out.append((r, res.category, float(res.confidence)))
    return out


def accuracy(rows: list[Row]) -> float:
    return sum(1 for r, c, _ in rows if c == r["category"]) / max(1, len(rows))


def per_category(rows: list[Row]) -> dict[str, tuple[int, int]]:
    """label -> (right, reports)."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r, c, _ in rows:
        out[r["category"]][1] += 1
        out[r["category"]][0] += c == r["category"]
    return {k: (v[0], v[1]) for k, v in sorted(out.items())}


def confusion_table(rows: list[Row]) -> str:
    confusion: dict[str, Counter] = defaultdict(Counter)
    for r, c, _ in rows:
        confusion[r["category"]][c] += 1
    cats = sorted({r["category"] for r, _, _ in rows} | {c for _, c, _ in rows})
    short = {c: c.split("/")[0][:6] for c in cats}
    lines = ["confusion (rows: label, cols: verdict)"]
    lines.append(" " * 28 + " ".join(f"{short[c]:>6}" for c in cats) + "   acc")
    for lab in cats:
        if lab not in confusion:
            continue
        n = sum(confusion[lab].values())
        cells = " ".join(f"{confusion[lab][c] or '.':>6}" for c in cats)
        lines.append(f"{lab:<28}{cells}  {100 * confusion[lab][lab] / n:4.0f}%")
    return "\n".join(lines)


def reliability(rows: list[Row]) -> list[tuple[float, int, int]]:
    """(stated confidence, verdicts stating it, verdicts right), one row per distinct value."""
    by: dict[float, list[int]] = defaultdict(lambda: [0, 0])
    for r, c, conf in rows:
        by[conf][0] += 1
        by[conf][1] += c == r["category"]
    return [(p, n, right) for p, (n, right) in sorted(by.items())]


def reliability_table(rows: list[Row]) -> str:
    lines = ["calibration (stated confidence: verdicts, right)"]
    for p, n, right in reliability(rows):
        lines.append(f"  says {p:.2f}: n={n:3d}  right {right:3d} = {100 * right / n:3.0f}%")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--as", dest="mode", choices=["auto", "log", "ticket", "issue"], default="auto")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    rows: list[Row] = []
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
    print(
        f"all: {sum(1 for r, c, _ in rows if c == r['category'])}/{len(rows)} = "
        f"{100 * accuracy(rows):.0f}%\n"
    )
    print(confusion_table(rows))
    print()
    print(reliability_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
