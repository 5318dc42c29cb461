"""CLI conventions: --version, --help everywhere, --json documents, exit codes, no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from eaglegraph import __version__
from eaglegraph.cli import _COMMANDS, cli


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_version() -> None:
    code, out, _ = run("--version")
    assert code == 0 and __version__ in out


@pytest.mark.parametrize("name", sorted(_COMMANDS))
def test_help_for_every_command(name: str) -> None:
    code, out, _ = run(name, "--help")
    assert code == 0, out
    assert "--json" in out and "--no-color" in out


def test_python_dash_m() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "eaglegraph", "--version"], capture_output=True, text=True
    )
    assert proc.returncode == 0 and __version__ in proc.stdout


def test_inspect_json_schema() -> None:
    code, out, _ = run("inspect", "tiny-llama-eagle3", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == "eaglegraph.inspect/1"
    for side in ("target", "draft"):
        assert doc[side]["architecture"]
        geometry = doc[side]["geometry"]
        for key in (
            "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
            "head_dim", "vocab_size", "intermediate_size", "max_position_embeddings",
            "tie_word_embeddings", "dtype",
        ):  # fmt: skip
            assert key in geometry
    draft = doc["draft"]
    assert draft["kind"] == "eagle3" and draft["style"] == "specforge"
    assert draft["fc_in_features"] == 192 and draft["draft_vocab_size"] == 128
    assert "aux_layer_ids" in draft and draft["aux_layer_ids_effective"] == [2, 4, 5]
    assert doc["plan"]["capture_sizes"][0] == 1  # raw sizes since per-descriptor rounding
    assert doc["plan"]["behavior"] == "vllm-current" and doc["plan"]["gpu"]["name"] == "H100"
    for phase in doc["plan"]["phases"]:
        assert phase["graph_count"] == len(phase["descriptors"])
        assert all(len(d) == 2 and (d[1] is None or d[1] >= 1) for d in phase["descriptors"])
    assert [p["phase"] for p in doc["plan"]["phases"]] == [
        "target",
        "draft_prefill",
        "draft_decode",
    ]
    assert all("mode" in p for p in doc["plan"]["phases"])
    for f in doc["findings"]:
        assert {"id", "severity", "message", "ref"} <= set(f)


def test_inspect_plan_options_reach_the_plan() -> None:
    code, out, _ = run(
        "inspect", "tiny-llama-eagle1", "--json", "-K", "5", "--attention-backend", "flashinfer",
        "--behavior", "vllm-pre-39773", "--max-num-seqs", "8",
    )  # fmt: skip
    doc = json.loads(out)
    plan = doc["plan"]
    assert plan["num_speculative_tokens"] == 5 and plan["resolved_mode"] == "PIECEWISE"
    assert all(s % 6 == 0 for s in plan["capture_sizes"])
    assert {p["phase"]: p["mode"] for p in plan["phases"]}["draft_decode"] == "PIECEWISE"
    ids = {f["id"] for f in doc["findings"]}
    assert "piecewise-draft-decode" in ids
    assert code == 1  # an error finding at the default --fail-on error
    code, _, _ = run("inspect", "tiny-llama-eagle1", "--attention-backend", "flashinfer",
                     "--behavior", "vllm-pre-39773", "--fail-on", "never")  # fmt: skip
    assert code == 0


def test_inspect_rich_view_renders_every_section() -> None:
    code, out, _ = run("inspect", "tiny-qwen3-eagle3", "--no-color")
    assert code == 0
    for text in (
        "Qwen3ForCausalLM",
        "eagle3",
        "capture sizes",
        "Capture plan",
        "Memory (estimate",
        "Findings",
    ):
        assert text in out
    assert "\x1b[" not in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["inspect", "/nonexistent/model"], "neither an existing path nor a preset"),
        (["inspect"], "give a MODEL_DIR"),
        (["inspect", "tiny-llama-eagle1", "--mode", "turbo"], "unknown cudagraph mode"),
        (["inspect", "tiny-llama-eagle1", "--compilation-config", "{bad"], "invalid JSON"),
        (["inspect", "tiny-llama-eagle1", "-K", "0"], "must be a positive integer"),
        (["scaffold", "x"], "give DIRECTORY and --preset"),
    ],
)
def test_bad_input_is_one_line_exit_2(args: list[str], message: str) -> None:
    code, _, err = run(*args)
    assert code == 2
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_invalid_config_json_reports_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"hidden_size": 64,,}')
    code, _, err = run("inspect", str(tmp_path))
    assert code == 2 and "line 1, column 20" in err


def test_scaffold_then_inspect(tmp_path: Path) -> None:
    dest = tmp_path / "pair"
    code, out, _ = run("scaffold", str(dest), "--preset", "tiny-llama-eagle1", "--json")
    assert code == 0 and json.loads(out)["preset"] == "tiny-llama-eagle1"
    code, out, _ = run("inspect", str(dest), "--json")
    assert code == 0 and json.loads(out)["draft"]["kind"] == "eagle1"
    code, _, err = run("scaffold", str(dest), "--preset", "tiny-llama-eagle1")
    assert code == 2 and "not empty" in err
    code, out, _ = run("scaffold", "--list", "--json")
    assert {p["name"] for p in json.loads(out)["presets"]} >= {
        "tiny-llama-eagle3",
        "llama3.1-8b-eagle1",
    }
