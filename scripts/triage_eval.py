"""Acceptance figures of `eaglegraph triage` on labelled reports (JSONL, crash-triage.md fields).

    python scripts/triage_eval.py FILE.jsonl [FILE2.jsonl ...] [--part tune|calibration]
                                  [--run-commands] [--fit] [--cv] [--json] [-v]
    python scripts/triage_eval.py tests/triage/data/first-reads.jsonl --fit | --cv

Each report is triaged twice: its `log_excerpt` alone (what `eaglegraph triage LOG` sees) and as a
ticket (the title line above the text; text without its own fences is fenced as the log). The
figures: category accuracy log-only and as a ticket; how many ticket verdicts commit (confidence
>= 0.6, evidence that names the category) and how often those are right; the named fixes (a fix
stated to apply, not an "if you run < X" one) right or plausible against the report's
`fix_ref`; the confusion table and the calibration table (stated confidence bins -> accuracy);
with `--run-commands`, every suggested `eaglegraph` command run as printed (the leading
`eaglegraph` is this interpreter's `-m eaglegraph`) and its exit code.

`--fit` prints what `eaglegraph.known.triage_calibration` holds, counted on the given files: for
each evidence kind (a rule naming the verdict's class, or the nearest known reports all filed
under it), how often the verdicts it named were right; the same per tier; and how often the
knowledge base's nearest reports (the report's own URL left out) agreed with the verdict and
were right then. The table triage ships is counted on the first-read ledger
(`known.triage_calibration.LEDGER`, written by `scripts/triage_ledger.py`): given that file,
its rows are the verdicts each held-out set's one read gave (ticket verdicts only; nothing is
triaged again); given report files, today's rules triage them (in-sample on any set rules
were written from).

`--cv` leaves each given file out in turn (each held-out set's read, given the ledger): the
kinds' counts fitted on the others, it counts on the one left out how many verdicts commit, and
how many of those are right, under the gate triage used before (a kind seen on MIN_SUPPORT
reports) and under each lower bound of CV_BOUNDS for the Wilson interval gate;
`known.triage_calibration` quotes the table for its bound.

`--part` keeps one part of the dev/tune data: a report belongs to `calibration` when the SHA-256
of its URL is 0 mod 3, else to `tune`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shlex
import subprocess
import sys
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eaglegraph.known.triage_calibration import COMMIT_LOWER, KB_VOTERS, MIN_SUPPORT, KindRate
from eaglegraph.known.triage_commit import COMMIT
from eaglegraph.results.similar import SimilarReport
from eaglegraph.results.triage import TriageResult
from eaglegraph.triage.commit import best_kind
from eaglegraph.triage.diagnose import triage_text

PARTS = ("tune", "calibration")
# The lower bounds --cv compares (`known.triage_calibration.COMMIT_LOWER` is one of them).
CV_BOUNDS = (0.0, 0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8)
BINS = (0.3, 0.5, 0.6, 0.8, 1.01)
COMMAND_TIMEOUT_S = 300.0


def load(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def part_of(report: dict) -> str:
    """'calibration' for a third of the reports (by the hash of their URL), else 'tune'."""
    key = str(report.get("url") or report.get("source") or report.get("title", ""))
    return "calibration" if int(hashlib.sha256(key.encode()).hexdigest(), 16) % 3 == 0 else "tune"


def as_ticket(report: dict) -> str:
    text = report["log_excerpt"]
    if "```" not in text:
        text = f"```\n{text}\n```"
    return f"{report['title']}\n\n{text}\n"


def _numbers(text: str) -> set[str]:
    return set(re.findall(r"#(\d{3,6})\b", text or ""))


def _engine(report: dict) -> str | None:
    repo = str(report.get("repo", "")).lower()
    for engine in ("vllm", "sglang"):
        if engine in repo:
            return engine
    return None


@dataclass
class Graded:
    """One report's verdicts, and what they are worth against its labels."""

    name: str
    label: str
    log_category: str
    log_committed: bool
    category: str
    confidence: float
    committed: bool
    tier: str
    fixes: list[tuple[str, str]] = field(default_factory=list)  # (ref, right|plausible|wrong)
    commands: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # the rules naming the verdict
    kind: str | None = None  # the one its confidence rests on
    kb_vote: str | None = None  # the nearest known reports' category, own URL left out


def ledger(path: Path) -> dict[str, list[Graded]] | None:
    """The first-read ledger (`scripts/triage_ledger.py`) as graded rows by held-out set: each
    report's verdict as the rules of that set's one read gave it. The ledger holds the ticket
    verdict only, so the log-only fields repeat it. None when `path` holds reports (JSONL with
    `log_excerpt`) rather than ledger rows."""
    rows = load(path)
    if not rows or "commit" not in rows[0] or "log_excerpt" in rows[0]:
        return None
    out: dict[str, list[Graded]] = defaultdict(list)
    for r in rows:
        out[r["set"]].append(
            Graded(
                name=r["name"],
                label=r["label"],
                log_category=r["category"],
                log_committed=r["committed"],
                category=r["category"],
                confidence=r["confidence"],
                committed=r["committed"],
                tier=r["tier"],
                kinds=list(r["kinds"]),
                kind=r["kind"],
                kb_vote=r["kb_vote"],
            )
        )
    return dict(out)


def kb_vote(similar: list[SimilarReport], url: str | None) -> str | None:
    """The category the KB_VOTERS nearest known reports weigh most (score-weighted)."""
    votes: dict[str, float] = defaultdict(float)
    for s in [s for s in similar if s.url != url][:KB_VOTERS]:
        votes[s.category] += s.score
    return max(votes, key=lambda c: votes[c]) if votes else None


def grade_fix(ref: str, report: dict, result: TriageResult) -> str:
    """'right' when the report's fix_ref or root cause names the change, 'plausible' when the
    report names no fix and the verdict (engine, class) is the report's, else 'wrong'."""
    number = ref.rsplit("#", 1)[-1]
    named = _numbers(f"{report.get('fix_ref') or ''} {report.get('root_cause') or ''}")
    if number in named:
        return "right"
    same = result.category == report["category"] and result.framework == _engine(report)
    return "plausible" if same and not report.get("fix_ref") else "wrong"


def grade(report: dict) -> Graded:
    log_result = triage_text(report["log_excerpt"])
    result = triage_text(as_ticket(report))
    named = [f for f in result.fixes if f.applies == "yes"]
    return Graded(
        name=f"{str(report.get('repo', '?')).split('/')[-1]}#{report.get('number', '?')}",
        label=report["category"],
        log_category=log_result.category,
        log_committed=log_result.committed,
        category=result.category,
        confidence=result.confidence,
        committed=result.committed,
        tier=result.tier,
        fixes=[(f.ref, grade_fix(f.ref, report, result)) for f in named],
        commands=[c for c in (result.reproduce, *result.reproduce_also) if c],
        kinds=list(result.evidence_kinds),
        kind=result.evidence_kind,
        kb_vote=kb_vote(result.similar, report.get("url")),
    )


def run_command(command: str) -> int:
    argv = shlex.split(command)
    if argv[:1] == ["eaglegraph"]:
        argv = [sys.executable, "-m", "eaglegraph", *argv[1:]]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=COMMAND_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return 124
    return done.returncode


def _share(right: int, n: int) -> float | None:
    return round(right / n, 3) if n else None


def figures(rows: list[Graded], exits: dict[str, int] | None = None) -> dict:
    n = len(rows)
    committed = [g for g in rows if g.committed and g.confidence >= COMMIT]
    correct = [g for g in rows if g.category == g.label]
    log_committed = [g for g in rows if g.log_committed]
    fixes = Counter(v for g in rows for _, v in g.fixes)
    named = sum(fixes.values())
    confusion: dict[str, Counter] = defaultdict(Counter)
    for g in rows:
        confusion[g.label][g.category] += 1
    calibration = []
    low = 0.0
    for high in BINS:
        inside = [g for g in rows if low <= g.confidence < high]
        right = sum(g.category == g.label for g in inside)
        calibration.append({"from": low, "to": min(high, 1.0), "n": len(inside), "right": right})
        low = high
    out: dict[str, Any] = {
        "reports": n,
        "accuracy_log": _share(sum(g.log_category == g.label for g in rows), n),
        "accuracy_ticket": _share(sum(g.category == g.label for g in rows), n),
        "committed_log": len(log_committed),
        "committed_log_right": _share(
            sum(g.log_category == g.label for g in log_committed), len(log_committed)
        ),
        "committed": len(committed),
        "committed_right": _share(sum(g.category == g.label for g in committed), len(committed)),
        "named_fixes": named,
        "named_fixes_right": fixes["right"],
        "named_fixes_plausible": fixes["plausible"],
        "named_fixes_right_or_plausible": _share(fixes["right"] + fixes["plausible"], named),
        "confusion": {k: dict(v) for k, v in sorted(confusion.items())},
        "calibration": calibration,
        "tiers": {
            t: {"n": sum(g.tier == t for g in rows), "right": sum(g.tier == t for g in correct)}
            for t in sorted({g.tier for g in rows})
        },
    }
    if exits is not None:
        out["commands"] = len(exits)
        out["commands_exit"] = dict(sorted(Counter(exits.values()).items()))
        out["commands_failing"] = sorted(c for c, rc in exits.items() if rc not in (0, 1))
    return out


def fit(rows: list[Graded]) -> dict:
    """What known.triage_calibration holds, counted on `rows` (see the module's docstring)."""
    kinds: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    tiers: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for g in rows:
        right = int(g.category == g.label)
        tier = "named" if g.tier.startswith("named") else g.tier
        tiers[tier][0] += right
        tiers[tier][1] += 1
        for k in g.kinds:
            kinds[k][0] += right
            kinds[k][1] += 1
    agree = [g for g in rows if g.kb_vote is not None and g.kb_vote == g.category]
    return {
        "reports": len(rows),
        "kinds": {k: v for k, v in sorted(kinds.items(), key=lambda kv: (-kv[1][1], kv[0]))},
        "tiers": dict(sorted(tiers.items())),
        "kb_agreement": [sum(g.category == g.label for g in agree), len(agree)],
    }


def _commits(rows: list[Graded], table: dict[str, KindRate], bound: float | None) -> list[bool]:
    """Which rows commit when the kinds' counts are `table`: under the interval gate at `bound`,
    or (bound None) under the gate it replaced (seen on MIN_SUPPORT reports, rate >= COMMIT)."""
    out = []
    for g in rows:
        if bound is None:
            seen = [table[k] for k in g.kinds if k in table and table[k].n >= MIN_SUPPORT]
            kind = max(seen, key=lambda k: (k.rate, k.n), default=None)
        else:
            kind = best_kind(g.kinds, table, bound)
        out.append(kind is not None and kind.rate >= COMMIT)
    return out


def cross_validate(sources: dict[str, list[Graded]]) -> dict:
    """Leave one source out: fit the kinds' counts on the other sources, count on the one left
    out how many verdicts each gate commits and how many of those are right."""
    out: dict[str, Any] = {"bounds": {}}
    gates: list[float | None] = [None, *CV_BOUNDS]
    for bound in gates:
        per: dict[str, list[int]] = {}
        for name, rows in sources.items():
            rest = [g for other, rs in sources.items() if other != name for g in rs]
            table = {k: KindRate(k, r, n) for k, (r, n) in fit(rest)["kinds"].items()}
            done = _commits(rows, table, bound)
            committed = [g for g, c in zip(rows, done, strict=True) if c]
            per[name] = [sum(g.category == g.label for g in committed), len(committed)]
        right = sum(r for r, _ in per.values())
        n = sum(n for _, n in per.values())
        key = "support>=3" if bound is None else f"{bound:.2f}"
        out["bounds"][key] = {"sources": per, "right": right, "committed": n}
    out["chosen"] = f"{COMMIT_LOWER:.2f}"
    return out


def render_cv(cv: dict) -> str:
    names = list(next(iter(cv["bounds"].values()))["sources"])
    lines = [
        "leave one source out: committed right/n on the source left out",
        "gate        " + " ".join(f"{Path(n).stem[:12]:>12}" for n in names) + "   all  prec",
    ]
    for key, row in cv["bounds"].items():
        cells = " ".join(f"{f'{r}/{n}':>12}" for r, n in row["sources"].values())
        prec = f"{100 * row['right'] / row['committed']:.0f}%" if row["committed"] else "-"
        mark = " <" if key == cv["chosen"] else ""
        label = key if key.startswith("support") else f"lower>={key}"
        lines.append(f"{label:<12}{cells} {row['right']:>3}/{row['committed']:<3} {prec:>4}{mark}")
    return "\n".join(lines)


def render_fit(f: dict) -> str:
    lines = [f"fitted on {f['reports']} reports: evidence kind  right/n"]
    lines += [f"  {k:<34} {r}/{n}" for k, (r, n) in f["kinds"].items()]
    lines += ["tiers"] + [f"  {t:<34} {r}/{n}" for t, (r, n) in f["tiers"].items()]
    r, n = f["kb_agreement"]
    lines.append(f"knowledge base vote agrees with the verdict: {n}, right {r}")
    return "\n".join(lines)


def _short(category: str) -> str:
    return category.split("/")[0][:6]


def render(fig: dict) -> str:
    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{100 * x:.0f}%"

    lines = [
        f"reports {fig['reports']}: accuracy log-only {pct(fig['accuracy_log'])}, "
        f"as a ticket {pct(fig['accuracy_ticket'])}",
        f"committed at >= {COMMIT}: log-only {fig['committed_log']}, right "
        f"{pct(fig['committed_log_right'])}; as a ticket {fig['committed']}, right "
        f"{pct(fig['committed_right'])}",
        f"named fixes {fig['named_fixes']}: right {fig['named_fixes_right']}, plausible "
        f"{fig['named_fixes_plausible']} ({pct(fig['named_fixes_right_or_plausible'])})",
        "",
        "confusion (rows: label, columns: verdict as a ticket)",
    ]
    cats = sorted(set(fig["confusion"]) | {c for v in fig["confusion"].values() for c in v})
    lines.append(" " * 22 + " ".join(f"{_short(c):>6}" for c in cats))
    for label, row in fig["confusion"].items():
        cells = " ".join(f"{row.get(c, 0) or '.':>6}" for c in cats)
        lines.append(f"{label[:21]:<22}{cells}")
    lines += ["", "calibration (stated confidence -> accuracy)"]
    for b in fig["calibration"]:
        acc = f"{100 * b['right'] / b['n']:.0f}%" if b["n"] else "-"
        lines.append(f"  [{b['from']:.2f}, {b['to']:.2f}): n={b['n']:3d}  right {acc}")
    lines += ["", "tiers"]
    for t, c in fig["tiers"].items():
        lines.append(f"  {t:<11} right {c['right']:3d} of {c['n']:3d}")
    if "commands" in fig:
        lines += [
            "",
            f"commands {fig['commands']}: exit codes {fig['commands_exit']}",
            *(f"  FAILS: {c}" for c in fig["commands_failing"]),
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--part", choices=PARTS, help="keep one part of the dev/tune split")
    ap.add_argument("--run-commands", action="store_true", help="run every suggested command")
    ap.add_argument("--jobs", type=int, default=1, help="commands run at once (--run-commands)")
    ap.add_argument("--fit", action="store_true", help="count known.triage_calibration's rows")
    ap.add_argument(
        "--cv", action="store_true", help="leave one file out: commits under each gate's bound"
    )
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per report")
    args = ap.parse_args(argv)
    for f in args.files:
        if not f.is_file():
            ap.error(f"no such file: {f}")
    reads = {f: ledger(f) for f in args.files}
    if any(reads.values()) and (args.part or not (args.fit or args.cv)):
        ap.error("a first-read ledger is read with --fit or --cv only")
    if args.cv:
        sources: dict[str, list[Graded]] = {}
        for f in args.files:
            sources.update(reads[f] or {str(f): [grade(r) for r in load(f)]})
        cv = cross_validate(sources)
        print(json.dumps(cv, indent=2) if args.json else render_cv(cv))
        return 0
    rows = [g for f in args.files if reads[f] for rs in (reads[f] or {}).values() for g in rs]
    reports = [r for f in args.files if not reads[f] for r in load(f)]
    if args.part:
        reports = [r for r in reports if part_of(r) == args.part]
    rows += [grade(r) for r in reports]
    if args.fit:
        counted = fit(rows)
        print(json.dumps(counted, indent=2) if args.json else render_fit(counted))
        return 0
    exits = None
    if args.run_commands:
        commands = list(dict.fromkeys(c for g in rows for c in g.commands))
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            exits = dict(zip(commands, pool.map(run_command, commands), strict=True))
    fig = figures(rows, exits)
    if args.json:
        fig["per_report"] = [asdict(g) for g in rows] if args.verbose else None
        print(json.dumps(fig, indent=2))
        return 0
    if args.verbose:
        for g in rows:
            mark = "ok " if g.category == g.label else "BAD"
            flag = "*" if g.committed else " "
            print(f"{mark} {g.name:<16} {g.label:<27} -> {g.category:<27} {g.confidence:.2f}{flag}")
            if g.kind:
                print(f"      rests on {g.kind}")
            for ref, v in g.fixes:
                print(f"      fix {ref}: {v}")
    print(render(fig))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
