"""Issue 29, eleventh round: after heldout-10's read (the first set labelled by LABELLING.md's
revised border), two classes of a silent failure that were read as "other" or as a mode.

- speculative decoding that runs but gains nothing, or runs slower, with nothing failing: the
  labelled sets file such reports as acceptance regressions (7 of 9 that say so; 2 other, none a
  mode), so `stated-slowdown` names acceptance, not a graph mode;
- outputs that differ from the target's alone, a quality or benchmark-accuracy drop: silent
  wrong output, an acceptance regression by the revised border (`stated-corruption`).

Each test reads text written for the test (no dev-set report), so it checks the class.
"""

from __future__ import annotations

import pytest

from eaglegraph.known.triage_categories import Category
from eaglegraph.triage.diagnose import triage_text

CRASH = (
    "```\nTraceback (most recent call last):\n"
    '  File "/opt/engine/worker.py", line 88, in step\n'
    "    out = self.proposer.propose(batch)\n"
    "RuntimeError: CUDA error: an illegal memory access was encountered\n```\n"
)
LAUNCH = "```\npython -m engine.serve --model m --speculative-algorithm EAGLE3 --tp 2\n```\n"


@pytest.mark.parametrize(
    "sentence",
    [
        "With MTP on there is no speedup at all compared with the plain model.",
        "EAGLE-3 does not provide any speedup on this card; on the other GPU it is 2x.",
        "The speedup we measure is only 1.1x and does not reach the published figure.",
        "Enabling the overlap scheduler with EAGLE decreases performance at every concurrency.",
        "Decode speed is significantly lower once the draft model is on.",
    ],
)
def test_no_gain_or_a_slowdown_with_nothing_failing_is_acceptance(sentence: str) -> None:
    r = triage_text(f"[Bug] speculative decoding on our cluster\n\n{sentence}\n\n{LAUNCH}")
    assert "stated-slowdown" in r.evidence_kinds, r.evidence_kinds
    assert r.category == Category.ACCEPT, r.scores


def test_a_slowdown_beside_a_crash_is_not_read_as_acceptance() -> None:
    r = triage_text(
        "[Bug] no speedup with MTP, then the server dies\n\n"
        f"There is no speedup with MTP and after a while:\n\n{CRASH}"
    )
    assert "stated-slowdown" not in r.evidence_kinds, r.evidence_kinds
    assert r.category != Category.ACCEPT, r.scores


@pytest.mark.parametrize(
    "sentence",
    [
        "With speculative decoding the output is inconsistent with the output without it.",
        "Using this attention backend with the draft model gives incorrect results.",
        "The drafted model produces substantially lower quality outputs.",
        "The final tokens seem to be random once drafting is on.",
        "MMLU accuracy decreased from 0.86 to 0.31 when MTP was turned on.",
    ],
)
def test_silent_wrong_output_in_other_words_is_acceptance(sentence: str) -> None:
    r = triage_text(f"[Bug] speculative decoding on our cluster\n\n{sentence}\n\n{LAUNCH}")
    assert "stated-corruption" in r.evidence_kinds, r.evidence_kinds
    assert r.category == Category.ACCEPT, r.scores


@pytest.mark.parametrize(
    "sentence",
    [
        "The accuracy of the int8 kernel is fine; it is the launch that fails.",
        "The results are consistent across runs, and the output is correct.",
    ],
)
def test_correct_or_unchanged_output_is_no_corruption(sentence: str) -> None:
    r = triage_text(f"[Bug] speculative decoding crashes\n\n{sentence}\n\n{CRASH}")
    assert "stated-corruption" not in r.evidence_kinds, r.evidence_kinds
