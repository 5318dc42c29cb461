"""The GPU a plan is for: compute capability and memory, which drive the engines' GPU rules.

Support engineers plan for the customer's GPU, not the one they run on: `--gpu B200` on a
laptop must give the plan a B200 server would build (capture ceiling, attention backend
support, default batch limits). Memory is what `torch.cuda.get_device_properties().total_memory`
reports for the usual SKU, in GiB, since the engines compare that figure against thresholds.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.errors import unknown_choice


@dataclass(frozen=True)
class GpuSpec:
    name: str
    capability: tuple[int, int]
    memory_gib: float
    note: str = ""

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


GPUS: dict[str, GpuSpec] = {
    g.name: g
    for g in (
        GpuSpec("H100", (9, 0), 79.2, "H100 SXM/PCIe 80 GB"),
        GpuSpec("H200", (9, 0), 139.8, "H200 141 GB"),
        GpuSpec("H20", (9, 0), 95.0, "H20 96 GB"),
        GpuSpec("B200", (10, 0), 178.4, "B200 180 GB"),
        GpuSpec("GB200", (10, 0), 184.0, "GB200 186 GB"),
        GpuSpec("B300", (10, 3), 268.0, "B300 288 GB"),
        GpuSpec("RTX-PRO-6000", (12, 0), 94.5, "RTX PRO 6000 Blackwell 96 GB"),
        GpuSpec("A100", (8, 0), 79.2, "A100 80 GB"),
        GpuSpec("A100-40GB", (8, 0), 39.4, "A100 40 GB"),
        GpuSpec("L40S", (8, 9), 44.4, "L40S 48 GB"),
        GpuSpec("L4", (8, 9), 22.0, "L4 24 GB"),
        GpuSpec("A10G", (8, 6), 22.0, "A10G 24 GB"),
    )
}

DEFAULT_GPU = "H100"


def get_gpu(name: str | None) -> GpuSpec:
    """A GPU by name (case-insensitive; 'h100', 'B200'); H100 when none is given."""
    if name is None:
        return GPUS[DEFAULT_GPU]
    key = name.strip().upper().replace("_", "-")
    for gpu in GPUS.values():
        if gpu.name.upper() == key:
            return gpu
    raise unknown_choice("GPU", name, GPUS)
