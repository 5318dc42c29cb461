"""Everything about the machine a CUDA-graph ticket needs, in one result (`eaglegraph env`).

The report combines what the driver says (NVML: GPUs, memory per process, driver and its CUDA
version) with what the Python stack says (torch and its CUDA runtime, triton, the serving
frameworks), because mismatches between the two are themselves a frequent cause of capture
failures. Only environment variables that change graph capture or memory behaviour are
included, by name, so the report is safe to paste into a public issue.
"""

from __future__ import annotations

import os
from types import ModuleType

from eaglegraph.results.env import NA, EnvReport, NAType, NvmlReport, TorchInfo
from eaglegraph.system.nvml import collect_gpus
from eaglegraph.system.versions import (
    OPTIONAL_PACKAGES,
    package_version,
    python_info,
    torch_info,
)

ENV_VARS = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_DEVICE_MAX_CONNECTIONS",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "TORCH_CUDA_ARCH_LIST",
    "TORCHINDUCTOR_CACHE_DIR",
    "TRITON_INTERPRET",
    "NCCL_DEBUG",
    "NCCL_P2P_DISABLE",
    "NCCL_NVLS_ENABLE",
    "VLLM_USE_V2_MODEL_RUNNER",
    "VLLM_ATTENTION_BACKEND",
    "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS",
    "VLLM_USE_BREAKABLE_CUDAGRAPH",
    "SGLANG_ENABLE_TORCH_COMPILE",
)


def collect_environment(
    nvml_module: ModuleType | None = None, with_torch: bool = True
) -> EnvReport:
    """Collect the report; every part that cannot be read is "N/A" and explained in `notes`."""
    from eaglegraph import __version__

    notes: list[str] = []
    try:
        nvml = collect_gpus(nvml_module)
    except Exception as exc:
        nvml = NvmlReport(available=False, error=f"{type(exc).__name__}: {exc}"[:300])
    if not nvml.available:
        notes.append(f"NVML: {nvml.error or 'not available'}")
    torch = torch_info() if with_torch else TorchInfo(error="not collected")
    if torch.error:
        notes.append(torch.error)
    if torch.cuda_available is False:
        notes.append("torch sees no CUDA device: graph capture runs on the emulated backend only")
    packages = {name: package_version(name) for name in OPTIONAL_PACKAGES}
    env = {k: os.environ[k] for k in ENV_VARS if k in os.environ}
    if (
        nvml.available
        and isinstance(nvml.cuda_driver_version, str)
        and not isinstance(nvml.cuda_driver_version, NAType)
        and isinstance(torch.cuda_runtime, str)
        and not isinstance(torch.cuda_runtime, NAType)
        and _major_minor(torch.cuda_runtime) > _major_minor(nvml.cuda_driver_version)
    ):
        notes.append(
            f"torch was built for CUDA {torch.cuda_runtime} but the driver supports CUDA "
            f"{nvml.cuda_driver_version} at most"
        )
    return EnvReport(
        eaglegraph=__version__,
        python=python_info(),
        torch=torch,
        triton=packages.get("triton", NA),
        packages=packages,
        nvml=nvml,
        env=env,
        notes=notes,
    )


def _major_minor(text: str) -> tuple[int, int]:
    parts = [*text.split("."), "0", "0"][:2]
    try:
        return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)
    except ValueError:
        return (0, 0)
