"""`capture` on a CPU gives a quick answer by default, says what it left out, and shows
progress that knows its total even when stderr is not a terminal."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.rig.options import CPU_CAPTURE_MAX_NUM_SEQS


def test_cpu_capture_is_quick_and_says_what_it_left_out() -> None:
    result = CliRunner().invoke(
        cli,
        ["capture", "tiny-llama-eagle3", "--device", "cpu", "--json"],
        env={"COLUMNS": "80", "EAGLEGRAPH_NO_PROGRESS": None},
    )
    assert result.exit_code == 0, result.stderr
    run = json.loads(result.stdout)
    assert run["config"]["max_num_seqs"] == CPU_CAPTURE_MAX_NUM_SEQS["vllm"]
    quick = [f for f in run["findings"] if f["id"] == "cpu-quick-plan"]
    assert len(quick) == 1 and "--full-plan" in quick[0]["fix"]
    full = int(re.search(r"capture all (\d+)", quick[0]["fix"]).group(1))  # type: ignore[union-attr]
    assert full > run["totals"]["graphs"] == len(run["events"])
    # a line per stage and per phase on stderr, each with the known total
    lines = [line for line in result.stderr.splitlines() if line.startswith("capture: ")]
    total = run["totals"]["graphs"]
    assert any(line.startswith("capture: loading the pair") for line in lines)
    for phase in ("target", "draft_prefill", "draft_decode"):
        assert any(line.startswith(f"capture: {phase}: ") for line in lines), lines
    assert all(f"/{total}]" in line for line in lines)
    assert "eaglegraph: note: quick CPU answer" in result.stderr  # --json hides the view
