"""The first-read ledger is what each held-out set's one read recorded, and covers every read.

The calibration (known.triage_calibration) is counted on tests/triage/data/first-reads.jsonl;
these tests keep that file honest (one re-runs the newest read's commit): each row must be the verdict
and confidence the set's `.result.txt` printed at its read, in order, with the set's current
label, and every set with a recorded read must be in FIRST_READS (a read left out would let the
table drift back to in-sample counts)."""

from __future__ import annotations

import json
from pathlib import Path

from eaglegraph.known import triage_calibration as cal

from .frozen_sets import other_files
from .helpers_triage import script

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests/triage/data"


def _rows() -> list[dict]:
    text = (ROOT / cal.LEDGER).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_every_recorded_read_is_in_the_ledger() -> None:
    recorded = {p.name.replace(".result.txt", "") for p in DATA.glob("heldout-*.result.txt")}
    read = {Path(f).stem for f, _ in cal.FIRST_READS}
    assert read == recorded
    assert {r["set"] for r in _rows()} == read


def test_ledger_rows_are_the_verdicts_each_read_recorded() -> None:
    ledger = script("triage_ledger")
    rows = _rows()
    for data_file, commit in cal.FIRST_READS:
        mine = [r for r in rows if r["set"] == Path(data_file).stem]
        assert mine and {r["commit"] for r in mine} == {commit}
        want = ledger.recorded(ROOT / data_file.replace(".jsonl", ".result.txt"))
        got = [(r["name"], r["category"], r["confidence"]) for r in mine]
        assert [(n, c) for n, c, _ in want] == [(n, c) for n, c, _ in got], data_file
        assert all(abs(w - g) < 0.006 for (_, _, w), (_, _, g) in zip(want, got, strict=True)), (
            data_file
        )
        labels = [r["category"] for r in map(json.loads, (ROOT / data_file).open())]
        assert [r["label"] for r in mine] == labels, data_file


def test_recorded_reads_a_result_file_line_by_line(tmp_path: Path) -> None:
    ledger = script("triage_ledger")
    f = tmp_path / "x.result.txt"
    f.write_text(
        "# header\n"
        "ok  vllm#1           other                       -> other                       0.10 \n"
        "      rests on stated-hang\n"
        "BAD sglang#22        hang                        -> oob-index                   0.88*\n"
        "reports 2: accuracy log-only 50%, as a ticket 50%\n",
        encoding="utf-8",
    )
    assert ledger.recorded(f) == [("vllm#1", "other", 0.10), ("sglang#22", "oob-index", 0.88)]


def test_the_ledger_is_no_set_the_overlap_check_reads() -> None:
    held = DATA / "heldout-15.jsonl"
    assert (ROOT / cal.LEDGER).resolve() not in {p.resolve() for p in other_files(held)}


def test_a_verdicts_notes_say_its_evidence_was_counted_at_first_reads() -> None:
    """The notes a reader weighs a verdict by quote the ledger's counts and say where they come
    from; a kind no read has counted says it cannot commit."""
    from eaglegraph.triage.diagnose import _kind_notes

    proven = next(k for k in cal.KINDS.values() if k.proven and k.kind != cal.KB_UNANIMOUS)
    weak = next(k for k in cal.KINDS.values() if not k.proven)
    notes = _kind_notes([proven.kind, weak.kind, "kind-no-read-counted"], proven.kind)
    assert notes[0] == (
        f"evidence {proven.kind}: right on {proven.right} of {proven.n} reports at their first read"
    )
    assert f"right on {weak.right} of {weak.n} reports at their first read" in notes[1]
    assert "too few to commit on" in notes[1]
    assert (
        notes[2]
        == "evidence kind-no-read-counted: no first read has counted it yet, so it cannot commit"
    )


def test_the_latest_read_rebuilds_to_its_ledger_rows() -> None:
    """scripts/triage_ledger.py end to end on the newest read: the set triaged by its read
    commit's own code (a git archive) gives the verdicts its .result.txt recorded and the very
    rows the ledger holds. Needs the commit in this clone's history."""
    import subprocess

    import pytest

    data_file, commit = cal.FIRST_READS[-1]
    known = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{commit}^{{commit}}"], capture_output=True
    )
    if known.returncode != 0:
        pytest.skip(f"{commit} is not in this clone's history")
    ledger = script("triage_ledger")
    rows = ledger.read_at(data_file, commit)
    ledger.check(rows, data_file, commit)
    stem = Path(data_file).stem
    mine = [{k: v for k, v in r.items() if k not in ("set", "commit")} for r in _rows()]
    assert rows == [r for r, full in zip(mine, _rows(), strict=True) if full["set"] == stem]
