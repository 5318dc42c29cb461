"""Versions of the software stack a CUDA-graph bug report needs, read without side effects.

Package versions come from installed metadata, not imports: importing triton or vllm to read a
version string can initialise CUDA or fail on a half-installed wheel. torch is the exception,
because the CUDA runtime it was built against and the devices it sees are only known to torch
itself; it is imported lazily, and anything failing there becomes "N/A".
"""

from __future__ import annotations

import platform
import sys
from importlib import metadata

from eaglegraph.results.env import NA, NAType, PythonInfo, TorchDevice, TorchInfo

OPTIONAL_PACKAGES = (
    "torch",
    "triton",
    "nvidia-ml-py",
    "py-spy",
    "vllm",
    "sglang",
    "tensorrt_llm",
    "flashinfer-python",
    "transformers",
    "safetensors",
)


def package_version(name: str) -> str | NAType:
    try:
        return metadata.version(name)
    except Exception:
        return NA


def torch_info() -> TorchInfo:
    """torch's version, the CUDA runtime it was built with, and the devices it can see."""
    info = TorchInfo()
    try:
        import torch
    except Exception as exc:
        info.error = f"torch not importable: {type(exc).__name__}: {exc}"[:300]
        return info
    info.version = str(getattr(torch, "__version__", NA))
    info.cuda_runtime = getattr(torch.version, "cuda", None) or NA
    try:
        cudnn = torch.backends.cudnn.version()
        info.cudnn = str(cudnn) if cudnn else NA
    except Exception:
        info.cudnn = NA
    try:
        info.cuda_available = bool(torch.cuda.is_available())
    except Exception as exc:
        info.error = f"torch.cuda.is_available() failed: {exc}"[:300]
        info.cuda_available = NA
        return info
    if not info.cuda_available:
        info.device_count = 0
        return info
    try:
        info.device_count = int(torch.cuda.device_count())
        for i in range(info.device_count):
            dev = TorchDevice(index=i)
            try:
                props = torch.cuda.get_device_properties(i)
                dev.name = str(props.name)
                dev.capability = f"{props.major}.{props.minor}"
                dev.total_memory_mib = round(props.total_memory / (1024 * 1024), 1)
            except Exception:
                pass
            info.devices.append(dev)
    except Exception as exc:
        info.error = f"torch.cuda device query failed: {exc}"[:300]
    return info


def python_info() -> PythonInfo:
    return PythonInfo(
        version=platform.python_version(),
        implementation=platform.python_implementation(),
        executable=sys.executable,
        platform=platform.platform(),
    )
