"""Issue 29, seventh round: a stated mismatch of a count is no config mismatch, and a report in
which nothing names a class is answered "other" with what to ask for.

Each test reads a report written for the test (no dev-set text), so it checks the class of
evidence, not one report.
"""

from __future__ import annotations

from eaglegraph.known.triage_categories import Category
from eaglegraph.known.triage_commit import NO_EVIDENCE_CLASS, NO_EVIDENCE_NOTE
from eaglegraph.triage.diagnose import triage_text

LAUNCH = '```\nvllm serve Qwen/Qwen3-8B --speculative-config \'{"method": "eagle3"}\'\n```\n'


def _ticket(title: str, body: str) -> str:
    return f"{title}\n\n{body}\n\n{LAUNCH}"


def test_a_mismatch_of_a_batch_or_token_count_is_not_a_config_mismatch() -> None:
    """Padded inputs beside unpadded sequence lengths disagree in a count of the step: the
    engine's own bookkeeping, not the draft's width against the target's."""
    for sentence in (
        "otherwise the attention kernel will report a mismatch in input batch size.",
        "The draft step sees a batch size mismatch after DP padding.",
        "Then there is a mismatch between the padded token count and seq_lens.",
        "This leads to a seq_lens mismatch when the batch cannot run a graph.",
    ):
        r = triage_text(_ticket("[Bugfix] pad the metadata when the batch runs eager", sentence))
        assert r.category != Category.CONFIG, (sentence, r.scores)
        assert "stated-load-mismatch" not in r.evidence_kinds, (sentence, r.evidence_kinds)


def test_a_mismatch_of_widths_or_between_draft_and_target_still_is() -> None:
    """The narrowing takes counts out, nothing else: a hidden size, a weight's shape, or the
    draft against the target still name a config mismatch."""
    for sentence in (
        "The draft fails with a hidden size mismatch against the target.",
        "There is a mismatch between draft and target: the draft was trained for another model.",
        "Loading fails with size mismatch for fc.weight.",
    ):
        r = triage_text(_ticket("[Bug]: EAGLE3 draft does not start", sentence))
        assert r.category == Category.CONFIG, (sentence, r.scores)


def test_a_report_in_which_nothing_names_a_class_is_other_with_what_to_ask_for() -> None:
    """No rule finds evidence: the verdict is "other" whatever the nearest known reports are
    filed under (they stay listed as similar reports), it does not commit, and it asks."""
    text = _ticket("[Usage]: speculative decoding question", "How do I set it up with DP 2?")
    r = triage_text(text)
    assert r.tier == "nothing", (r.tier, r.scores)
    assert r.category == NO_EVIDENCE_CLASS == Category.OTHER
    assert not r.committed and r.ask_for
    assert NO_EVIDENCE_NOTE in r.notes


def test_a_fix_of_the_drafts_weight_loading_or_a_missing_weight_is_a_load_failure() -> None:
    """The draft's weights not loading for this target is a config mismatch, whether the
    reporter fixes the loading or quotes the weight the checkpoint lacks."""
    for title, sentence in (
        ("[Bugfix] Fix EAGLE weight loading", "Fixes a weight loading inconsistency."),
        (
            "[Bug]: MTP fails on a cold cache",
            "Startup failed with a missing serialized weight for the draft layer.",
        ),
    ):
        r = triage_text(_ticket(title, sentence))
        assert r.category == Category.CONFIG, (title, r.scores)
    r = triage_text(_ticket("[Bugfix] Fix weight loading of the vision tower", "Loads now."))
    assert r.category != Category.CONFIG, r.scores


def test_a_required_number_of_speculative_tokens_is_no_limit_on_it() -> None:
    """'must be provided' names an argument left out at startup, not a kernel that runs only
    some numbers of speculative tokens; 'must be 1' still is such a limit."""
    missing = (
        "```\npydantic_core._pydantic_core.ValidationError: 1 validation error for "
        "SpeculativeConfig\n  Value error, num_speculative_tokens must be provided with "
        "speculative model.\n```\n"
    )
    assert "spec.k-limit" not in {e.signal for e in triage_text(missing).evidence}
    limit = "```\nValueError: num_speculative_tokens must be 1 for this attention backend\n```\n"
    assert "spec.k-limit" in {e.signal for e in triage_text(limit).evidence}
