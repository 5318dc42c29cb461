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

from .helpers_triage import ROUND_CRASH, ROUND_LAUNCH

CRASH = ROUND_CRASH
LAUNCH = ROUND_LAUNCH


_SLOWDOWN = "stated-slowdown"
_CORRUPTION = "stated-corruption"


@pytest.mark.parametrize(
    ("kind", "sentence"),
    [
        # no gain, or slower, and nothing fails
        (_SLOWDOWN, "With MTP on there is no speedup at all compared with the plain model."),
        (
            _SLOWDOWN,
            "EAGLE-3 does not provide any speedup on this card; on the other GPU it is 2x.",
        ),
        (_SLOWDOWN, "The speedup we measure is only 1.1x and does not reach the published figure."),
        (
            _SLOWDOWN,
            "Enabling the overlap scheduler with EAGLE decreases performance at every load.",
        ),
        (_SLOWDOWN, "Decode speed is significantly lower once the draft model is on."),
        # silent wrong output in other words
        (
            _CORRUPTION,
            "With speculative decoding the output is inconsistent with the output without.",
        ),
        (_CORRUPTION, "Using this attention backend with the draft model gives incorrect results."),
        (_CORRUPTION, "The drafted model produces substantially lower quality outputs."),
        (_CORRUPTION, "The final tokens seem to be random once drafting is on."),
        (_CORRUPTION, "MMLU accuracy decreased from 0.86 to 0.31 when MTP was turned on."),
    ],
)
def test_a_silent_failure_in_the_reporters_words_is_acceptance(kind: str, sentence: str) -> None:
    r = triage_text(f"[Bug] speculative decoding on our cluster\n\n{sentence}\n\n{LAUNCH}")
    assert kind in r.evidence_kinds, r.evidence_kinds
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
        "The accuracy of the int8 kernel is fine; it is the launch that fails.",
        "The results are consistent across runs, and the output is correct.",
    ],
)
def test_correct_or_unchanged_output_is_no_corruption(sentence: str) -> None:
    r = triage_text(f"[Bug] speculative decoding crashes\n\n{sentence}\n\n{CRASH}")
    assert "stated-corruption" not in r.evidence_kinds, r.evidence_kinds


# -- twelfth round, after heldout-11's read ----------------------------------------------------

RUNTIME_SHAPE = (
    "```\nTraceback (most recent call last):\n"
    '  File "/opt/engine/spec_decode/worker.py", line 88, in step\n'
    "    hidden = hidden.view(batch, -1)\n"
    "RuntimeError: shape '[8, -1]' is invalid for input of size 12\n```\n"
)


@pytest.mark.parametrize(
    ("title", "names_a_width"),
    [
        ("[Bugfix] Fix MTP crash with the TP1 model runner due to shape mismatch", False),
        ("Scoring requests cause shape mismatches in the rejection sampler", False),
        ("mtp + expert parallel shape mismatch bug fix", False),
        ("EAGLE3 draft fails: hidden_size mismatch between draft and target", True),
        ("MTP head vocab size does not match the target model", True),
    ],
)
def test_a_shape_mismatch_is_a_draft_target_mismatch_only_with_a_width(
    title: str, names_a_width: bool
) -> None:
    """A "shape mismatch" between runtime tensors (batch rows, logits of a feature) says nothing
    of the draft's widths: across the labelled sets such reports were filed 2 of 3 as other
    before heldout-11, 4 more there; the draft/target kind needs a width, vocabulary, weight or
    checkpoint named."""
    r = triage_text(f"{title}\n\n{RUNTIME_SHAPE}")
    assert ("stated-load-mismatch" in r.evidence_kinds) == names_a_width, r.evidence_kinds
    if not names_a_width:
        assert r.category != Category.CONFIG, r.scores


def test_the_weight_loaders_shape_assert_is_a_draft_load_failure() -> None:
    r = triage_text(
        "MTP speculative decoding crashes on startup\n\n```\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/engine/model_loader/weight_utils.py", line 520, in default_weight_loader\n'
        "    assert param.data.shape == loaded_weight.shape\n"
        "AssertionError\n```\n"
    )
    assert r.category == Category.CONFIG, r.scores


def test_vllms_deadlock_boilerplate_above_a_worker_traceback_is_no_hang() -> None:
    r = triage_text(
        "[Bug] MTP crash\n\n```\n"
        "ERROR 03-04 09:59:21 [worker_base.py:593] Error executing method 'execute_model'. "
        "This might cause deadlock in distributed execution.\n"
        "ERROR 03-04 09:59:21 [worker_base.py:593] Traceback (most recent call last):\n"
        'ERROR 03-04 09:59:21 [worker_base.py:593]   File "/v/worker/model_runner.py", line '
        "1742, in execute_model\n"
        "ERROR 03-04 09:59:21 [worker_base.py:593] TypeError: forward() got an unexpected "
        "keyword argument 'positions'\n```\n"
    )
    assert r.category != Category.HANG, r.scores
    assert not any(e.signal == "hang.narrative" for e in r.evidence), r.evidence
    stuck = triage_text("[Bug] MTP server deadlocked after 2 hours, all ranks idle\n\nNo error.\n")
    assert stuck.category == Category.HANG, stuck.scores
