"""GPUs through NVML (nvidia-ml-py), degrading to "N/A" instead of failing.

`eaglegraph env` must work on a laptop, in CI without a driver, in a container where NVML
hides per-process memory, and with bindings newer or older than the driver. Every NVML call
therefore goes through `Nvml.call`, which returns `NA` on any NVML error; versioned functions
fall back the way nvitop does (memory info v2 -> v1, running processes v3 -> v2), and
`usedGpuMemory` of None (not available, e.g. in containers) becomes `NA`.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from eaglegraph.results.env import NA, GpuInfo, GpuProcess, NAType, NvmlReport
from eaglegraph.system.proc import command_line


def _mib(value: Any) -> float | NAType:
    if value is None or isinstance(value, NAType):
        return NA
    try:
        return round(float(value) / (1024 * 1024), 1)
    except (TypeError, ValueError):
        return NA


def _text(value: Any) -> str | NAType:
    if value is None or isinstance(value, NAType):
        return NA
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def cuda_version_string(value: Any) -> str | NAType:
    """NVML reports the driver's CUDA version as an int, e.g. 12040 -> "12.4"."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        return NA
    return f"{value // 1000}.{(value % 1000) // 10}"


def load_pynvml() -> ModuleType | None:
    try:
        import pynvml
    except Exception:
        return None
    return pynvml


class Nvml:
    """An initialised NVML session whose calls never raise."""

    def __init__(self, module: ModuleType | None) -> None:
        self.nv = module
        self.ok = False
        self.error: str | None = None
        self.failed: dict[str, str] = {}

    def __enter__(self) -> Nvml:
        if self.nv is None:
            self.error = "nvidia-ml-py (pynvml) is not installed"
            return self
        try:
            self.nv.nvmlInit()
            self.ok = True
        except Exception as exc:
            self.error = _describe(self.nv, exc)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.ok and self.nv is not None:
            try:
                self.nv.nvmlShutdown()
            except Exception:
                pass

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """`pynvml.<name>(*args)`, or NA when missing or failing (the reason is kept)."""
        fn = getattr(self.nv, name, None) if self.ok else None
        if fn is None:
            return NA
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            self.failed.setdefault(name, _describe(self.nv, exc))
            return NA

    def memory(self, handle: Any) -> tuple[Any, Any, Any, Any]:
        """(total, used, free, reserved) in bytes: struct v2 when the driver has it, else v1."""
        version = getattr(self.nv, "nvmlMemory_v2", None)
        info = NA
        if version is not None:
            info = self.call("nvmlDeviceGetMemoryInfo", handle, version=version)
        if isinstance(info, NAType):
            info = self.call("nvmlDeviceGetMemoryInfo", handle)
        if isinstance(info, NAType):
            return NA, NA, NA, NA
        return (
            getattr(info, "total", NA),
            getattr(info, "used", NA),
            getattr(info, "free", NA),
            getattr(info, "reserved", NA),
        )

    def processes(self, handle: Any) -> list[Any] | NAType:
        """Compute processes: the v3 call, then v2 for older drivers."""
        for name in (
            "nvmlDeviceGetComputeRunningProcesses",
            "nvmlDeviceGetComputeRunningProcesses_v2",
        ):
            procs = self.call(name, handle)
            if not isinstance(procs, NAType):
                return list(procs or [])
        return NA


def _describe(nv: ModuleType | None, exc: Exception) -> str:
    name = type(exc).__name__
    try:
        text = str(exc)
    except Exception:
        text = ""
    if nv is not None and name == "NVMLError_LibraryNotFound":
        return "NVML library not found (no NVIDIA driver on this machine)"
    if nv is not None and name == "NVMLError_DriverNotLoaded":
        return "NVIDIA driver not loaded"
    return f"{name}: {text}" if text else name


def _process_name(pid: int) -> str | NAType:
    """The command line from /proc; NVML reports host PIDs in containers, so it may be absent."""
    text = command_line(pid)
    return text[:200] if text else NA


def collect_gpus(module: ModuleType | None = None) -> NvmlReport:
    """Every GPU NVML sees, with memory and compute processes; never raises.

    `module` stands in for `pynvml` (tests pass a fake); by default the installed one is used.
    """
    nv = module if module is not None else load_pynvml()
    with Nvml(nv) as nvml:
        if not nvml.ok:
            return NvmlReport(available=False, error=nvml.error)
        report = NvmlReport(
            available=True,
            error=None,
            driver_version=_text(nvml.call("nvmlSystemGetDriverVersion")),
            cuda_driver_version=cuda_version_string(nvml.call("nvmlSystemGetCudaDriverVersion")),
            nvml_version=_text(nvml.call("nvmlSystemGetNVMLVersion")),
        )
        count = nvml.call("nvmlDeviceGetCount")
        if not isinstance(count, int):
            report.error = nvml.failed.get("nvmlDeviceGetCount", "device count not available")
            return report
        for index in range(count):
            report.gpus.append(_gpu(nvml, index))
        if nvml.failed:
            report.error = "; ".join(f"{k}: {v}" for k, v in sorted(nvml.failed.items()))[:500]
        return report


def _gpu(nvml: Nvml, index: int) -> GpuInfo:
    handle = nvml.call("nvmlDeviceGetHandleByIndex", index)
    info = GpuInfo(index=index)
    if isinstance(handle, NAType):
        return info
    info.name = _text(nvml.call("nvmlDeviceGetName", handle))
    info.uuid = _text(nvml.call("nvmlDeviceGetUUID", handle))
    total, used, free, reserved = nvml.memory(handle)
    info.memory_total_mib = _mib(total)
    info.memory_used_mib = _mib(used)
    info.memory_free_mib = _mib(free)
    info.memory_reserved_mib = _mib(reserved)
    cc = nvml.call("nvmlDeviceGetCudaComputeCapability", handle)
    if isinstance(cc, tuple) and len(cc) == 2:
        info.compute_capability = f"{cc[0]}.{cc[1]}"
    procs = nvml.processes(handle)
    if isinstance(procs, NAType):
        info.processes = NA
    else:
        info.processes = [
            GpuProcess(
                pid=int(getattr(p, "pid", 0) or 0),
                used_memory_mib=_mib(getattr(p, "usedGpuMemory", None)),
                name=_process_name(int(getattr(p, "pid", 0) or 0)),
            )
            for p in procs
        ]
    return info
