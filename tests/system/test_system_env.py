"""`eaglegraph env` with NVML mocked (every degradation path) and for real on this machine."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import pynvml
import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.results.env import ENV_SCHEMA as SCHEMA
from eaglegraph.results.env import NA
from eaglegraph.serial import document, dumps
from eaglegraph.system import nvml as nvml_mod
from eaglegraph.system.environment import collect_environment
from eaglegraph.system.nvml import collect_gpus, cuda_version_string
from eaglegraph.system.versions import torch_info

GIB = 1024**3


class _Mem:
    def __init__(self, total: int, used: int, reserved: int | None = None) -> None:
        self.total, self.used, self.free = total, used, total - used
        if reserved is not None:
            self.reserved = reserved


def _mock_nvml(monkeypatch: pytest.MonkeyPatch, *, v2: bool = True, v3: bool = True) -> None:
    """Two H100s; GPU 0 runs a server whose memory NVML cannot see (None, as in containers)."""
    names = [b"NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"]  # old bindings returned bytes
    procs = {
        0: [SimpleNamespace(pid=4242, usedGpuMemory=None)],
        1: [SimpleNamespace(pid=4243, usedGpuMemory=70 * GIB)],
    }

    def memory(handle, version=None):
        if version is not None:
            if not v2:
                raise pynvml.NVMLError_FunctionNotFound()
            return _Mem(80 * GIB, (10 + handle) * GIB, reserved=GIB // 2)
        return _Mem(80 * GIB, (10 + handle) * GIB)

    def running_v3(handle):
        if not v3:
            raise pynvml.NVMLLibraryMismatchError(
                "Unversioned function called and the pyNVML version does not match the NVML lib version."
            )
        return procs[handle]

    for name, fn in {
        "nvmlInit": lambda: None,
        "nvmlShutdown": lambda: None,
        "nvmlDeviceGetCount": lambda: 2,
        "nvmlDeviceGetHandleByIndex": lambda i: i,
        "nvmlDeviceGetName": lambda h: names[h],
        "nvmlDeviceGetUUID": lambda h: f"GPU-{h:08d}",
        "nvmlDeviceGetMemoryInfo": memory,
        "nvmlDeviceGetComputeRunningProcesses": running_v3,
        "nvmlDeviceGetComputeRunningProcesses_v2": lambda h: procs[h],
        "nvmlDeviceGetCudaComputeCapability": lambda h: (9, 0),
        "nvmlSystemGetDriverVersion": lambda: "550.54.15",
        "nvmlSystemGetCudaDriverVersion": lambda: 12040,
        "nvmlSystemGetNVMLVersion": lambda: "12.550.54.15",
    }.items():
        monkeypatch.setattr(pynvml, name, fn)


def test_two_gpus_with_versions_and_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    _mock_nvml(monkeypatch)
    report = collect_gpus()
    assert report.available and report.error is None
    assert (report.driver_version, report.cuda_driver_version) == ("550.54.15", "12.4")
    g0, g1 = report.gpus
    assert (g0.name, g1.name) == ("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3")
    assert (g0.memory_total_mib, g0.memory_used_mib, g0.memory_reserved_mib) == (
        81920.0,
        10240.0,
        512.0,
    )
    assert g1.memory_used_mib == 11264.0
    assert g0.compute_capability == "9.0"
    assert g0.processes[0].pid == 4242 and g0.processes[0].used_memory_mib is NA
    assert g1.processes[0].used_memory_mib == 71680.0


def test_old_driver_falls_back_to_v1_memory_and_v2_processes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _mock_nvml(monkeypatch, v2=False, v3=False)
    report = collect_gpus()
    g0 = report.gpus[0]
    assert g0.memory_total_mib == 81920.0 and g0.memory_reserved_mib is NA
    assert [p.pid for p in g0.processes] == [4242]


def test_library_not_found_is_na_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing():
        raise pynvml.NVMLError_LibraryNotFound()

    monkeypatch.setattr(pynvml, "nvmlInit", missing)
    report = collect_gpus()
    assert not report.available and report.gpus == []
    assert report.driver_version is NA and report.cuda_driver_version is NA
    assert "NVML library not found" in report.error
    env = collect_environment(with_torch=False)
    assert any("NVML" in n for n in env.notes)
    doc = json.loads(dumps(document(SCHEMA, env)))
    assert doc["nvml"]["driver_version"] == "N/A"


def test_each_failing_call_degrades_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    _mock_nvml(monkeypatch)

    def lost(*a, **k):
        raise pynvml.NVMLError_GpuIsLost()

    monkeypatch.setattr(pynvml, "nvmlDeviceGetName", lost)
    monkeypatch.setattr(pynvml, "nvmlDeviceGetComputeRunningProcesses", lost)
    monkeypatch.setattr(pynvml, "nvmlDeviceGetComputeRunningProcesses_v2", lost)
    monkeypatch.setattr(pynvml, "nvmlSystemGetCudaDriverVersion", lambda: "garbage")
    report = collect_gpus()
    assert report.available
    assert report.gpus[0].name is NA and report.gpus[0].processes is NA
    assert report.gpus[0].memory_total_mib == 81920.0
    assert report.cuda_driver_version is NA
    assert "nvmlDeviceGetName" in report.error


def test_pynvml_missing_entirely(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nvml_mod, "load_pynvml", lambda: None)
    report = collect_gpus()
    assert not report.available and "not installed" in report.error


def test_cuda_version_formatting() -> None:
    assert cuda_version_string(12040) == "12.4"
    assert cuda_version_string(13020) == "13.2"
    assert cuda_version_string(0) is NA and cuda_version_string(None) is NA


def test_na_serialises_as_the_string() -> None:
    assert json.loads(dumps({"x": NA})) == {"x": "N/A"}
    assert not NA and str(NA) == "N/A" and NA is type(NA)()


def test_torch_missing_is_na(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    info = torch_info()
    assert info.version is NA and info.cuda_available is NA and "not importable" in info.error


def test_env_json_with_mocked_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    _mock_nvml(monkeypatch)
    res = CliRunner().invoke(cli, ["env", "--json"], catch_exceptions=False)
    assert res.exit_code == 0
    doc = json.loads(res.output)
    assert doc["schema"] == "eaglegraph.env/1"
    assert doc["nvml"]["gpus"][0]["processes"][0]["used_memory_mib"] == "N/A"
    assert doc["nvml"]["cuda_driver_version"] == "12.4"
    for key in ("eaglegraph", "python", "torch", "triton", "packages", "env"):
        assert key in doc


def test_env_for_real_on_this_machine() -> None:
    """No GPU here: NVML and CUDA show as N/A and the command still succeeds."""
    res = CliRunner().invoke(cli, ["env", "--json"], catch_exceptions=False)
    assert res.exit_code == 0
    doc = json.loads(res.output)
    import torch

    assert doc["torch"]["version"] == torch.__version__
    assert doc["python"]["version"].startswith(f"{sys.version_info.major}.{sys.version_info.minor}")
    if not torch.cuda.is_available():
        assert doc["torch"]["cuda_available"] is False
    res = CliRunner().invoke(cli, ["env", "--no-color"], catch_exceptions=False)
    assert res.exit_code == 0 and "torch" in res.output
