"""Category accuracy on labelled real reports, with the confusion and calibration tables.

`tests/triage/data/gathered-{tune,holdout}.jsonl` are public vLLM / SGLang / TensorRT-LLM /
other engines' reports gathered for this check (text as posted, `source` URL per report),
labelled by the categories of crash-triage.md before triage ran on them, and split by a hash
of the URL. Rules were developed on the dev fixtures and the `tune` split only; `holdout` is
measured, never tuned on. Its figures before this session's changes are kept in
benchmarks/triage_accuracy_gathered_untuned.txt.
"""

from __future__ import annotations

from benchmarks.triage_accuracy import (
    accuracy,
    confusion_table,
    evaluate,
    load,
    per_category,
    reliability_table,
)
from eaglegraph.known import triage_calibration as cal
from eaglegraph.known.triage_commit import COMMIT
from eaglegraph.known.triage_rules import CALIBRATION, CALIBRATION_EVIDENCE, WEAK
from eaglegraph.results.triage import CATEGORIES
from eaglegraph.triage.diagnose import triage_text

from .helpers_triage import DEV_SETS, FIXTURES, HERE, eval_script

PART = "calibration"

DATA = HERE / "data"
DEV = evaluate(load(FIXTURES / "crash-logs-dev.jsonl") + load(FIXTURES / "crash-logs-dev2.jsonl"))
TUNE = evaluate(load(DATA / "gathered-tune.jsonl"))
HOLDOUT = evaluate(load(DATA / "gathered-holdout.jsonl"))


def _tables(rows) -> str:
    return confusion_table(rows) + "\n" + reliability_table(rows)


def test_gathered_reports_are_labelled_with_a_source() -> None:
    for name in ("gathered-tune.jsonl", "gathered-holdout.jsonl"):
        for r in load(DATA / name):
            assert r["category"] in CATEGORIES, r["url"]
            assert r["source"].startswith("https://github.com/"), r
            assert r["label_reason"] and r["log_excerpt"].strip(), r["url"]
    tune = {r["url"] for r in load(DATA / "gathered-tune.jsonl")}
    holdout = {r["url"] for r in load(DATA / "gathered-holdout.jsonl")}
    assert not tune & holdout


def test_dev_and_dev2_at_least_90_percent() -> None:
    assert len(DEV) == 40
    assert accuracy(DEV) >= 0.9, _tables(DEV)


def test_tune_split_at_least_90_percent() -> None:
    assert accuracy(TUNE) >= 0.9, _tables(TUNE)


def test_holdout_at_least_80_percent_and_no_category_below_half() -> None:
    assert len(HOLDOUT) >= 20
    assert accuracy(HOLDOUT) >= 0.8, _tables(HOLDOUT)
    for category, (right, n) in per_category(HOLDOUT).items():
        assert right / n >= 0.5, (category, right, n, _tables(HOLDOUT))


def test_calibration_follows_its_evidence_and_is_monotone() -> None:
    probs = [p for _, p in CALIBRATION]
    assert probs == sorted(probs) and probs[0] < WEAK < probs[-1]
    for (upper, p), (upper2, right, n) in zip(CALIBRATION, CALIBRATION_EVIDENCE, strict=True):
        assert upper == upper2 and abs(p - right / n) < 0.05


def test_evidence_rates_are_the_counts_of_the_first_reads() -> None:
    """known.triage_calibration holds what `scripts/triage_eval.py LEDGER --fit` counts on the
    first-read ledger, row for row."""
    ev = eval_script()
    reads = ev.ledger(HERE.parents[1] / cal.LEDGER)
    assert reads is not None
    counted = ev.fit([g for rows in reads.values() for g in rows])
    assert {k: (r.right, r.n) for k, r in cal.KINDS.items()} == {
        k: tuple(v) for k, v in counted["kinds"].items()
    }
    assert {k: (r.right, r.n) for k, r in cal.TIER_RATES.items()} == {
        k: tuple(v) for k, v in counted["tiers"].items()
    }
    assert (cal.KB_AGREEMENT.right, cal.KB_AGREEMENT.n) == tuple(counted["kb_agreement"])


def test_fit_sources_hold_the_reports_they_say() -> None:
    ev = eval_script()
    reports = [r for src in cal.FIT_SOURCES for r in ev.load(HERE.parents[1] / src)]
    assert len(reports) == cal.FIT_REPORTS


def test_committed_verdicts_on_the_dev_sets_are_right() -> None:
    ev = eval_script()
    rows = [ev.grade(r) for path in DEV_SETS for r in ev.load(path)]
    fig = ev.figures(rows)
    assert fig["committed"] >= 5 and fig["committed_right"] >= 0.9, ev.render(fig)
    assert fig["accuracy_ticket"] >= 0.9, ev.render(fig)
    proven = {k.rate for k in cal.KINDS.values() if k.proven and k.rate >= COMMIT}
    for g in rows:
        if g.confidence >= COMMIT:
            assert g.committed and g.kind is not None and g.confidence in proven, g
        else:
            assert not g.committed, g


def test_weak_verdict_says_what_is_missing() -> None:
    r = triage_text("[Bug] crash with speculative decoding\n\nIt crashed after a while.\n")
    assert r.confidence < WEAK
    assert any("the report lacks" in n for n in r.notes), r.notes
