"""`--rank-deadline` and `--rank-timeout`, declared once (cli/parallel_options.py), on every
command that starts ranks (issue 28): capture, probe and memdiff accept both, refuse a bad value
while parsing (before any work), and hand them to the supervisor as one `RankLimits` (`RankRequest.limits`)."""

from __future__ import annotations

from typing import Any

import click
import pytest
from click.testing import CliRunner

from eaglegraph.cli import capture_cmd, cli, memdiff_cmd, probe_cmd

pytestmark = pytest.mark.fast

MODEL = "tiny-llama-eagle3"
COMMANDS: dict[str, click.Command] = {
    "capture": capture_cmd.command,
    "probe": probe_cmd.command,
    "memdiff": memdiff_cmd.command,
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_both_limits_are_accepted(name: str) -> None:
    args = [MODEL, "--tp", "2", "--rank-deadline", "30", "--rank-timeout", "90.5"]
    params = COMMANDS[name].make_context(name, args).params
    assert (params["rank_deadline"], params["rank_timeout"]) == (30.0, 90.5)
    defaults = COMMANDS[name].make_context(name, [MODEL]).params
    assert (defaults["rank_deadline"], defaults["rank_timeout"]) == (60.0, 3600.0)


@pytest.mark.parametrize("name", list(COMMANDS))
@pytest.mark.parametrize("flag", ["--rank-timeout", "--rank-deadline"])
@pytest.mark.parametrize("value", ["0", "0.5", "-3", "nan", "inf", "soon", "1e9"])
def test_a_bad_limit_is_refused_before_any_work(name: str, flag: str, value: str) -> None:
    result = CliRunner().invoke(cli, [name, MODEL, "--tp", "2", flag, value])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{flag}'" in result.output


def test_one_second_is_the_least_limit() -> None:
    params = capture_cmd.command.make_context("capture", [MODEL, "--rank-timeout", "1"]).params
    assert params["rank_timeout"] == 1.0


class _Started(Exception):
    """Raised by the stand-in supervisor: the limits reached it, no rank started."""


def _stop(seen: dict[str, Any]) -> Any:
    def run_ranks(request: Any, on_stage: Any = None) -> Any:
        seen.update(deadline=request.limits.deadline_s, timeout=request.limits.timeout_s)
        raise _Started

    return run_ranks


@pytest.mark.parametrize("name", ["capture", "probe"])
def test_the_limits_reach_the_supervisor(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import eaglegraph.probes.ranks as ranks

    seen: dict[str, Any] = {}
    monkeypatch.setattr(ranks, "run_ranks", _stop(seen))
    args = [name, MODEL, "--tp", "2", "--device", "cpu"]
    result = CliRunner().invoke(cli, [*args, "--rank-deadline", "7", "--rank-timeout", "11"])
    assert isinstance(result.exception, _Started), result.output
    assert seen == {"deadline": 7.0, "timeout": 11.0}


def test_memdiff_bounds_each_policys_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    """memdiff runs one set of ranks per policy: each is bounded by --rank-timeout within the
    --timeout of one capture (the smaller wins)."""
    import eaglegraph.probes.memdiff_ranks as memdiff_ranks

    seen: dict[str, Any] = {}

    def fake(spec: Any, layout: Any, against: str, limits: Any, **kw: Any) -> Any:
        seen.update(deadline=limits.deadline_s, timeout=limits.timeout_s)
        raise _Started

    monkeypatch.setattr(memdiff_ranks, "memdiff_ranks", fake)
    base = ["memdiff", MODEL, "--tp", "2", "--device", "cpu", "--rank-deadline", "7"]
    for extra, timeout in ((["--rank-timeout", "11"], 11.0), (["--timeout", "5"], 5.0)):
        seen.clear()
        result = CliRunner().invoke(cli, [*base, *extra])
        assert isinstance(result.exception, _Started), result.output
        assert seen == {"deadline": 7.0, "timeout": timeout}
