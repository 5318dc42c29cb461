"""Known-issue matching: say "matches X, fixed by PR Y in Z; you run W" only when the evidence
(mechanism, engine, version) supports it, and rule a hazard out when the version carries its fix.
"""

from __future__ import annotations

from eaglegraph.triage.diagnose import triage_text

PADDED_IMA = (
    "[2025-07-25 07:53:08 TP0] EAGLE draft cuda graph replay padding: raw_bs=3 graph_bs=4 "
    "raw_out_cache_loc=9 padded_out_cache_loc=12 steps=3 topk=1\n"
    "[2025-07-25 07:53:08 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    "RuntimeError: CUDA error: an illegal memory access was encountered\n"
)


def _ticket(version: str) -> str:
    return f"[Bug] IMA with EAGLE on sglang {version}\n\n```\n{PADDED_IMA}```\n"


def _matches(notes: list[str]) -> list[str]:
    return [n for n in notes if n.startswith("matches ")]


def test_old_version_matches_with_fix_and_version() -> None:
    r = triage_text(_ticket("0.5.2"))
    assert r.category == "stale-buffer-read"
    (sentence,) = _matches(r.notes)
    assert "fixed by PR #10892 in SGLang ≥ 0.5.4" in sentence
    assert "you run SGLang 0.5.2, which predates the fix" in sentence
    assert "--behavior sglang-pre-10892" in r.reproduce  # the profile of the version that ran


def test_version_with_the_fix_rules_the_hazard_out() -> None:
    r = triage_text(_ticket("0.5.9"))
    assert _matches(r.notes) == []
    assert any(n.startswith("not stale-padded-positions: SGLang 0.5.9 carries") for n in r.notes)
    assert "--behavior sglang-pre-10892" not in r.reproduce


def test_unknown_version_says_so() -> None:
    (sentence,) = _matches(triage_text(PADDED_IMA).notes)
    assert sentence.endswith("the SGLang version is not in the report")


def test_no_engine_and_no_context_matches_nothing() -> None:
    r = triage_text("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert _matches(r.notes) == []
