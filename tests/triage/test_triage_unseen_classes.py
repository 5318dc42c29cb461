"""Classes of evidence the second round of issue 29 taught triage, each read the general way
(not one report's string): an engine error quoted in a title or a sentence, an n-gram proposer
beside an asynchronous fault, a title about acceptance, an error line that names its capture,
the default weight loader's size assert, and a report with no evidence at all."""

from __future__ import annotations

from eaglegraph.triage.diagnose import triage_text


def _ticket(title: str, body: str) -> str:
    return f"{title}\n\n{body}\n"


def test_a_width_error_quoted_in_the_title_is_a_config_mismatch() -> None:
    """The engine's own error, quoted in the title while the pasted log stops before it."""
    for quoted in (
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (1x5120 and 4096x4096)",
        "size mismatch for fc.weight: copying a param with shape [4096, 8192]",
    ):
        r = triage_text(
            _ticket(
                f"[Bug]: serving a draft model fails, {quoted}",
                "```\nERROR engine.py:63] Engine background task failed\n"
                "ERROR engine.py:63] Traceback (most recent call last):\n```",
            )
        )
        assert r.category == "hidden-dim/config-mismatch", (quoted, r.scores)
        assert "stated-width-error" in r.evidence_kinds


def test_a_quoted_token_count_mismatch_is_not_a_width_error() -> None:
    """`size of tensor a (8) must match ... b (9)` compares token counts, not widths."""
    r = triage_text(
        _ticket(
            "[Bug] crash: The size of tensor a (8) must match the size of tensor b (9)",
            "```\nTraceback (most recent call last):\n```",
        )
    )
    assert "stated-width-error" not in r.evidence_kinds


def test_the_weight_loaders_size_assert_is_a_draft_that_does_not_load() -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "vllm/model_executor/model_loader/weight_utils.py", line 1394, in '
        "default_weight_loader\n"
        "AssertionError: Attempted to load weight (torch.Size([3584])) into parameter "
        "(torch.Size([3584, 7168]))\n"
    )
    r = triage_text(log)
    assert r.category == "hidden-dim/config-mismatch"
    assert "log-draft-load" in r.evidence_kinds


def test_an_async_fault_with_an_ngram_proposer_is_not_read_as_a_stale_draft_graph() -> None:
    body = (
        "```\nRuntimeError: CUDA error: an illegal memory access was encountered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call\n```"
    )
    with_ngram = triage_text(_ticket("[Bug] IMA with ngram speculative decoding", body))
    with_eagle = triage_text(_ticket("[Bug] IMA with eagle speculative decoding", body))
    assert with_ngram.category == "other", with_ngram.scores
    assert with_eagle.category == "stale-buffer-read", with_eagle.scores


def test_a_title_about_fixing_or_losing_acceptance_is_an_acceptance_regression() -> None:
    for title in (
        "[NPU] fix eagle3 accept rate",
        "Acceptance length drops after upgrading to the new release",
    ):
        r = triage_text(_ticket(title, "The draft steps reuse the sequence lengths of step 0."))
        assert r.category == "acceptance-regression", (title, r.scores)


def test_an_error_line_that_names_its_capture_puts_the_fault_in_capture() -> None:
    line = (
        "EngineCore crashes during speculator prefill CUDA graph capture "
        "(torch.cuda.graph() -> CUDA error: an illegal memory access was encountered)\n"
    )
    r = triage_text(line)
    assert r.phase.at_failure == "capture" and r.category == "capture-failure", r.scores
    plain = triage_text("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert plain.phase.at_failure != "capture"


def test_no_evidence_is_other_whatever_the_nearest_known_reports_and_never_commits() -> None:
    """Issue 29, seventh round (`known.triage_commit.NO_EVIDENCE_CLASS`): with no evidence the
    verdict is "other" with what to ask for; the nearest known reports stay listed."""
    text = "enable_attention_dp: true\ncuda_graph_config:\n  enable_padding: true\n"
    r = triage_text(text)
    assert not any(w > 0 for w in r.scores.values())
    assert not r.committed and r.evidence_kind is None and r.ask_for
    assert r.category == "other"
    assert not any("nearest known reports are filed under" in n for n in r.notes), r.notes


def test_slower_with_speculation_and_nothing_failing_is_an_acceptance_question() -> None:
    r = triage_text(
        _ticket(
            "[Performance]: MTP causes 60% latency regression against the same model without it",
            "Decode throughput drops from 90 to 35 tok/s; outputs are correct.",
        )
    )
    assert r.category == "acceptance-regression" and "stated-slowdown" in r.evidence_kinds
    crash = triage_text(
        _ticket(
            "[Bug] latency regression and a crash with MTP",
            "```\nRuntimeError: CUDA error: an illegal memory access was encountered\n```",
        )
    )
    assert "stated-slowdown" not in crash.evidence_kinds


def test_a_shape_error_over_token_counts_is_bookkeeping_not_a_stale_read() -> None:
    """torch.cat's 'Expected size 6 but got size 8' compares token counts: a host-side count
    disagreement raised before any kernel reads a buffer."""
    r = triage_text(
        "RuntimeError: Sizes of tensors must match except in dimension 1. Expected size 6 but "
        "got size 8 for tensor number 1 in the list.\n"
    )
    assert r.category == "other" and "log-shape-tokens" in r.evidence_kinds, r.scores
    width = triage_text(
        "RuntimeError: Sizes of tensors must match except in dimension 1. Expected size 4096 "
        "but got size 5120 for tensor number 1 in the list.\n"
    )
    assert width.category == "hidden-dim/config-mismatch", width.scores


def test_a_serving_crash_without_its_error_line_beside_an_outside_feature_is_other() -> None:
    frames = (
        "```\nTraceback (most recent call last):\n"
        '  File "sglang/srt/managers/scheduler.py", line 987, in event_loop_normal\n'
        "    result = self.run_batch(batch)\n"
        '  File "sglang/srt/speculative/ngram_worker.py", line 210, in '
        "forward_batch_generation\n"
        "    verify_input.verify(\n```"
    )
    r = triage_text(_ticket("[Bug] NGram speculative decoding crashes with LoRA", frames))
    assert r.category == "other" and "crash-with-outside-feature" in r.evidence_kinds, r.scores
