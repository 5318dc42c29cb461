"""Saved runs for the explorer tests, made by the commands themselves on CPU.

The probe is the one with a finding (vLLM before #39773's fix, FlashInfer, PIECEWISE), kept to
one padded batch and no worker process so the suite stays fast; inspect and triage are cheap.
Capture and memdiff come from the hand-built CUDA-shaped runs in `runs.py` (memdiff needs CUDA).
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.serial import atomic_write, document, dumps
from tests.reports.runs import cuda_run, memdiff_run

PROBE_ARGS = [
    "probe",
    "tiny-llama-eagle3",
    "--behavior",
    "vllm-pre-39773",
    "--attention-backend",
    "flashinfer",
    "--mode",
    "PIECEWISE",
    "--batches",
    "1",
    "--no-isolation",
]
TRIAGE_LOG = Path(__file__).parents[1] / "triage" / "logs" / "vllm_mrv2_stale_ima.log"


def _cli(args: list[str], out: Path) -> Path:
    result = CliRunner().invoke(cli, ["--json", *args])
    assert result.exit_code in (0, 1), result.output
    out.write_text(result.stdout, encoding="utf-8")
    return out


def make_runs(folder: Path) -> dict[str, Path]:
    """Every kind of saved run the explorer opens, written under `folder`."""
    runs = {
        "probe": _cli([*PROBE_ARGS], folder / "probe.json"),
        "inspect": _cli(["inspect", "tiny-llama-eagle3"], folder / "inspect.json"),
        "triage": _cli(["triage", str(TRIAGE_LOG)], folder / "triage.json"),
    }
    for name, run in (("capture", cuda_run()), ("memdiff", memdiff_run())):
        from eaglegraph.results import schema_of

        runs[name] = atomic_write(folder / f"{name}.json", dumps(document(schema_of(run), run)))
    return runs
