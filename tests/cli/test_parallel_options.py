"""Parallel layouts as the engines spell them: every spelling parses into one ParallelLayout,
a flag of the other engine or a layout the engine refuses is one line and exit 2 before any
work, and `inspect` reports one rank (JSON and the view at 80 columns)."""

from __future__ import annotations

import json
from typing import Any

import click
import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.cli.parallel_options import layout_from_options, parallel_options
from eaglegraph.errors import BadInput
from eaglegraph.results.parallel import ParallelLayout

pytestmark = pytest.mark.fast


@click.command()
@parallel_options
def _probe(**kwargs: Any) -> None:
    click.echo(json.dumps(kwargs))


def _parsed(framework: str, *args: str, speculative: dict[str, Any] | None = None) -> Any:
    result = CliRunner().invoke(_probe, list(args))
    assert result.exit_code == 0, result.output
    kwargs = json.loads(result.output)
    layout = layout_from_options(kwargs, framework, speculative)
    assert kwargs == {}  # every layout key popped
    return layout


@pytest.mark.parametrize("tp", ["--tp", "-tp", "--tensor-parallel-size", "--tp-size"])
@pytest.mark.parametrize("dp", ["--dp", "-dp", "--data-parallel-size", "--dp-size"])
def test_every_tp_and_dp_spelling_is_accepted(tp: str, dp: str) -> None:
    assert _parsed("vllm", tp, "4", dp, "2") == ParallelLayout(tp=4, dp=2)
    assert _parsed("sglang", tp, "4", dp, "2") == ParallelLayout(tp=4, dp=2)


def test_vllm_expert_parallel_spans_every_rank() -> None:
    """fused_moe/config.py::FusedMoEParallelConfig.make: with EP the group is TP × DP."""
    layout = _parsed("vllm", "--tp", "4", "--dp", "2", "--enable-expert-parallel")
    assert (layout.ep, layout.world_size) == (8, 8)
    assert _parsed("vllm", "--enable-expert-parallel").ep == 1  # one rank: no EP
    assert _parsed("vllm", "-tp", "2", "-ep").ep == 2  # vLLM's short spellings
    spec = _parsed("vllm", "--tp", "8", speculative={"draft_tensor_parallel_size": 1})
    assert spec.draft_tp == 1 and spec.draft_tensor_parallel == 1


@pytest.mark.parametrize("ep", ["--ep-size", "--ep", "--expert-parallel-size"])
def test_sglang_ep_spellings(ep: str) -> None:
    assert _parsed("sglang", "--tp-size", "8", ep, "4") == ParallelLayout(tp=8, ep=4)


def test_sglang_dp_attention_both_spellings() -> None:
    old = _parsed("sglang", "--tp-size", "8", "--dp-size", "4", "--enable-dp-attention")
    new = _parsed("sglang", "--tp-size", "8", "--attn-dp-size", "4")
    assert old == new == ParallelLayout(tp=8, dp=4, dp_attention=True)
    assert (old.world_size, old.attention_tp) == (8, 2)


@pytest.mark.parametrize(
    ("framework", "args", "message"),
    [
        ("vllm", ["--ep-size", "2"], "--ep-size is SGLang's"),
        ("vllm", ["--enable-dp-attention", "--dp", "2"], "--enable-dp-attention is SGLang's"),
        ("sglang", ["--tp-size", "2", "--enable-expert-parallel"], "is vLLM's"),
        ("sglang", ["--tp-size", "4", "--enable-dp-attention"], "needs --dp-size > 1"),
        ("sglang", ["--tp-size", "4", "--dp-size", "3", "--enable-dp-attention"], "divisible"),
        ("sglang", ["--tp-size", "4", "--ep-size", "8"], "must divide --tp-size 4"),
        ("sglang", ["--dp-size", "2", "--attn-dp-size", "2"], "does not combine"),
    ],
)
def test_combinations_the_engines_refuse(framework: str, args: list[str], message: str) -> None:
    with pytest.raises(BadInput, match=message):
        _parsed(framework, *args)


def test_speculative_config_parallel_keys() -> None:
    """vllm/config/speculative.py: draft TP must be 1 or TP (_verify_and_get_draft_tp), and
    'tensor_parallel_size' is not a key there (_verify_args)."""
    with pytest.raises(BadInput, match="must be 1 or the target's TP 4"):
        _parsed("vllm", "--tp", "4", speculative={"draft_tensor_parallel_size": 2})
    with pytest.raises(BadInput, match="draft_tensor_parallel_size"):
        _parsed("vllm", "--tp", "4", speculative={"tensor_parallel_size": 4})
    with pytest.raises(BadInput, match="vLLM's"):
        _parsed("sglang", speculative={"draft_tensor_parallel_size": 1})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tp", "3"], "TP 3 does not divide the 128 attention heads"),
        (["--tp", "0"], "Invalid value"),
        (["--framework", "sglang", "--tp-size", "4", "--enable-dp-attention"], "--dp-size > 1"),
        (["--framework", "sglang", "--tp-size", "8", "--ep-size", "3"], "must divide"),
    ],
)
def test_bad_layouts_exit_2_in_one_line(args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["inspect", "deepseek-v3-mtp", *args])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert message in result.output
    assert "Traceback" not in result.output
    if message != "Invalid value":  # click's own usage error carries its usage lines
        assert len(lines) == 1 and lines[0].startswith("eaglegraph: error:")


def test_inspect_json_and_view_carry_the_rank() -> None:
    args = ["inspect", "llama3.1-8b-eagle3", "--tensor-parallel-size", "2"]
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    ranks = json.loads(result.stdout)["ranks"]
    assert ranks["layout"] == {"tp": 2, "dp": 1, "ep": 1, "dp_attention": False, "draft_tp": None}
    assert ranks["target"]["kv_heads"] == 4 and ranks["fits"] is True
    view = CliRunner().invoke(cli, [*args, "--no-color"], env={"COLUMNS": "80"}).output
    assert "Per rank — TP 2 on H100 (2 ranks)" in view
    assert "max_num_seqs=" in view and ", TP 2 (2 ranks)" in " ".join(view.split())
    assert max(len(line) for line in view.splitlines()) <= 80


@pytest.mark.parametrize(
    ("command", "option", "suffix"),
    [
        ("capture", "--markdown", "md"),
        ("capture", "--snapshot", "pickle"),
        ("probe", "--markdown", "md"),
        ("memdiff", "--trace", "json"),
    ],
)
def test_a_format_without_a_rank_view_is_refused_before_any_rank(
    tmp_path: Any, command: str, option: str, suffix: str
) -> None:
    """A multi-rank run would end unable to write these: refused first, nothing written."""
    target = tmp_path / f"out.{suffix}"
    result = CliRunner().invoke(
        cli, [command, "tiny-llama-eagle3", "--tp", "2", option, str(target)]
    )
    assert result.exit_code == 2, result.output
    assert f"{option} has no view of a {command} at TP 2" in result.output
    assert not target.exists() and list(tmp_path.iterdir()) == []
