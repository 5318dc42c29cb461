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

from .helpers_triage import ROUND_BUG, ROUND_CRASH, assert_not_read, assert_rests_on, round_ticket


@pytest.mark.parametrize(
    ("kind", "category", "title", "body"),
    [
        # a slowdown or a shorter accept length, nothing failing
        (
            "stated-slowdown",
            Category.ACCEPT,
            ROUND_BUG,
            "EAGLE-3 has no acceleration effect on our A100 at batch 1.",
        ),
        (
            "stated-slowdown",
            Category.ACCEPT,
            ROUND_BUG,
            "Decoding with the draft is roughly 2.5x slower at every batch size.",
        ),
        (
            "stated-slowdown",
            Category.ACCEPT,
            ROUND_BUG,
            "Generation is clearly slower than the vanilla model once MTP is on.",
        ),
        (
            "stated-slowdown",
            Category.ACCEPT,
            ROUND_BUG,
            "There is a large discrepancy in speedup against the paper.",
        ),
        (
            "stated-acceptance-drop",
            Category.ACCEPT,
            ROUND_BUG,
            "Tree B gives a shorter accept length than tree A.",
        ),
        (
            "stated-acceptance-drop",
            Category.ACCEPT,
            ROUND_BUG,
            "After the upgrade we see a smaller mean accept length.",
        ),
        # a mis-resolved attention backend, a draft's graphs turned on or off
        (
            "stated-mode",
            Category.MODE,
            "[Bug] attention backend auto-selection picks FLASH_ATTN for the EAGLE draft",
            "The server starts and the first request fails.",
        ),
        (
            "stated-mode",
            Category.MODE,
            "Prevent trtllm_mha auto-selection when MTP speculative decoding is on",
            "The server starts and the first request fails.",
        ),
        (
            "stated-mode",
            Category.MODE,
            "Auto-selected attention backend cannot serve topk > 1 with EAGLE3",
            "The server starts and the first request fails.",
        ),
        (
            "stated-mode",
            Category.MODE,
            "[Bugfix] skip cuda graph for the drafter when running with eager",
            "The draft step does not run as configured.",
        ),
        (
            "stated-mode",
            Category.MODE,
            "[Spec] Enable draft-extend CUDA graph on FlashAttention via backend capability",
            "The draft step does not run as configured.",
        ),
        (
            "stated-mode",
            Category.MODE,
            "Disable CUDA graphs for MTP drafts under the triton backend",
            "The draft step does not run as configured.",
        ),
        # a failure stated before its K threshold
        (
            "stated-k-gated",
            Category.MODE,
            ROUND_BUG,
            "MTP fails for num_speculative_tokens>=3 with FlashInfer + FP8. k=1 and k=2 work.",
        ),
        (
            "stated-k-gated",
            Category.MODE,
            ROUND_BUG,
            "The verify kernel errors out once num_speculative_tokens >= 4. k=1 and k=2 work.",
        ),
        # Ascend's graph capture
        (
            "stated-capture",
            Category.CAPTURE,
            "[Bug]: MTP aclgraph error on 910B",
            "The worker exits while the server starts.",
        ),
        (
            "stated-capture",
            Category.CAPTURE,
            "[Bug]: GLM5 w4a8 MTP层入图报错",
            "The worker exits while the server starts.",
        ),
        # a pool sized wrong
        (
            "stated-memory",
            Category.OOM,
            ROUND_BUG,
            "The KV cache estimation ignores the draft model's layers, so too little is left.",
        ),
        (
            "stated-memory",
            Category.OOM,
            ROUND_BUG,
            "Account for DCP replication when sizing the EAGLE draft KV pool.",
        ),
        # a title about how the engine finds or reads the draft
        (
            "titled-draft-config",
            Category.CONFIG,
            "[Bugfix] Add FooV4ForCausalLM to the MTP draft model mapping",
            "The draft does not come up as the target expects.",
        ),
        (
            "titled-draft-config",
            Category.CONFIG,
            "Fix: auto-detect the MTP draft model path for speculative decoding",
            "The draft does not come up as the target expects.",
        ),
        (
            "titled-draft-config",
            Category.CONFIG,
            "[Bugfix] BarMTP: select the checkpoint MTP layer by its index",
            "The draft does not come up as the target expects.",
        ),
        (
            "titled-draft-config",
            Category.CONFIG,
            "[Spec Decode] Default num_speculative_tokens from the draft's n_predict",
            "The draft does not come up as the target expects.",
        ),
    ],
)
def test_the_class_is_read_in_its_other_spellings(
    kind: str, category: Category, title: str, body: str
) -> None:
    assert_rests_on(round_ticket(title, body), kind, category)


@pytest.mark.parametrize(
    ("kind", "category", "ticket"),
    [
        # a slower run that then crashes is no silent slowdown
        (
            "stated-slowdown",
            Category.ACCEPT,
            round_ticket(
                "[Bug] MTP", "It is 3x slower than the vanilla run, and then:", ROUND_CRASH
            ),
        ),
        # an auto-selected port is no backend
        (
            "stated-mode",
            None,
            round_ticket("[Bug] auto-selected port collides", "The auto-selected port is in use."),
        ),
        # one K value beside an error is no threshold
        (
            "stated-k-gated",
            None,
            round_ticket("[Bug] MTP", "It errors with num_speculative_tokens=3."),
        ),
        # the draft's checkpoint named in the body, not the title
        (
            "titled-draft-config",
            None,
            round_ticket(
                "[Bug] the server stops answering",
                "We load the MTP draft from its checkpoint; after an hour every request hangs.",
            ),
        ),
        # graph-padded positions skipped in a kernel are no graph mode
        (
            "stated-mode",
            None,
            round_ticket(
                "[Bugfix] Skip CUDA-graph padded positions in the eagle draft step kernel",
                "Padded rows were read by the kernel.",
            ),
        ),
    ],
)
def test_near_misses_are_not_read_as_the_class(
    kind: str, category: Category | None, ticket: str
) -> None:
    assert_not_read(ticket, kind, category)
