"""Every finding names a buffer, a phase and a kernel — a case that dies included.

On CUDA a bug that faults kills the context, so nothing can be asked afterwards: the checks
that attribute slot bugs run before the phase's kernels (their result read back first), and
a dead worker's last checkpoint (stage, step, phase, last kernel launched) names where it was.
The planted slot bugs must also stay on the device: CUDA refuses a host read inside a graph
capture, which is how three of them once turned into anonymous crash findings on the H100.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest
import torch
from torch.overrides import TorchFunctionMode

from benchmarks.mutants import by_name, planted
from eaglegraph.probes.cases import ProbeCase
from eaglegraph.probes.probing import run_cases
from eaglegraph.probes.spec import resolve_run
from eaglegraph.probes.stale_read import build_findings
from eaglegraph.rig.step import Rig

_HOST_READS = {"__int__", "__index__", "__bool__", "__float__", "item", "tolist", "cpu", "numpy"}


class _NoHostReads(TorchFunctionMode):
    """What a CUDA stream capture refuses: reading a device value on the host (a function
    mode: the rig captures under inference mode, which a dispatch mode does not see)."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if getattr(func, "__name__", "") in _HOST_READS:
            raise RuntimeError("operation not permitted when stream is capturing")
        return func(*args, **(kwargs or {}))


class _StrictCapture:
    """A capture tracer under which every emulated capture runs as a CUDA capture would."""

    @contextmanager
    def scope(self, *args: Any) -> Iterator[None]:
        with _NoHostReads():
            yield


def _spec(mode: str) -> Any:
    return resolve_run(
        "tiny-llama-eagle3",
        plan={"max_num_seqs": 4, "num_speculative_tokens": 3, "mode": mode, "capture_sizes": (4,)},
        device="cpu", max_model_len=256,
    )  # fmt: skip


SLOT_MUTANTS = ["slot-one-off", "pad-row-writes-real-slot", "pad-slot-zero",
                "decode-pad-row-writes-committed-kv"]  # fmt: skip


def test_slot_mutants_capture_like_cuda() -> None:
    """The unmutated rig, then every slot mutant at once (each wraps the one before), capture
    with host reads refused (the fused draft decode computes its slots inside its graph)."""
    spec = _spec("FULL_AND_PIECEWISE")
    for names in ([], SLOT_MUTANTS):
        with ExitStack() as stack:
            for name in names:
                stack.enter_context(planted(by_name(name)))
            rig = Rig(spec.open_pair(), spec.rig_config(guard=True))
            assert rig.fused_draft_decode
            events, _ = rig.capture(tracer=_StrictCapture())
            assert events and all(e.status == "ok" for e in events), (names, events)


def test_host_read_under_capture_is_refused() -> None:
    """The strict tracer does refuse what CUDA refuses (so the test above can fail)."""
    with torch.inference_mode():
        t = torch.ones(2)
        with pytest.raises(RuntimeError, match="capturing"), _NoHostReads():
            int(t[0])


def test_dead_worker_is_named_by_its_checkpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker killed inside the draft decode's KV write (as an illegal address would) is a
    crash finding with that phase, that kernel and the buffer the kernel reads."""
    monkeypatch.setenv("EAGLEGRAPH_PROBE_FAULT", "abort-in:write_kv@draft_decode")
    case = ProbeCase("none-b3", _spec("NONE"), large=4, batch=3)
    (result,) = run_cases([case], workers=1, timeout=300)
    assert result.status == "crash"
    cp = result.checkpoint
    assert cp is not None and cp["stage"] == "step" and cp["step"] == 0, cp
    (finding,) = build_findings([result])
    assert finding.kind == "crash"
    assert (finding.phase, finding.kernel, finding.buffer) == (
        "draft_decode",
        "write_kv",
        "slot_mapping",
    )
    assert "last kernel launched: write_kv" in finding.message


def test_raised_fault_is_named_by_its_checkpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process, a fault raised at a launch (IndexError on a CPU, a device assert on CUDA)
    leaves the checkpoint of that launch: phase, step, kernel and what it reads."""
    monkeypatch.setenv("EAGLEGRAPH_PROBE_FAULT", "oob-in:write_kv@draft_decode")
    case = ProbeCase("none-b3", _spec("NONE"), large=4, batch=3)
    (result,) = run_cases([case], isolate=False)
    assert result.status == "error" and "IndexError" in (result.error or ""), result.error
    (finding,) = build_findings([result])
    assert (finding.phase, finding.kernel, finding.buffer) == (
        "draft_decode",
        "write_kv",
        "slot_mapping",
    )
    assert "in draft_decode of step 0 (draft step 1)" in finding.message, finding.message


@pytest.mark.cuda
def test_cuda_slot_mutants_capture() -> None:
    """On a GPU: the real stream capture accepts every slot mutant (no host reads)."""
    spec = resolve_run(
        "tiny-llama-eagle3",
        plan={"max_num_seqs": 4, "num_speculative_tokens": 3, "mode": "FULL_AND_PIECEWISE",
              "capture_sizes": (4, 16)},
        device="cuda", max_model_len=256,
    )  # fmt: skip
    for name in SLOT_MUTANTS:
        with planted(by_name(name)):
            rig = Rig(spec.open_pair(), spec.rig_config(guard=True))
            events, _ = rig.capture()
            assert all(e.status == "ok" for e in events), (name, events)


@pytest.mark.cuda
@pytest.mark.parametrize("fault", ["oob-in", "abort-in"])
def test_cuda_device_fault_is_named(monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    """On a GPU: a device assert (the context dies) or a killed worker in the draft decode's
    KV write is a finding naming that phase, that kernel and its buffer (the case reruns
    alone, synchronising each launch, so the asynchronous fault keeps its kernel)."""
    monkeypatch.setenv("EAGLEGRAPH_PROBE_FAULT", f"{fault}:write_kv@draft_decode")
    spec = resolve_run(
        "tiny-llama-eagle3",
        plan={"max_num_seqs": 4, "num_speculative_tokens": 3, "mode": "NONE"},
        device="cuda", max_model_len=256,
    )  # fmt: skip
    case = ProbeCase("none-b3", spec, large=4, batch=3)
    (result,) = run_cases([case], workers=1, timeout=300)
    assert result.status in ("error", "crash"), result.status
    (finding,) = build_findings([result])
    assert (finding.phase, finding.kernel, finding.buffer) == (
        "draft_decode",
        "write_kv",
        "slot_mapping",
    ), finding.message
