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

from .helpers_triage import ROUND_BUG, ROUND_CRASH, assert_not_read, assert_rests_on, round_ticket

_DRAFT = "The draft does not come up as the target expects."


@pytest.mark.parametrize(
    ("kind", "category", "title", "body"),
    [
        (
            "stated-corruption",
            Category.ACCEPT,
            ROUND_BUG,
            "Turning on n-gram speculation changes the greedy output.",
        ),
        (
            "stated-corruption",
            Category.ACCEPT,
            ROUND_BUG,
            "With EAGLE on, the outputs diverge after a few tokens.",
        ),
        (
            "stated-corruption",
            Category.ACCEPT,
            ROUND_BUG,
            "The backend silently reads a torn page table during replay.",
        ),
        (
            "stated-corruption",
            Category.ACCEPT,
            ROUND_BUG,
            "It produces wrong attention inputs with no error at all.",
        ),
        (
            "stated-corruption",
            Category.ACCEPT,
            ROUND_BUG,
            "MTP keeps truncating the reasoning output of long answers.",
        ),
        (
            "stated-corruption",
            Category.ACCEPT,
            ROUND_BUG,
            "We see an accuracy loss on GPQA once the draft is on.",
        ),
        (
            "stated-corruption",
            Category.ACCEPT,
            ROUND_BUG,
            "The logit_bias and min_p settings are not applied with EAGLE.",
        ),
        (
            "stated-corruption",
            Category.ACCEPT,
            ROUND_BUG,
            "The frequency penalty does not work when spec decoding is on.",
        ),
        (
            "stated-acceptance-drop",
            Category.ACCEPT,
            ROUND_BUG,
            "The number of matched tokens is always 0 in this run.",
        ),
        (
            "stated-slowdown",
            Category.ACCEPT,
            ROUND_BUG,
            "EAGLE-3 doesn't show throughput improvement on this model.",
        ),
        (
            "titled-draft-config",
            Category.CONFIG,
            "[Bug] EAGLE fails for FooLM due to a missing foo_v2 model_type whitelist",
            _DRAFT,
        ),
        (
            "titled-draft-config",
            Category.CONFIG,
            "[Bugfix] Add missing dflash_config to the speculators config",
            _DRAFT,
        ),
        (
            "titled-draft-config",
            Category.CONFIG,
            "The draft's model_type is not recognised by the allow-list",
            _DRAFT,
        ),
    ],
)
def test_the_class_is_read_in_yet_other_spellings(
    kind: str, category: Category, title: str, body: str
) -> None:
    assert_rests_on(round_ticket(title, body), kind, category)


@pytest.mark.parametrize(
    "sentence",
    [
        "This removes outliers from the hidden state without changing the output.",
        "The worker crashes, so the output is truncated:",
    ],
)
def test_no_silent_failure_where_the_words_say_otherwise(sentence: str) -> None:
    assert_not_read(
        round_ticket("[Bug] EAGLE", sentence, ROUND_CRASH), "stated-corruption", Category.ACCEPT
    )
