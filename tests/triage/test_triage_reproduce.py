"""Each reproduce suggestion for the dev reports either reproduces the failure class or says
that no reproduction exists.

The probe suggestions are run (emulated backend, the batches that need padding): a stale-buffer verdict
must come with a command whose probe shows a stale read. Commands that differ only in K are run
once: K does not change whether padded rows are replayed.
"""

from __future__ import annotations

import json
import re
import shlex

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.triage.diagnose import triage_text

from .helpers_triage import FIXTURES

FAST = ["--device", "cpu", "--no-isolation", "--json"]
NO_REPRO = ("capture-failure", "hang", "acceptance-regression", "other")


def _reports() -> list[dict]:
    out: list[dict] = []
    for name in ("crash-logs-dev.jsonl", "crash-logs-dev2.jsonl"):
        with open(FIXTURES / name, encoding="utf-8") as fh:
            out += [json.loads(line) for line in fh if line.strip()]
    return out


def _verdicts() -> list:
    return [triage_text(f"{r['title']}\n\n```\n{r['log_excerpt']}\n```\n") for r in _reports()]


VERDICTS = _verdicts()


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


def test_stale_verdicts_name_a_hazard_profile() -> None:
    cmds = _stale_probe_commands()
    assert cmds, "no stale-buffer verdict of the dev reports matched a known hazard"
    assert all("--behavior" in c and "-current" not in c for c in cmds), cmds


@pytest.mark.parametrize("command", _stale_probe_commands())
def test_probe_suggestion_shows_a_stale_read(command: str) -> None:
    args = shlex.split(command)[1:] + FAST
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, (command, result.output[-2000:])
    kinds = {f["kind"] for f in json.loads(result.stdout)["findings"]}
    assert "stale-read" in kinds, (command, kinds)


def test_classes_without_a_reproduction_say_so() -> None:
    for v in VERDICTS:
        if v.category in NO_REPRO:
            assert any("no eaglegraph reproduction" in n for n in v.notes), (v.category, v.notes)
