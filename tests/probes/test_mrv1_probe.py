"""The probe under vLLM's V1 GPU model runner (MRV1): it finds the MRV1 drafting hazard under
the releases that had it and is clean on current MRV1 semantics.

`draft-decode-rejected-kv` (vllm#29845, in 0.14.0): 0.11.0-0.13.0
`vllm/v1/spec_decode/eagle.py::EagleProposer.propose` grows the padded drafter batch's seq_lens
by one per draft decode without dropping the rejected drafts; 0.14.0 subtracts
`num_rejected_tokens_gpu` first.
"""

from __future__ import annotations

from typing import Any

import pytest

from eaglegraph.known.runners import ModelRunner
from eaglegraph.probes.probing import probe
from eaglegraph.probes.spec import resolve_run
from eaglegraph.results.probe import ProbeRun

CPU: dict[str, Any] = {"device": "cpu", "max_model_len": 256}
SIZES = (4, 16)  # batch 3 pads to the 4-token drafter graphs; the dirtying batch runs 16


def _probe(behavior: str | None, backend: str, modes: list[str], **plan: Any) -> ProbeRun:
    kwargs = {
        "behavior": behavior, "attention_backend": backend, "max_num_seqs": 4,
        "num_speculative_tokens": 3, "capture_sizes": SIZES, **plan,
    }  # fmt: skip
    spec = resolve_run("tiny-llama-eagle3", plan=kwargs, **CPU)
    return probe(spec, modes=modes, batches=[3], isolate=False, timeout=600)


@pytest.mark.slow
def test_pre_29845_draft_decodes_attend_the_rejected_drafts() -> None:
    run = _probe("vllm-mrv1-pre-29845", "flash_attn", ["FULL_AND_PIECEWISE"])
    assert [c.status for c in run.cases] == ["ok"]
    seq_lens = [f for f in run.findings if f.buffer == "eagle.seq_lens"]
    assert seq_lens, [(f.id, f.buffer) for f in run.findings]
    for f in seq_lens:
        assert f.phase == "draft_decode" and f.hazard == "draft-decode-rejected-kv"
        assert f.ref is not None and f.ref.startswith("vllm#29845")
    # the drafts it gives are not the dense reference's
    assert any(f.kind == "reference-divergence" for f in run.findings)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["flash_attn", "flashinfer"])
def test_current_mrv1_is_clean(backend: str) -> None:
    run = _probe(None, backend, ["FULL_AND_PIECEWISE", "PIECEWISE"], runner=ModelRunner.MRV1)
    assert [c.status for c in run.cases] == ["ok", "ok"]
    assert run.findings == []
    drafts = [d for c in run.cases for p, d in c.descriptors.items() if p.startswith("draft")]
    assert any(d.startswith("PIECEWISE") for d in drafts), drafts  # padded drafter replays
