"""Every `eaglegraph` command triage suggests over the dev sets runs as printed on a fresh machine.

Fast: each command parses with the real CLI (no exit 2), names a built-in preset as MODEL_DIR
(never a path or a Hugging Face id from the log), carries `--framework sglang` for SGLang logs,
and one report's commands share one profile. Slow: the plan behind every distinct command
(preset, framework, runner, profile, mode, backend, K) is built by running `inspect` with the
same options, in-process, and must exit 0 or 1.
"""

from __future__ import annotations

import shlex
from functools import cache
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.known.profiles import PROFILES
from eaglegraph.pair.presets import PRESETS
from eaglegraph.results.triage import TriageResult
from eaglegraph.triage.diagnose import triage_text

from .helpers_triage import DEV_SETS, eval_script

VERBS = ("inspect", "probe", "capture")
# Options of probe/capture that inspect does not take (what they run, not what they plan).
RUN_ONLY = {"--pool": 1, "--predict-memory": 0}


def _reports() -> list[dict]:
    ev = eval_script()
    return [r for path in DEV_SETS for r in ev.load(path)]


@cache
def _results() -> list[tuple[dict, TriageResult]]:
    out = []
    for r in _reports():
        out.append((r, triage_text(eval_script().as_ticket(r))))
        out.append((r, triage_text(r["log_excerpt"])))
    return out


def _commands(res: TriageResult) -> list[list[str]]:
    return [shlex.split(c) for c in (res.reproduce, *res.reproduce_also) if c]


def _option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def test_the_dev_sets_are_all_read() -> None:
    assert len(_reports()) >= 140


def test_every_command_parses_and_names_a_preset() -> None:
    for r, res in _results():
        for argv in _commands(res):
            assert argv[0] == "eaglegraph" and argv[1] in VERBS, argv
            assert argv[2] in PRESETS, (r["url"], argv)
            command = cli.commands.get(argv[1]) or cli.get_command(click.Context(cli), argv[1])
            assert command is not None
            command.make_context(argv[1], argv[2:])  # a UsageError here is an exit 2
            behavior = _option(argv, "--behavior")
            assert behavior is None or behavior in PROFILES, argv


def test_sglang_reports_rebuild_sglang() -> None:
    for r, res in _results():
        if res.framework != "sglang":
            continue
        for argv in _commands(res):
            assert _option(argv, "--framework") == "sglang", (r["url"], argv)


def test_one_profile_per_report() -> None:
    for r, res in _results():
        behaviors = {_option(argv, "--behavior") for argv in _commands(res)}
        assert len(behaviors) <= 1, (r["url"], behaviors)


def test_no_command_for_a_fault_in_an_engine_kernel() -> None:
    res = triage_text(
        "[TensorRT-LLM][ERROR] Assertion failed: Error occurred when running GEMM! "
        "(cutlass_kernel_file_gemm_grouped_sm90.cu:221)\n"
    )
    assert res.reproduce is None and res.reproduce_also == []
    assert any("engine kernel" in n for n in res.notes)


def test_deepseek_mtp_report_gets_an_mtp_preset() -> None:
    res = triage_text(
        "vllm serve deepseek-ai/DeepSeek-V3 --speculative-config "
        '\'{"method": "deepseek_mtp", "num_speculative_tokens": 1}\'\n'
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    for argv in _commands(res):
        assert PRESETS[argv[2]].kind == "mtp", argv


def _plan_of(argv: list[str]) -> tuple[str, ...]:
    """The inspect line that plans what `argv` runs (its options minus run-only ones)."""
    out = ["inspect", argv[2]]
    rest = argv[3:]
    i = 0
    while i < len(rest):
        if rest[i] in RUN_ONLY:
            i += 1 + RUN_ONLY[rest[i]]
            continue
        out.append(rest[i])
        i += 1
    return tuple(out)


@pytest.mark.slow
def test_every_plan_behind_a_command_builds(tmp_path: Path) -> None:
    plans = sorted({_plan_of(argv) for _, res in _results() for argv in _commands(res)})
    assert plans
    runner = CliRunner()
    failing = []
    for plan in plans:
        done = runner.invoke(cli, [*plan, "--json"], catch_exceptions=True)
        if done.exit_code not in (0, 1):
            failing.append((plan, done.exit_code, (done.output or "")[-300:]))
    assert not failing, failing
