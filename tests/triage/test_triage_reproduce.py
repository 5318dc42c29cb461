"""Each reproduce suggestion for the dev reports either reproduces the failure class or says
that no reproduction exists.

The probe suggestions are run (emulated backend, the batches that need padding): a stale-buffer
verdict must come with a command whose probe shows a stale read. Commands that differ only in K
are run once: K does not change whether padded rows are replayed. The runs are independent, so
they start at once, one process each, and share the machine's cores. Mode verdicts come with
an `inspect` of the same mode, backend and profile, which must show the downgrade. Every other
verdict says in its notes why no command reproduces it (a class the rig does not rebuild, a
version whose profile carries every known fix, memory figures that need a GPU).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.pair.presets import PRESETS
from eaglegraph.triage.diagnose import triage_text

from .helpers_triage import FIXTURES

FAST = ["--device", "cpu", "--no-isolation", "--json"]
ROOT = Path(__file__).resolve().parents[2]
PROBE_TIMEOUT = 1800.0  # seconds to wait for each run, on a loaded 2-core machine
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


@pytest.fixture(scope="module")
def probe_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str, str]]:
    """Every stale-probe suggestion's exit code, stdout and stderr, run concurrently."""
    out = tmp_path_factory.mktemp("reproduce")
    procs = {}
    for n, command in enumerate(_stale_probe_commands()):
        args = [sys.executable, "-m", "eaglegraph", *shlex.split(command)[1:], *FAST]
        stdout, stderr = open(out / f"{n}.out", "w+"), open(out / f"{n}.err", "w+")  # noqa: SIM115
        procs[command] = (
            subprocess.Popen(args, cwd=ROOT, stdout=stdout, stderr=stderr),
            stdout,
            stderr,
        )
    runs = {}
    try:
        for command, (proc, stdout, stderr) in procs.items():
            code = proc.wait(timeout=PROBE_TIMEOUT)
            stdout.seek(0)
            stderr.seek(0)
            runs[command] = (code, stdout.read(), stderr.read())
    finally:
        for proc, stdout, stderr in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            stdout.close()
            stderr.close()
    return runs


@pytest.mark.parametrize("command", _probe_params())
def test_probe_suggestion_shows_a_stale_read(
    probe_runs: dict[str, tuple[int, str, str]], command: str
) -> None:
    code, stdout, stderr = probe_runs[command]
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
            if v.category == "mode-incompatibility" and "--attention-backend" in v.reproduce
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
