"""SGLang's own spellings of the batch options, and what its capture list does with them."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.cli.options import parse_capture_sizes


@pytest.mark.parametrize("text", ["1,2,4,8", "1, 2, 4, 8", "1 2 4 8", " 1  2,4 8 "])
def test_capture_sizes_read_with_commas_or_spaces(text: str) -> None:
    assert parse_capture_sizes(text) == (1, 2, 4, 8)


def _plan(*args: str) -> dict:  # type: ignore[type-arg]
    result = CliRunner().invoke(
        cli, ["inspect", "tiny-llama-eagle3", "--framework", "sglang", "--json", *args]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["plan"]


def test_max_running_requests_is_max_num_seqs() -> None:
    assert _plan("--max-running-requests", "6") == _plan("--max-num-seqs", "6")
    assert _plan("--max-running-requests", "6")["max_num_seqs"] == 6


def test_the_request_pool_joins_a_list_that_passes_it() -> None:
    """get_batch_sizes_to_capture appends req_to_token_pool.size when the list goes past it,
    then keeps the sizes up to it: "1 2 4 8" with 6 requests captures 1, 2, 4 and 6."""
    plan = _plan("--max-running-requests", "6", "--capture-sizes", "1 2 4 8")
    assert plan["capture_sizes"] == [1, 2, 4, 6]
    target = next(p for p in plan["phases"] if p["phase"] == "target")
    assert [reqs for _, reqs in target["descriptors"]] == [1, 2, 4, 6]
    within = _plan("--max-running-requests", "6", "--capture-sizes", "1,2,4")
    assert within["capture_sizes"] == [1, 2, 4]
