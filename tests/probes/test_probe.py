"""The probe finds the historic stale/out-of-bounds reads and stays silent on current code."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.known import PROFILES
from eaglegraph.probes.probing import probe
from eaglegraph.probes.spec import resolve_run
from eaglegraph.results.probe import ProbeRun

CPU = {"device": "cpu", "max_model_len": 256}
# batch 3 pads to the 4-request graphs, the 4-request dirtying step runs the 16-token ones: the
# graphs the probe replays under the default sizes too, without capturing the rest
SIZES = (4, 16)


def _probe(behavior: str, backend: str, modes: list[str], batches: list[int] | None = None,
           pool: str | None = None, isolate: bool = False, rig: dict[str, Any] | None = None,
           **plan: Any) -> ProbeRun:  # fmt: skip
    kwargs = {
        "behavior": behavior,
        "attention_backend": backend,
        "max_num_seqs": 4,
        "num_speculative_tokens": 3,
        **({"capture_sizes": SIZES} if rig is None else {}),  # CUDA: every default size
    }
    spec = resolve_run("tiny-llama-eagle3", plan={**kwargs, **plan}, pool=pool, **(rig or CPU))
    return probe(spec, modes=modes, batches=batches, isolate=isolate, timeout=600)


def _kinds(run: ProbeRun) -> set[tuple[str | None, str | None, str | None]]:
    return {(f.kind, f.phase, f.buffer) for f in run.findings}


def test_pre_39773_flashinfer_piecewise_draft_decode_reads_stale_indptr() -> None:
    run = _probe("vllm-pre-39773", "flashinfer", ["PIECEWISE"], [3])
    assert run.cases[0].status == "ok"
    assert ("stale-read", "draft_decode", "draft.kv_indptr") in _kinds(run)
    assert ("stale-read", "draft_decode", "draft.last_page_len") in _kinds(run)
    f = next(f for f in run.findings if f.buffer == "draft.kv_indptr")
    assert f.ref == "vllm#39773" and f.descriptor == "PIECEWISE(tokens=4, reqs=—)"
    assert f.batch == "3 reqs / 3 tokens" and f.kernel == "csr_paged_decode"
    row = next(r for r in run.matrix if r.buffer == "draft.kv_indptr")
    assert row.reads == {"draft_decode": 4} and row.after_step == "stale"


def test_pre_39773_full_draft_prefill_gathers_out_of_bounds() -> None:
    run = _probe("vllm-pre-39773", "flash_attn", ["FULL_AND_PIECEWISE"], [3])
    assert _kinds(run) == {("oob-read", "draft_prefill", "eagle.last_token_indices")}
    f = run.findings[0]
    assert (
        f.ref == "vllm#39773"
        and f.kernel == "gather_rows"
        and f.descriptor == "FULL(tokens=16, reqs=4, uniform=4)"
    )


@pytest.mark.parametrize("backend", ["flash_attn", "flashinfer"])
def test_current_vllm_is_clean_in_every_mode(backend: str) -> None:
    run = _probe("vllm-current", backend, ["all"], [3])
    assert [c.status for c in run.cases] == ["ok"] * 6
    assert run.findings == []
    padded = [
        c
        for c in run.cases
        for phase, d in c.descriptors.items()
        if not d.startswith("NONE")
        and int(re.search(r"tokens=(\d+)", d).group(1)) > c.counts[phase][1]  # type: ignore[union-attr]
    ]
    assert padded, "no case replayed a padded graph"
    assert (
        next(r for r in run.matrix if r.buffer == "eagle.last_token_indices").after_step == "filled"
    )


@pytest.mark.parametrize(("k", "sizes"), [(1, (2, 8)), (5, (6, 24))])
def test_current_vllm_is_clean_at_k_1_and_5_through_every_acceptance_path(
    k: int, sizes: tuple[int, ...]
) -> None:
    run = _probe("vllm-current", "flash_attn", ["FULL_AND_PIECEWISE"], [3],
                 num_speculative_tokens=k, capture_sizes=sizes)  # fmt: skip
    (case,) = run.cases
    assert case.status == "ok", case.stderr
    assert run.findings == []
    assert case.reproduction["num_speculative_tokens"] == k
    accepted = case.reproduction["accepted"]
    assert {0, k} <= set(accepted), accepted  # full and zero acceptance in the probed step
    if k > 1:
        assert any(0 < a < k for a in accepted), accepted
    assert case.descriptors["target"].startswith("FULL"), case.descriptors  # padded


def test_sglang_pre_10892_reads_stale_positions_and_current_is_clean() -> None:
    old = _probe("sglang-pre-10892", "flash_attn", ["FULL"], [3], capture_sizes=(4, 8))
    assert ("stale-read", "draft_decode", "sglang.draft_positions") in _kinds(old)
    assert (
        next(f for f in old.findings if f.buffer == "sglang.draft_positions").ref == "sglang#10892"
    )
    new = _probe("sglang-current", "flash_attn", ["FULL"], [3], capture_sizes=(4, 8))
    assert new.findings == []


def test_isolation_turns_crashes_and_hangs_into_findings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EAGLEGRAPH_PROBE_FAULT", "abort:none-b3")
    run = _probe("vllm-current", "flash_attn", ["NONE", "FULL"], [3], isolate=True)
    statuses = {c.name: c.status for c in run.cases}
    assert statuses == {"none-b3": "crash", "full-b3": "ok"}  # the run went on
    crash = next(f for f in run.findings if f.kind == "crash")
    assert "illegal memory access" in (crash.evidence or "")
    monkeypatch.setenv("EAGLEGRAPH_PROBE_FAULT", "hang:none-b3")
    spec = resolve_run(
        "tiny-llama-eagle3", plan={"max_num_seqs": 4, "num_speculative_tokens": 3}, **CPU
    )
    run = probe(spec, modes=["NONE"], batches=[3], isolate=True, timeout=5)  # hangs at once
    assert run.cases[0].status == "timeout" and run.findings[0].kind == "crash"


def test_probe_cli_json_and_exit_codes() -> None:
    result = CliRunner().invoke(
        cli,
        ["probe", "tiny-llama-eagle3", "--behavior", "vllm-pre-39773", "--attention-backend", "flashinfer",
         "--mode", "PIECEWISE", "--batches", "3", "--device", "cpu", "--max-model-len", "256",
         "--no-isolation", "--json"],
    )  # fmt: skip
    assert result.exit_code == 1, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == "eaglegraph.probe/1" and doc["backend"] == "emulated"
    assert doc["cases"][0]["status"] == "ok"
    for f in doc["findings"]:
        assert {"kind", "phase", "buffer", "mode", "ref"} <= set(f)
    result = CliRunner().invoke(cli, ["probe", "--list-behaviors", "--json"])
    names = {b["name"] for b in json.loads(result.stdout)["behaviors"]}
    assert names == set(PROFILES)
    assert {
        "vllm-pre-39773",
        "vllm-pre-50065",
        "vllm-0.22",
        "vllm-0.23",
        "vllm-current",
        "sglang-pre-10892",
    } <= names
    result = CliRunner().invoke(
        cli,
        ["probe", "tiny-llama-eagle3", "--mode", "FULL", "--framework", "sglang", "--mode", "x"],
    )
    assert result.exit_code == 2


@pytest.mark.cuda
def test_cuda_probe_required_results() -> None:
    gpu = {"device": "cuda", "max_model_len": 256}
    stale = _probe("vllm-pre-39773", "flashinfer", ["PIECEWISE"], [3], rig=gpu, isolate=True)
    assert ("stale-read", "draft_decode", "draft.kv_indptr") in _kinds(stale)
    oob = _probe("vllm-pre-39773", "flash_attn", ["FULL_AND_PIECEWISE"], [3], rig=gpu)
    assert ("oob-read", "draft_prefill", "eagle.last_token_indices") in _kinds(oob)
    old = _probe("sglang-pre-10892", "flash_attn", ["FULL"], [3], rig=gpu, capture_sizes=(4, 8))
    assert ("stale-read", "draft_decode", "sglang.draft_positions") in _kinds(old)
    assert (
        _probe(
            "sglang-current", "flash_attn", ["FULL"], [3], rig=gpu, capture_sizes=(4, 8)
        ).findings
        == []
    )


# every pool policy on real graphs (on the emulated backend a pool is a label: nothing is shared,
# so the CPU tests probe under the default policy only)
@pytest.mark.cuda
@pytest.mark.parametrize("pool", ["shared", "dedicated", "per-graph"])
@pytest.mark.parametrize("backend", ["flash_attn", "flashinfer"])
def test_cuda_current_is_clean(backend: str, pool: str) -> None:
    run = _probe(
        "vllm-current",
        backend,
        ["all"],
        None,
        pool=pool,
        rig={"device": "cuda", "max_model_len": 256},
    )
    assert all(c.status == "ok" for c in run.cases), [(c.name, c.error) for c in run.cases]
    assert run.findings == [], run.findings
