"""Issue 29, eighth round: three classes of evidence that heldout-7 showed were read wrongly.

- a view refused although its rows fit their widths is over a count of rows, not a width;
- TensorRT-LLM's C++ log lines (`[TensorRT-LLM][INFO] ...`) are log, never the reporter's words;
- speculative decoding stated together with a mode or feature the engine did not support with
  it is a mode incompatibility (tests/triage/data/LABELLING.md).

Each test reads text written for the test (no dev-set report), so it checks the class.
"""

from __future__ import annotations

import pytest

from eaglegraph.known.triage_categories import Category
from eaglegraph.triage.diagnose import triage_text
from eaglegraph.triage.prefixes import strip_prefixes

LAUNCH = '```\nvllm serve Qwen/Qwen3-8B --speculative-config \'{"method": "eagle3"}\'\n```\n'


def _ticket(title: str, body: str = "") -> str:
    return f"{title}\n\n{body}\n\n{LAUNCH}"


@pytest.mark.parametrize(
    ("dims", "size"),
    [
        ("7, -1, 16, 128", 16 * 128 * 30),
        ("3, -1, 4096", 4096 * 10),
        ("5, 2, 8, 64", 2 * 8 * 64 * 7),
    ],
)
def test_a_view_whose_rows_fit_their_widths_is_a_count(dims: str, size: int) -> None:
    """The input divides by the widths after the leading count, so every row is as wide as
    the view says: the rows do not split into the count (a batch of unequal lengths)."""
    log = f"```\nRuntimeError: shape '[{dims}]' is invalid for input of size {size}\n```\n"
    r = triage_text(log)
    assert "log-shape-tokens" in r.evidence_kinds, r.evidence_kinds
    assert r.category != Category.CONFIG, r.scores


def test_a_view_whose_widths_do_not_divide_is_still_a_width() -> None:
    """4096-wide rows viewed over an input of 5120-wide rows: the width disagrees."""
    log = "```\nRuntimeError: shape '[4, -1, 4096]' is invalid for input of size 15360\n```\n"
    r = triage_text(log)
    assert "log-shape-tokens" not in r.evidence_kinds, r.evidence_kinds
    assert r.category == Category.CONFIG, r.scores


@pytest.mark.parametrize(
    ("line", "level", "rank"),
    [
        ("[TensorRT-LLM][INFO] [MemUsageChange] Allocated 12.50 GiB for KV cache", "INFO", None),
        ("[TensorRT-LLM][RANK 3][ERROR] Assertion failed: draft tokens", "ERROR", 3),
        ("[TensorRT-LLM][VERBOSE] Using 4 streams", "DEBUG", None),
    ],
)
def test_tensorrt_llm_cpp_lines_are_log(line: str, level: str, rank: int | None) -> None:
    rest, prefix = strip_prefixes(line)
    assert prefix.framework == "trtllm" and prefix.level == level, prefix
    assert not rest.startswith("[TensorRT-LLM]"), rest
    assert (prefix.ranks or {}).get("TP") == rank, prefix


def test_a_routine_allocation_line_is_no_memory_statement() -> None:
    """An engine's own allocation report, pasted in the log, is no reporter saying "memory"."""
    ticket = (
        "Draft and target engines refuse to run together\n\n```\n"
        "[TensorRT-LLM][INFO] [MemUsageChange] Allocated 12.50 GiB for max tokens in paged KV "
        "cache (524288).\n[TensorRT-LLM][INFO] Executor instance created by worker\n```\n"
    )
    r = triage_text(ticket)
    assert "stated-memory" not in r.evidence_kinds, r.evidence_kinds
    assert r.category != Category.OOM, r.scores


@pytest.mark.parametrize(
    "title",
    [
        "[Bug]: tensor parallel + pipeline parallel with speculative decoding raises unsupported",
        "[Bug] AssertionError: FooAttentionBackend does not support speculative decoding",
        "[Feature] Support LoRA adapters with speculative decoding",
        "[Bug]: chunked prefill is not supported together with EAGLE-3 drafts",
        "[Fix] MTP and context parallel compatibility on DeepSeek",
    ],
)
def test_a_stated_unsupported_combination_is_a_mode_incompatibility(title: str) -> None:
    r = triage_text(_ticket(title))
    assert "stated-combination" in r.evidence_kinds, (title, r.evidence_kinds)
    assert r.category == Category.MODE, (title, r.scores)


@pytest.mark.parametrize(
    "title",
    [
        "[Bug]: pipeline parallelism is not supported for this model",
        "[Bug]: EAGLE-3 draft fails to load: hidden size mismatch with the target",
        "[Bug]: out of memory when enabling speculative decoding with LoRA adapters",
    ],
)
def test_a_feature_failing_alone_or_another_class_is_not_read_as_a_combination(
    title: str,
) -> None:
    """A feature unsupported on its own names no combination; a load failure or an OOM beside
    a feature keeps its own class."""
    r = triage_text(_ticket(title))
    assert "stated-combination" not in r.evidence_kinds, (title, r.evidence_kinds)
    assert r.category != Category.MODE, (title, r.scores)
