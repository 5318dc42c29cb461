"""Issue 29, thirteenth round: after heldout-12's read, the reporters' and the engines' other
spellings of classes the rules already hold. Each class was counted over every labelled file
before the change (`triage_calibration`'s docstring has the table):

- a slowdown in other words ("no acceleration effect", "3x slower", "slower than the vanilla
  run", "a discrepancy in speedup") and a shorter "accept length": acceptance, nothing failing;
- the engine resolving the wrong attention backend for spec decode ("auto-selection", 2 of 2
  labelled mode) is the narrow mode class;
- a failure stated before the threshold of speculative tokens ("fails for
  num_speculative_tokens>=3") gates on K as much as the other order does;
- Ascend's graph mode (aclgraph, "入图" with "报错") fails in capture (4 of 5 capture);
- a KV or draft pool sized or estimated wrong is memory;
- a title about how the engine finds or reads the draft (its architecture, model mapping,
  checkpoint, path, n_predict) is a config mismatch (4 of 6 such titles);
- a fix that turns the draft's CUDA graphs on or off for a backend or mode is the narrow mode
  class (2 of 2).

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
        ("stated-slowdown", "EAGLE-3 has no acceleration effect on our A100 at batch 1."),
        ("stated-slowdown", "Decoding with the draft is roughly 2.5x slower at every batch size."),
        ("stated-slowdown", "Generation is clearly slower than the vanilla model once MTP is on."),
        ("stated-slowdown", "There is a large discrepancy in speedup against the paper."),
        ("stated-acceptance-drop", "Tree B gives a shorter accept length than tree A."),
        ("stated-acceptance-drop", "After the upgrade we see a smaller mean accept length."),
    ],
)
def test_acceptance_in_other_words_is_acceptance(kind: str, sentence: str) -> None:
    r = triage_text(f"[Bug] speculative decoding on our cluster\n\n{sentence}\n\n{LAUNCH}")
    assert kind in r.evidence_kinds, r.evidence_kinds
    assert r.category == Category.ACCEPT, r.scores


def test_a_slower_run_that_then_crashes_is_not_acceptance() -> None:
    r = triage_text(f"[Bug] MTP\n\nIt is 3x slower than the vanilla run, and then:\n\n{CRASH}")
    assert "stated-slowdown" not in r.evidence_kinds, r.evidence_kinds
    assert r.category != Category.ACCEPT, r.scores


@pytest.mark.parametrize(
    "title",
    [
        "[Bug] attention backend auto-selection picks FLASH_ATTN for the EAGLE draft",
        "Prevent trtllm_mha auto-selection when MTP speculative decoding is on",
        "Auto-selected attention backend cannot serve topk > 1 with EAGLE3",
    ],
)
def test_a_mis_resolved_attention_backend_is_a_mode(title: str) -> None:
    r = triage_text(f"{title}\n\nThe server starts and the first request fails.\n\n{LAUNCH}")
    assert "stated-mode" in r.evidence_kinds, r.evidence_kinds
    assert r.category == Category.MODE, r.scores


def test_selection_without_a_backend_is_not_a_mode() -> None:
    r = triage_text(
        "[Bug] auto-selected port collides\n\nThe auto-selected port 8000 is in use.\n\n" + LAUNCH
    )
    assert "stated-mode" not in r.evidence_kinds, r.evidence_kinds


@pytest.mark.parametrize(
    "sentence",
    [
        "MTP fails for num_speculative_tokens>=3 on H100 with FlashInfer + FP8.",
        "The verify kernel errors out once num_speculative_tokens >= 4.",
    ],
)
def test_a_failure_stated_before_its_k_threshold_gates_on_k(sentence: str) -> None:
    r = triage_text(f"[Bug] speculative decoding\n\n{sentence} k=1 and k=2 work.\n\n{LAUNCH}")
    assert "stated-k-gated" in r.evidence_kinds, r.evidence_kinds
    assert r.category == Category.MODE, r.scores


def test_a_k_value_beside_an_error_without_a_threshold_is_not_gating() -> None:
    r = triage_text(f"[Bug] MTP\n\nIt errors with num_speculative_tokens=3.\n\n{LAUNCH}")
    assert "stated-k-gated" not in r.evidence_kinds, r.evidence_kinds


@pytest.mark.parametrize(
    "title",
    ["[Bug]: MTP aclgraph error on 910B", "[Bug]: GLM5 w4a8 MTP层入图报错"],
)
def test_ascend_graph_capture_spellings_are_capture(title: str) -> None:
    r = triage_text(f"{title}\n\nThe worker exits while the server starts.\n\n{LAUNCH}")
    assert "stated-capture" in r.evidence_kinds, r.evidence_kinds
    assert r.category == Category.CAPTURE, r.scores


@pytest.mark.parametrize(
    "sentence",
    [
        "The KV cache estimation ignores the draft model's layers, so too little is left.",
        "Account for DCP replication when sizing the EAGLE draft KV pool.",
    ],
)
def test_a_pool_sized_wrong_is_memory(sentence: str) -> None:
    r = triage_text(f"[Bug] speculative decoding\n\n{sentence}\n\n{LAUNCH}")
    assert "stated-memory" in r.evidence_kinds, r.evidence_kinds
    assert r.category == Category.OOM, r.scores


@pytest.mark.parametrize(
    "title",
    [
        "[Bugfix] Add FooV4ForCausalLM to the MTP draft model mapping",
        "Fix: auto-detect the MTP draft model path for speculative decoding",
        "[Bugfix] BarMTP: select the checkpoint MTP layer by its index",
        "[Spec Decode] Default num_speculative_tokens from the draft's n_predict",
    ],
)
def test_a_title_about_reading_the_draft_is_a_config_mismatch(title: str) -> None:
    r = triage_text(f"{title}\n\nThe draft does not come up as the target expects.\n\n{LAUNCH}")
    assert "titled-draft-config" in r.evidence_kinds, r.evidence_kinds
    assert r.category == Category.CONFIG, r.scores


def test_the_draft_reading_statement_is_read_from_the_title_only() -> None:
    r = triage_text(
        "[Bug] the server stops answering\n\n"
        "We load the MTP draft from its checkpoint; after an hour every request hangs.\n\n" + LAUNCH
    )
    assert "titled-draft-config" not in r.evidence_kinds, r.evidence_kinds


@pytest.mark.parametrize(
    "title",
    [
        "[Bugfix] skip cuda graph for the drafter when running with eager",
        "[Spec] Enable draft-extend CUDA graph on FlashAttention via backend capability",
        "Disable CUDA graphs for MTP drafts under the triton backend",
    ],
)
def test_a_fix_that_turns_the_drafts_graphs_on_or_off_is_a_mode(title: str) -> None:
    r = triage_text(f"{title}\n\nThe draft step does not run as configured.\n\n{LAUNCH}")
    assert "stated-mode" in r.evidence_kinds, r.evidence_kinds
    assert r.category == Category.MODE, r.scores


def test_skipping_graph_padded_positions_is_not_a_mode() -> None:
    r = triage_text(
        "[Bugfix] Skip CUDA-graph padded positions in the eagle draft step kernel\n\n"
        "Padded rows were read by the kernel.\n\n" + LAUNCH
    )
    assert "stated-mode" not in r.evidence_kinds, r.evidence_kinds
