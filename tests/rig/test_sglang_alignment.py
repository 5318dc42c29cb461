"""SGLang's graph batch sizes under DP attention and two-batch overlap, per 0.5.x release.

`get_batch_sizes_to_capture` keeps a listed size when the runner's input is a multiple of
`mul_base` (x2 under two-batch overlap, x attention-TP with DP attention's gathered buffer).
Each row below was produced by executing that function, read out of the release's wheel, with
the layout stubbed in (the speculative list to 256 as input; `pool`: max_running_requests,
which the engine gives each DP worker as `// attn_dp` from 0.5.10). Three changes move the
result: the alignment counts bs x the runner's tokens per request from 0.5.8 (TBO: one per
request), and from 0.5.10 the pool is per DP worker and rounded up to `mul_base`.
"""

from __future__ import annotations

import pytest

from eaglegraph.errors import BadInput
from eaglegraph.known.choose import profile_for_version
from eaglegraph.known.sglang_capture import ALIGNMENT_ROWS
from eaglegraph.rig.sglang_plan import GraphLayout, captured_batch_sizes, request_pool

pytestmark = pytest.mark.fast

LISTED = [*range(1, 9), *range(10, 33, 2), *range(40, 65, 4), *range(72, 257, 8)]
_TO_32 = [*range(1, 9), *range(10, 33, 2)]
_OLD = "srt/model_executor/cuda_graph_runner.py::get_batch_sizes_to_capture"
_NEW = "srt/model_executor/runner/base_cuda_graph_runner.py::get_batch_sizes_to_capture"

# (release, max_running_requests, tp, attn_dp, tbo, tokens per request) -> sizes, source
ROWS: dict[tuple[str, int, int, int, bool, int], tuple[list[int], str]] = {
    # before 0.5.8 the target verify (4 tokens per request) aligns bs itself, like the drafts
    ("0.5.1", 48, 8, 2, False, 4): ([4, 8, 12, 16, 20, 24, 28, 32, 40, 44, 48], _OLD),
    ("0.5.5", 48, 8, 2, False, 4): ([4, 8, 12, 16, 20, 24, 28, 32, 40, 44, 48], _OLD),
    # 0.5.8: bs x 4 tokens is always a multiple of attention TP 4: every size; drafts: bs
    ("0.5.8", 48, 8, 2, False, 4): ([*_TO_32, 40, 44, 48], _OLD),
    ("0.5.8", 48, 8, 2, False, 1): ([4, 8, 12, 16, 20, 24, 28, 32, 40, 44, 48], _OLD),
    ("0.5.9", 6, 8, 4, False, 1): ([2, 4, 6], _OLD),
    # 0.5.10: 48 requests over 2 DP workers: a pool of 24; 50 // 2 = 25 rounds up to 28
    ("0.5.10", 48, 8, 2, False, 4): ([*range(1, 9), *range(10, 25, 2)], _OLD),
    ("0.5.10", 50, 8, 2, False, 1): ([4, 8, 12, 16, 20, 24, 28], _OLD),
    ("0.5.12", 100, 8, 2, False, 3): ([4, 8, 12, 16, 20, 24, 28, 32, 40, 44, 48, 52], _OLD),
    # TBO: mul_base 2 x attention TP 2, one token per request even for the target
    ("0.5.15", 48, 4, 2, True, 4): ([4, 8, 12, 16, 20, 24], _NEW),
    ("0.5.23", 48, 8, 2, False, 4): ([*range(1, 9), *range(10, 25, 2)], _NEW),
    ("0.5.23", 48, 8, 2, False, 1): ([4, 8, 12, 16, 20, 24], _NEW),
    # 6 requests over 4 workers: a pool of 1, rounded up to attention TP 2
    ("0.5.23", 6, 8, 4, False, 1): ([2], _NEW),
    ("0.5.23", 48, 2, 2, True, 4): ([*range(2, 25, 2)], _NEW),
    ("0.5.23", 7, 1, 1, True, 4): ([2, 4, 6, 8], _NEW),
}


@pytest.mark.parametrize(("row", "want"), list(ROWS.items()), ids=str)
def test_the_sizes_each_release_captures(
    row: tuple[str, int, int, int, bool, int], want: tuple[list[int], str]
) -> None:
    release, pool, tp, attn_dp, tbo, width = row
    profile = profile_for_version("sglang", release).profile
    layout = GraphLayout(tp, attn_dp, tbo)
    assert captured_batch_sizes(profile, LISTED, pool, width, layout) == want[0], want[1]


def test_without_dp_attention_or_tbo_nothing_is_aligned() -> None:
    """TP alone needs no gathered buffer (require_attn_tp_gather: no A2A backend): every
    listed size stays, whatever the release."""
    for release in ("0.5.1", "0.5.9", "0.5.23"):
        profile = profile_for_version("sglang", release).profile
        sizes = captured_batch_sizes(profile, LISTED, 300, 4, GraphLayout(8))
        assert sizes == [*LISTED], release
        assert request_pool(profile, 300, GraphLayout(8)) == 300


def test_no_size_left_is_the_engines_startup_assertion() -> None:
    """Before 0.5.10 the pool is not rounded: 2 requests under mul_base 4 leave nothing, and
    SGLang fails `assert len(capture_bs) > 0` at startup; refused here in one line."""
    profile = profile_for_version("sglang", "0.5.9").profile
    with pytest.raises(BadInput, match="len\\(capture_bs\\) > 0"):
        captured_batch_sizes(profile, LISTED, 2, 1, GraphLayout(8, 2))


def test_every_alignment_row_cites_the_function_it_was_read_from() -> None:
    assert [r.since for r in ALIGNMENT_ROWS] == sorted(
        (r.since for r in ALIGNMENT_ROWS), key=lambda v: tuple(map(int, v.split(".")))
    )
    for row in ALIGNMENT_ROWS:
        assert row.source.startswith("sglang 0.5.") and "::" in row.source, row
