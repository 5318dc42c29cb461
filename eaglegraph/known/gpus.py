"""GPUs users run the engines on: compute capability and memory, as data.

Capabilities are NVIDIA's (https://developer.nvidia.com/cuda-gpus); memory is what
`torch.cuda.get_device_properties().total_memory` reports for the SKU, in GiB (the figure the
engines compare against thresholds), from the product's datasheet capacity less what the
driver and ECC reserve. Names are the ones tickets and `nvidia-smi` use; each card also
answers to the spellings in `aliases`, compared with case, spaces, dashes, underscores and a
leading "NVIDIA"/"GeForce"/"Tesla" ignored ("H100-SXM5-80GB", "NVIDIA H100 80GB HBM3").
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class GpuSpec:
    name: str
    capability: tuple[int, int]
    memory_gib: float
    note: str = ""
    aliases: tuple[str, ...] = ()

    @property
    def sm(self) -> int:
        return self.capability[0] * 10 + self.capability[1]

    @property
    def family(self) -> int:
        """vLLM's `is_device_capability_family`: SM100 and SM103 are both family 100."""
        return self.capability[0] * 10

    def label(self) -> str:
        return f"{self.name} (SM{self.sm}, {self.memory_gib:g} GiB)"

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "capability": f"{self.capability[0]}.{self.capability[1]}",
            "memory_gib": self.memory_gib,
        }


def _g(name: str, cap: tuple[int, int], gib: float, note: str, *aliases: str) -> GpuSpec:
    return GpuSpec(name, cap, gib, note, aliases)


GPU_TABLE: tuple[GpuSpec, ...] = (
    # Hopper (SM 9.0)
    _g(
        "H100",
        (9, 0),
        79.2,
        "H100 SXM5 80 GB HBM3",
        "H100 SXM",
        "H100 SXM5",
        "H100 SXM5 80GB",
        "H100 80GB HBM3",
        "H100 80GB",
    ),
    _g(
        "H100-PCIe",
        (9, 0),
        79.2,
        "H100 PCIe 80 GB HBM2e",
        "H100 PCIe",
        "H100 PCIe 80GB",
        "H100 80GB PCIe",
    ),
    _g("H100-NVL", (9, 0), 93.1, "H100 NVL 94 GB HBM3", "H100 NVL 94GB", "H100 94GB"),
    _g(
        "H800",
        (9, 0),
        79.2,
        "H800 SXM5 80 GB (China)",
        "H800 SXM",
        "H800 80GB HBM3",
        "H800 80GB",
        "H800 PCIe",
    ),
    _g("H20", (9, 0), 95.0, "H20 96 GB HBM3 (China)", "H20 96GB", "H20 96GB HBM3"),
    _g("H200", (9, 0), 139.8, "H200 141 GB HBM3e", "H200 SXM", "H200 141GB HBM3e", "H200 141GB"),
    _g("H200-NVL", (9, 0), 139.8, "H200 NVL 141 GB HBM3e", "H200 NVL"),
    _g("GH200", (9, 0), 94.5, "GH200 Grace Hopper 96 GB HBM3", "GH200 480GB"),
    # Blackwell datacenter (SM 10.0 / 10.3)
    _g("B200", (10, 0), 178.4, "B200 180 GB HBM3e", "B200 180GB", "B200 SXM"),
    _g("GB200", (10, 0), 184.0, "GB200 Grace Blackwell 186 GB HBM3e", "GB200 NVL72"),
    _g("B300", (10, 3), 268.0, "B300 288 GB HBM3e", "B300 SXM6", "B300 288GB", "B300 SXM6 AC"),
    _g("GB300", (10, 3), 268.0, "GB300 Grace Blackwell Ultra 288 GB HBM3e", "GB300 NVL72"),
    # Blackwell workstation / consumer (SM 12.0)
    _g(
        "RTX-PRO-6000",
        (12, 0),
        94.5,
        "RTX PRO 6000 Blackwell 96 GB GDDR7",
        "RTX PRO 6000 Blackwell",
        "RTX PRO 6000 Blackwell Server Edition",
        "RTX PRO 6000 Blackwell Workstation Edition",
        "RTX 6000 Pro",
    ),
    _g("RTX-5090", (12, 0), 31.4, "GeForce RTX 5090 32 GB GDDR7", "5090"),
    # Ada (SM 8.9)
    _g("L40S", (8, 9), 44.4, "L40S 48 GB GDDR6"),
    _g("L40", (8, 9), 44.4, "L40 48 GB GDDR6"),
    _g("L20", (8, 9), 44.4, "L20 48 GB GDDR6 (China)"),
    _g("L4", (8, 9), 22.0, "L4 24 GB GDDR6"),
    _g("RTX-4090", (8, 9), 23.6, "GeForce RTX 4090 24 GB GDDR6X", "4090", "RTX 4090D"),
    _g("RTX-6000-Ada", (8, 9), 47.5, "RTX 6000 Ada 48 GB GDDR6", "RTX 6000 Ada Generation"),
    # Ampere (SM 8.0 / 8.6)
    _g(
        "A100",
        (8, 0),
        79.2,
        "A100 80 GB HBM2e",
        "A100 SXM4 80GB",
        "A100 80GB PCIe",
        "A100 80GB",
        "A100-SXM4-80GB",
        "A100 PCIe 80GB",
    ),
    _g(
        "A100-40GB",
        (8, 0),
        39.4,
        "A100 40 GB HBM2",
        "A100 SXM4 40GB",
        "A100 PCIe 40GB",
        "A100 40GB PCIe",
        "A100-SXM4-40GB",
    ),
    _g(
        "A800",
        (8, 0),
        79.2,
        "A800 80 GB HBM2e (China)",
        "A800 SXM4 80GB",
        "A800 80GB PCIe",
        "A800 80GB",
    ),
    _g("A800-40GB", (8, 0), 39.4, "A800 40 GB (China)", "A800 40GB PCIe", "A800 40GB"),
    _g("A10", (8, 6), 22.0, "A10 24 GB GDDR6"),
    _g("A10G", (8, 6), 22.0, "A10G 24 GB GDDR6 (AWS)"),
    _g("A40", (8, 6), 44.4, "A40 48 GB GDDR6"),
    _g("RTX-3090", (8, 6), 23.7, "GeForce RTX 3090 24 GB GDDR6X", "3090", "RTX 3090 Ti"),
    _g("RTX-A6000", (8, 6), 47.5, "RTX A6000 48 GB GDDR6", "A6000"),
    # before Ampere (no bf16; the engines load float32 configs as float16)
    _g("V100", (7, 0), 31.7, "V100 32 GB HBM2", "V100 SXM2 32GB", "V100 32GB"),
    _g("T4", (7, 5), 14.6, "T4 16 GB GDDR6"),
)

_PREFIXES = ("NVIDIA", "GEFORCE", "TESLA")


def normalize_gpu_name(name: str) -> str:
    """Upper case, no vendor prefix, only letters and digits: the key names compare by."""
    key = re.sub(r"[^A-Z0-9]", "", name.upper())
    for prefix in _PREFIXES:
        key = key.removeprefix(prefix)
    return key


GPU_KEYS: dict[str, GpuSpec] = {
    normalize_gpu_name(spelling): gpu for gpu in GPU_TABLE for spelling in (gpu.name, *gpu.aliases)
}

GPU_NAMES: tuple[str, ...] = tuple(g.name for g in GPU_TABLE)


def find_gpu(name: str) -> GpuSpec | None:
    """The card a name spells (any spelling of `aliases`), or None."""
    return GPU_KEYS.get(normalize_gpu_name(name))
