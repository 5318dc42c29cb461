"""The reference differential for every draft kind (issue 27): what it compares is stated in
the run, the presets stay clean under the live schedule, and a multi-module MTP window whose
per-request state goes astray is found by its draft KV."""

from __future__ import annotations

import pytest

from benchmarks.bench_mutants import probe_once
from benchmarks.mutants import by_name, planted

KINDS = [  # (preset, K, what the statement must say about draft KV)
    ("tiny-deepseek-mtp2", 2, "committed prefix"),
    ("tiny-qwen3-dflash", 3, "committed prefix"),
    ("tiny-deepseek-mtp", 3, "the draft decodes wrote"),
]


@pytest.mark.parametrize(("preset", "k", "says"), KINDS)
def test_clean_and_stated(preset: str, k: int, says: str) -> None:
    run = probe_once("flash_attn", "NONE", 3, preset=preset, num_speculative_tokens=k)
    assert all(c.status == "ok" for c in run.cases), [c.stderr for c in run.cases]
    assert not run.findings, [f.message for f in run.findings]
    assert any("draft K/V" in line and says in line for line in run.reference_compares)
    assert any(line.startswith("draft tokens") for line in run.reference_compares)


@pytest.mark.parametrize("name", ["mtp-cache-by-row", "mtp-window-not-cached"])
def test_mtp_window_mutants_found(name: str) -> None:
    mutant = by_name(name)
    with planted(mutant):
        run = probe_once("flash_attn", "NONE", 3, preset=mutant.preset, **mutant.plan)
    assert run.findings, f"{name} was not found"
    assert any(f.buffer in mutant.buffers and f.phase and f.kernel for f in run.findings), [
        (f.kind, f.phase, f.buffer) for f in run.findings
    ]
