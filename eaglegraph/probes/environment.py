"""The few environment facts a saved run carries, so a report says where it was measured."""

from __future__ import annotations

import platform
from typing import Any

import torch


def run_environment(device: torch.device) -> dict[str, Any]:
    from eaglegraph import __version__

    try:
        import triton

        triton_version = triton.__version__
    except Exception:
        triton_version = "N/A"
    env: dict[str, Any] = {
        "eaglegraph": __version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton_version,
        "cuda_runtime": torch.version.cuda or "N/A",
        "device": str(device),
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        env["gpu"] = props.name
        env["gpu_memory_bytes"] = int(props.total_memory)
        env["compute_capability"] = f"{props.major}.{props.minor}"
    else:
        env["gpu"] = "N/A"
    return env
