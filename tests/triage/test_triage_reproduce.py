"""Each reproduce suggestion for the dev reports either reproduces the failure class or says
that no reproduction exists.

The probe suggestions are run (emulated backend, the batches that need padding): a stale-buffer
verdict must come with a command whose probe shows a stale read. Commands that differ only in K
are run once: K does not change whether padded rows are replayed. Each command runs once, in
the process of the test that reads it, through the same `eaglegraph` command group the console
script calls: under `pytest -n auto` the commands spread over the workers, and no worker probes
a command another worker's test reads (a module fixture running them all did, once per worker
its tests landed on), nor imports torch again for each. Mode verdicts come with
an `inspect` of the same mode, backend and profile, which must show the downgrade. Every other
verdict says in its notes why no command reproduces it (a class the rig does not rebuild, a
version whose profile carries every known fix, memory figures that need a GPU).
"""

from __future__ import annotations

import json
import re
import shlex

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.pair.presets import PRESETS
from eaglegraph.triage.diagnose import triage_text

from .helpers_triage import FIXTURES

FAST = ["--device", "cpu", "--no-isolation", "--json"]
NO_REPRO = ("capture-failure", "hang", "acceptance-regression", "other")
SAYS_SO = ("no eaglegraph reproduction", "no CPU reproduction", "names no emulated attention")


def _reports() -> list[dict]:
    out: list[dict] = []
    for name in ("crash-logs-dev.jsonl", "crash-logs-dev2.jsonl"):
        with open(FIXTURES / name, encoding="utf-8") as fh:
            out += [json.loads(line) for line in fh if line.strip()]
    return out


REPORTS = _reports()
VERDICTS = [triage_text(f"{r['title']}\n\n```\n{r['log_excerpt']}\n```\n") for r in REPORTS]


def _stale_probe_commands() -> list[str]:
    cmds = {
        re.sub(r" -K \d+", "", v.reproduce)
        for v in VERDICTS
        if v.category == "stale-buffer-read"
        and v.reproduce
        and v.reproduce.startswith("eaglegraph probe ")
        and any(n.startswith("matches ") for n in v.notes)
    }
    return sorted(cmds)


def _preset_kind(command: str) -> str | None:
    model = shlex.split(command)[2]
    return PRESETS[model].kind if model in PRESETS else None


def _probe_params():
    for cmd in _stale_probe_commands():
        yield pytest.param(cmd, id=shlex.split(cmd)[2])


def test_stale_verdicts_name_a_hazard_profile() -> None:
    cmds = _stale_probe_commands()
    assert cmds, "no stale-buffer verdict of the dev reports matched a known hazard"
    assert all("--behavior" in c and "-current" not in c for c in cmds), cmds


def _probe_run(command: str) -> tuple[int, str, str]:
    """The suggested command's exit code, stdout and stderr, as `eaglegraph ...` on the
    command line gives them; an exception the command lets out fails the test with its
    traceback (never read as the exit code 1 of a run with findings)."""
    result = CliRunner().invoke(cli, [*shlex.split(command)[1:], *FAST], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("command", _probe_params())
def test_probe_suggestion_shows_a_stale_read(command: str) -> None:
    code, stdout, stderr = _probe_run(command)
    assert code == 1, (command, stdout[-1000:], stderr[-2000:])
    kinds = {f["kind"] for f in json.loads(stdout)["findings"]}
    assert "stale-read" in kinds, (command, kinds)


def test_suggestions_use_a_preset_of_the_reports_draft_kind() -> None:
    """An MTP report is rebuilt with an MTP preset, an EAGLE-3 one with an EAGLE-3 preset."""
    want = {"mtp": "mtp", "eagle3": "eagle3", "dflash": "dflash"}
    checked = 0
    for r, v in zip(REPORTS, VERDICTS, strict=True):
        if not v.reproduce or v.config.draft_model:
            continue
        method = (v.config.spec_method or "").lower()
        if method not in want:
            continue
        assert _preset_kind(v.reproduce) == want[method], (r["number"], v.reproduce)
        checked += 1
    assert checked >= 10


def _mode_commands() -> list[str]:
    return sorted(
        {
            v.reproduce
            for v in VERDICTS
            if v.category == "mode-incompatibility"
            and v.reproduce
            and "--attention-backend" in v.reproduce
        }
    )


@pytest.mark.parametrize("command", _mode_commands())
def test_mode_suggestion_shows_the_downgrade(command: str) -> None:
    args = [*shlex.split(command)[1:], "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code in (0, 1), (command, result.output[-2000:])
    doc = json.loads(result.stdout)
    assert doc["plan"]["resolved_mode"] != doc["plan"]["requested_mode"], command
    assert "mode-downgraded" in {f["id"] for f in doc["findings"]}, command


def test_every_other_verdict_says_why_nothing_reproduces_it() -> None:
    runnable = set(_stale_probe_commands()) | set(_mode_commands())
    for r, v in zip(REPORTS, VERDICTS, strict=True):
        cmd = re.sub(r" -K \d+", "", v.reproduce or "")
        if cmd in runnable or v.reproduce in runnable:
            continue
        assert any(s in n for n in v.notes for s in SAYS_SO), (r["number"], v.category, v.notes)


def test_classes_without_a_reproduction_say_so() -> None:
    for v in VERDICTS:
        if v.category in NO_REPRO:
            assert any("no eaglegraph reproduction" in n for n in v.notes), (v.category, v.notes)
