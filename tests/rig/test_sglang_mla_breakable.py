"""SGLang 0.5.14-0.5.17 turned the default breakable prefill graphs off under an MLA backend.

`ServerArgs._apply_cuda_graph_compatibility` runs `_disable_breakable_cudagraph_if_incompatible`
when the prefill backend is breakable and the user did not set it; its first rule, "MLA
attention" (`use_mla_backend()`; 0.5.17: "MLA attention (non-DSA)"), sets the prefill backend to
DISABLED. 0.5.18 dropped the rule (server_args.py; from 0.5.19 `arg_groups/cuda_graph_hook.py`
has no MLA rule). Breakable prefill graphs are the default from 0.5.15, so the rule shows in
0.5.15-0.5.17: an MLA draft there has no prefill graphs unless the mode is set explicitly.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli

pytestmark = pytest.mark.fast

MLA, MHA = "tiny-deepseek-mtp", "tiny-llama-eagle3"


def _plan(model: str, release: str, *extra: str) -> dict[str, Any]:
    args = ["inspect", model, "--json", "--engine", f"sglang=={release}", "--gpu", "H100"]
    result = CliRunner().invoke(cli, [*args, *extra])
    assert result.exit_code == 0, result.output
    plan: dict[str, Any] = json.loads(result.stdout)["plan"]
    return plan


def _prefill_modes(plan: dict[str, Any]) -> dict[str, str]:
    return {p["phase"]: p["mode"] for p in plan["phases"] if "prefill" in p["phase"]}


# (release, model, breakable prefill graphs by default)
ROWS = [
    ("0.5.14", MLA, False),  # the rule, but no default breakable graphs yet
    ("0.5.15", MLA, False),
    ("0.5.16", MLA, False),
    ("0.5.17", MLA, False),
    ("0.5.18", MLA, True),
    ("0.5.19", MLA, True),
    ("0.5.23", MLA, True),
    ("0.5.16", MHA, True),  # not MLA: the 0.5.15 default
    ("0.5.18", MHA, True),
]


@pytest.mark.parametrize(("release", "model", "breakable"), ROWS)
def test_default_breakable_prefill_per_release(release: str, model: str, breakable: bool) -> None:
    plan = _plan(model, release)
    assert plan["breakable"] is breakable
    modes = _prefill_modes(plan)
    if breakable:
        assert modes["draft_prompt_prefill"] == "BREAKABLE"
    else:
        assert "draft_prompt_prefill" not in modes
        assert modes["draft_prefill"] != "BREAKABLE"


def test_an_explicit_breakable_mode_skips_the_rule() -> None:
    plan = _plan(MLA, "0.5.16", "--mode", "BREAKABLE")
    assert plan["breakable"] is True
    assert _prefill_modes(plan)["draft_prompt_prefill"] == "BREAKABLE"


def test_0_5_18_is_its_own_profile() -> None:
    assert _plan(MLA, "0.5.17")["behavior"] == "sglang-0.5.15"
    assert _plan(MLA, "0.5.18")["behavior"] == "sglang-0.5.18"
    assert _plan(MLA, "0.5.19")["behavior"] == "sglang-0.5.18"
    assert _plan(MLA, "0.5.20")["behavior"] == "sglang-0.5.20"
