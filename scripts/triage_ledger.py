"""Rebuild the first-read ledger: every held-out set's verdicts as triage gave them at its one read.

    python scripts/triage_ledger.py [--out tests/triage/data/first-reads.jsonl] [--jobs 2]

Each held-out set of issue 29 was read once, by the rules of one commit, before any rule was
written from it (`known.triage_calibration.FIRST_READS` names the set and that commit). Every
later count on the set is in-sample: rules were written after reading its misses, and the rates
counted there overstate how a rule does on the next report (a stated load mismatch was right 17
times in 24 counted that way, 11 in 22 at the reads). This script checks out each read's commit
(`git archive`, nothing in the work tree is touched), triages the set as a ticket there, checks
that every verdict and confidence is the one the set's `.result.txt` recorded at the read (so
the commit is the right one), and writes one row per report: the set, the commit, the label,
the verdict, its tier, every evidence kind that named it and the knowledge base's vote.
`scripts/triage_eval.py LEDGER --fit` counts the calibration table from these rows.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eaglegraph.known.triage_calibration import FIRST_READS, LEDGER  # noqa: E402

# Runs inside the archived commit: triage every report of one set as a ticket, one JSON row each.
_WORKER = r"""
import json, sys
sys.path.insert(0, "scripts")
from triage_eval import as_ticket, kb_vote, load
from eaglegraph.triage.diagnose import triage_text
from pathlib import Path
for r in load(Path(sys.argv[1])):
    res = triage_text(as_ticket(r))
    print(json.dumps(dict(
        name=f"{str(r.get('repo', '?')).split('/')[-1]}#{r.get('number', '?')}",
        url=r.get("url"), label=r["category"], category=res.category,
        confidence=res.confidence, committed=res.committed, tier=res.tier,
        kinds=list(res.evidence_kinds), kind=res.evidence_kind,
        kb_vote=kb_vote(res.similar, r.get("url")))))
"""

# A verdict line of a `.result.txt`: ok|BAD, name, label, -> verdict, confidence.
_RESULT_LINE = re.compile(r"^(?:ok |BAD) (\S+)\s+(\S+)\s+-> (\S+)\s+([\d.]+)")


def recorded(result_file: Path) -> list[tuple[str, str, float]]:
    """(name, verdict, confidence) of each report as the read printed it."""
    out = []
    for line in result_file.read_text(encoding="utf-8").splitlines():
        m = _RESULT_LINE.match(line)
        if m:
            out.append((m.group(1), m.group(3), float(m.group(4))))
    return out


def read_at(data_file: str, commit: str) -> list[dict]:
    """Triage `data_file` as the code of `commit` did, in a throwaway copy of that commit."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit], capture_output=True, check=True
    ).stdout
    with tempfile.TemporaryDirectory(prefix="first-read-") as tmp:
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        done = subprocess.run(
            [sys.executable, "-c", _WORKER, str(ROOT / data_file)],
            cwd=tmp,
            env={"PYTHONPATH": tmp, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise SystemExit(f"{data_file} at {commit}: the read failed:\n{done.stderr[-2000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def check(rows: list[dict], data_file: str, commit: str) -> None:
    """Every row must be the verdict the set's result file recorded at its read."""
    result_file = ROOT / data_file.replace(".jsonl", ".result.txt")
    want = recorded(result_file)
    got = [(r["name"], r["category"], round(r["confidence"], 2)) for r in rows]
    if len(want) != len(got) or any(
        (wn, wc) != (gn, gc) or abs(wf - gf) > 0.005
        for (wn, wc, wf), (gn, gc, gf) in zip(want, got, strict=True)
    ):
        diff = [f"  {w} != {g}" for w, g in zip(want, got, strict=False) if w != g][:5]
        raise SystemExit(
            f"{data_file} at {commit} does not give what {result_file.name} recorded "
            f"({len(want)} lines there, {len(got)} here):\n" + "\n".join(diff)
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / LEDGER)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)

    def one(read: tuple[str, str]) -> list[dict]:
        data_file, commit = read
        rows = read_at(data_file, commit)
        check(rows, data_file, commit)
        print(f"{data_file} at {commit}: {len(rows)} verdicts as recorded", file=sys.stderr)
        return [{"set": Path(data_file).stem, "commit": commit, **r} for r in rows]

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        per_read = list(pool.map(one, FIRST_READS))
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for rows in per_read for r in rows)
    args.out.write_text(text, encoding="utf-8")
    print(f"{sum(map(len, per_read))} rows -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
