"""The machine a CUDA-graph ticket needs, as data (eaglegraph.env/1).

Anything that could not be read is `NA`, the string "N/A" (falsy, one shared instance), so a
report from a laptop without a driver has the same shape as one from an H100 node.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ENV_SCHEMA = "eaglegraph.env/1"


class NAType(str):
    """The string "N/A": serialises as such, is falsy, and is one shared instance."""

    NA_TEXT = "N/A"  # how the decoder recognises the marker in a saved report
    _instance: NAType | None = None

    def __new__(cls) -> NAType:
        if cls._instance is None:
            cls._instance = super().__new__(cls, "N/A")
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NA"

    def __reduce__(self) -> tuple[type[NAType], tuple[()]]:
        return (NAType, ())


NA = NAType()


@dataclass
class GpuProcess:
    pid: int
    used_memory_mib: float | NAType
    name: str | NAType = NA


@dataclass
class Device:
    """A GPU as one library numbers and names it (NVML and torch each have their view)."""

    index: int
    name: str | NAType = NA


@dataclass
class GpuInfo(Device):
    uuid: str | NAType = NA
    memory_total_mib: float | NAType = NA
    memory_used_mib: float | NAType = NA
    memory_free_mib: float | NAType = NA
    memory_reserved_mib: float | NAType = NA
    compute_capability: str | NAType = NA
    processes: list[GpuProcess] | NAType = field(default_factory=list)


@dataclass
class NvmlReport:
    available: bool
    error: str | None
    driver_version: str | NAType = NA
    cuda_driver_version: str | NAType = NA
    nvml_version: str | NAType = NA
    gpus: list[GpuInfo] = field(default_factory=list)


@dataclass
class TorchDevice(Device):
    capability: str | NAType = NA
    total_memory_mib: float | NAType = NA


@dataclass
class TorchInfo:
    version: str | NAType = NA
    cuda_runtime: str | NAType = NA
    cudnn: str | NAType = NA
    cuda_available: bool | NAType = NA
    device_count: int | NAType = NA
    devices: list[TorchDevice] = field(default_factory=list)
    error: str | None = None


@dataclass
class PythonInfo:
    version: str
    implementation: str
    executable: str
    platform: str


@dataclass
class EnvReport:
    eaglegraph: str
    python: PythonInfo
    torch: TorchInfo
    triton: str | NAType
    packages: dict[str, str | NAType]
    nvml: NvmlReport
    env: dict[str, str]
    notes: list[str] = field(default_factory=list)
