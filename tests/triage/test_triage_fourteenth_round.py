"""Issue 29, fourteenth round: after heldout-13's read, more of the reporters' spellings of
classes the rules already hold (counted over every labelled file before the change;
`triage_calibration`'s docstring has the table):

- silent wrong output: spec decode changing greedy output, a silent wrong read "with no
  error", truncated output, an accuracy loss, a sampling setting (logit_bias, min_p, a
  penalty) that spec decode does not apply: acceptance by LABELLING.md's revised border;
- no accepted token at all ("matched tokens are always 0"): an acceptance drop;
- "doesn't show throughput improvement": a slowdown, acceptance;
- a draft's model_type missing from an allow-list, a missing `*_config` field of the draft's
  (speculators) config, in the title: a config mismatch.

Each test reads text written for the test (no dev-set report), so it checks the class.
"""

from __future__ import annotations

import pytest

from eaglegraph.known.triage_categories import Category
from eaglegraph.triage.diagnose import triage_text

LAUNCH = "```\npython -m engine.serve --model m --speculative-algorithm EAGLE3 --tp 2\n```\n"
CRASH = (
    "```\nTraceback (most recent call last):\n"
    '  File "/opt/engine/worker.py", line 88, in step\n'
    "    out = self.proposer.propose(batch)\n"
    "RuntimeError: CUDA error: an illegal memory access was encountered\n```\n"
)


@pytest.mark.parametrize(
    ("kind", "sentence"),
    [
        ("stated-corruption", "Turning on n-gram speculation changes the greedy output."),
        ("stated-corruption", "With EAGLE on, the outputs diverge after a few tokens."),
        ("stated-corruption", "The backend silently reads a torn page table during replay."),
        ("stated-corruption", "It produces wrong attention inputs with no error at all."),
        ("stated-corruption", "MTP keeps truncating the reasoning output of long answers."),
        ("stated-corruption", "We see an accuracy loss on GPQA once the draft is on."),
        ("stated-corruption", "The logit_bias and min_p settings are not applied with EAGLE."),
        ("stated-corruption", "The frequency penalty does not work when spec decoding is on."),
        ("stated-acceptance-drop", "The number of matched tokens is always 0 in this run."),
        ("stated-slowdown", "EAGLE-3 doesn't show throughput improvement on this model."),
    ],
)
def test_a_silent_failure_in_yet_other_words_is_acceptance(kind: str, sentence: str) -> None:
    r = triage_text(f"[Bug] speculative decoding on our cluster\n\n{sentence}\n\n{LAUNCH}")
    assert kind in r.evidence_kinds, r.evidence_kinds
    assert r.category == Category.ACCEPT, r.scores


@pytest.mark.parametrize(
    "sentence",
    [
        "This removes outliers from the hidden state without changing the output.",
        "The worker crashes, so the output is truncated:",
    ],
)
def test_no_silent_failure_where_the_words_say_otherwise(sentence: str) -> None:
    r = triage_text(f"[Bug] EAGLE\n\n{sentence}\n\n{CRASH}")
    assert r.category != Category.ACCEPT, r.scores


@pytest.mark.parametrize(
    "title",
    [
        "[Bug] EAGLE fails for FooLM due to a missing foo_v2 model_type whitelist",
        "[Bugfix] Add missing dflash_config to the speculators config",
        "The draft's model_type is not recognised by the allow-list",
    ],
)
def test_a_draft_the_engine_does_not_recognise_is_a_config_mismatch(title: str) -> None:
    r = triage_text(f"{title}\n\nThe draft does not come up as the target expects.\n\n{LAUNCH}")
    assert "titled-draft-config" in r.evidence_kinds, r.evidence_kinds
    assert r.category == Category.CONFIG, r.scores
