"""Config-only `inspect` never imports torch (issue 26): the plan — each speculator style's plan
changes (`rig.style_plans`), the kind's style (`rig.drafting`), the memory estimate — comes from
configs and headers alone.

Checked in a fresh interpreter, since the test process itself has imported torch: each case runs
the CLI there and reports what the interpreter imported. The cases cover every speculator style
(EAGLE, WINDOW, BLOCK), the engine and runner rows (SGLang's EAGLE worker, MRV1's proposer
with the plan's rejected-KV prediction), SGLang's unused MTP modules, config folders without
weights, and a cold preset cache (a tiny preset's first use writes its weights, torch-free).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = ROOT / "tests" / "fixtures" / "configs" / "public"
MTP = ROOT / "tests" / "fixtures" / "configs" / "mtp"

# Runs each command line (a JSON list of argument lists) in this one interpreter; prints, per
# line, its exit code, its stdout and whether torch had been imported by then.
_PROBE = """
import contextlib, io, json, sys
from eaglegraph.cli import cli
results = []
for args in json.loads(sys.argv[1]):
    out, err, code = io.StringIO(), io.StringIO(), 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cli.main(args=args, prog_name="eaglegraph")
        except SystemExit as exc:
            code = exc.code or 0
    results.append({"code": code, "out": out.getvalue(), "err": err.getvalue(),
                    "torch": "torch" in sys.modules})
print(json.dumps(results))
"""


def fresh(lines: list[list[str]], cache: Path) -> list[dict[str, object]]:
    """Run `lines` in one fresh interpreter whose preset cache is `cache`."""
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(lines)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "EAGLEGRAPH_CACHE": str(cache)},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    results: list[dict[str, object]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return results


def _pair_folder(root: Path, target: Path, draft: Path) -> Path:
    """A target/ + draft/ folder of configs only (no weights), from fixture configs."""
    for side, config in (("target", target), ("draft", draft)):
        (root / side).mkdir(parents=True)
        (root / side / "config.json").write_text(config.read_text())
    return root


# (inspect arguments, whether the planned style drafts by decodes: EAGLE does, WINDOW and BLOCK
# draft in one graph and plan no draft-decode graphs)
CASES: list[tuple[list[str], bool]] = [
    (["tiny-llama-eagle3"], True),  # a preset with weights: headers only
    (["llama3.1-8b-eagle3"], True),  # a config-only preset
    (["tiny-deepseek-mtp2", "-K", "2"], False),  # WINDOW: several MTP modules over the window
    (["tiny-qwen3-dflash"], False),  # BLOCK: DFlash, one draft graph
    (["tiny-llama-eagle3", "--framework", "sglang"], True),  # SGLang's EAGLE worker row
    (["tiny-llama-eagle3", "--behavior", "vllm-mrv1-pre-29845"], True),  # MRV1's row
    (["tiny-deepseek-mtp2", "--framework", "sglang", "-K", "3"], True),  # NextN: one module
    ([str(PUBLIC / "deepseek-v3")], True),  # a config folder: a target with its MTP layer
]
MRV1, SGLANG_MTP = 5, 6


def _decode_graphs(report: dict[str, object]) -> int:
    plan = report["plan"]
    assert isinstance(plan, dict)
    return sum(p["descriptor_count"] for p in plan["phases"] if p["phase"] == "draft_decode")


@pytest.mark.fast
def test_config_only_inspect_never_imports_torch(tmp_path: Path) -> None:
    folder = _pair_folder(
        tmp_path / "dflash-pair",
        MTP / "qwen3.6-27b-target.json",
        MTP / "specforge-qwen3-4b-dflash-draft.json",
    )
    cases = [*CASES, ([str(folder)], False)]  # a target/ + draft/ folder without weights
    lines = [["inspect", *args, "--json", "--fail-on", "never"] for args, _ in cases]
    results = fresh(lines, tmp_path / "cache")  # a cold cache: the tiny presets' weights are
    # written on first use too, torch-free (`pair.weights_file`)
    assert len(results) == len(lines)
    reports = []
    for (args, decodes), got in zip(cases, results, strict=True):
        assert got["code"] == 0, (args, got["err"])
        assert got["torch"] is False, (args, got["err"])
        report = json.loads(str(got["out"]))
        assert str(report["schema"]).startswith("eaglegraph.inspect/"), args
        assert (_decode_graphs(report) > 0) is decodes, args  # the style's plan change ran
        reports.append(report)
    # the engine and runner rows' own plan changes and findings, torch-free too
    assert "draft-decode-rejected-kv" in {f["id"] for f in reports[MRV1]["findings"]}
    assert "mtp-modules-unused" in {f["id"] for f in reports[SGLANG_MTP]["findings"]}


@pytest.mark.fast
def test_the_planning_modules_import_no_torch() -> None:
    """The torch-free homes themselves: importing them pulls in no torch (a later import of a
    torch module into one of them fails here first, naming the module)."""
    code = (
        "import sys\n"
        "import eaglegraph.rig.drafting, eaglegraph.rig.style_plans, eaglegraph.rig.inspect\n"
        "import eaglegraph.known.speculator_styles, eaglegraph.probes.inspection\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
