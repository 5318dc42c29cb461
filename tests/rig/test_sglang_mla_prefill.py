"""The token ladder of SGLang's prefill (breakable) graphs for MLA targets, per release.

`handle_gpu_memory_settings` tops the prefill graphs' ladder at chunked_prefill_size, except
under an MLA backend: 2048 through 0.5.22 (0.5.13-0.5.14: `piecewise_cuda_graph_max_tokens`,
0.5.15-0.5.18 `ServerArgs._handle_gpu_memory_settings`, 0.5.19-0.5.22 `arg_groups/
memory_hook.py::handle_gpu_memory_settings`), and min(8192, chunked_prefill_size) from 0.5.23
("cap MLA capture at 8192 tokens"). The draft's prompt prefill graphs run on that ladder.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.known.profiles import PROFILES
from eaglegraph.rig.sglang_plan import prefill_graph_tokens

pytestmark = pytest.mark.fast

MLA, MHA = "tiny-deepseek-mtp", "tiny-llama-eagle3"

# (release, model, GPU, --max-num-batched-tokens or None, extra) -> the ladder's top
ROWS = [
    ("0.5.23", MLA, "B200", None, (), 8192),  # chunked 16384 on > 160 GB: capped
    ("0.5.23", MLA, "H100", None, (), 8192),  # chunked 8192: the cap and the chunk agree
    ("0.5.23", MLA, "B200", "4096", (), 4096),  # a smaller chunk wins
    ("0.5.23", MHA, "B200", None, (), 16384),  # not MLA: the chunk
    ("0.5.20", MLA, "B200", None, (), 2048),
    ("0.5.20", MHA, "B200", None, (), 16384),
    ("0.5.13", MLA, "B200", None, ("--mode", "BREAKABLE"), 2048),  # opt-in BCG, same cap
]


def _top(release: str, model: str, gpu: str, tokens: str | None, extra: tuple[str, ...]) -> int:
    args = ["inspect", model, "--json", "--engine", f"sglang=={release}", "--gpu", gpu]
    args += ["--attention-backend", "triton", *extra]
    if tokens is not None:
        args += ["--max-num-batched-tokens", tokens]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    phases = json.loads(result.stdout)["plan"]["phases"]
    prompt = next(p for p in phases if p["phase"] == "draft_prompt_prefill")
    assert prompt["mode"] == "BREAKABLE"
    return int(prompt["descriptors"][-1][0])


@pytest.mark.parametrize(("release", "model", "gpu", "tokens", "extra", "top"), ROWS)
def test_the_prefill_ladder_top(
    release: str, model: str, gpu: str, tokens: str | None, extra: tuple[str, ...], top: int
) -> None:
    assert _top(release, model, gpu, tokens, extra) == top


def test_the_cap_is_a_release_delta_of_0_5_23() -> None:
    flagged = [
        n for n, p in PROFILES.items() if p.engine == "sglang" and p.sglang_mla_prefill_cap_8192
    ]
    assert flagged == ["sglang-current"]
    old, new = PROFILES["sglang-0.5.20"], PROFILES["sglang-current"]
    assert prefill_graph_tokens(old, 16384, mla=True) == 2048
    assert prefill_graph_tokens(new, 16384, mla=True) == 8192
    assert prefill_graph_tokens(new, 2048, mla=True) == 2048
    assert prefill_graph_tokens(new, 16384, mla=False) == 16384
