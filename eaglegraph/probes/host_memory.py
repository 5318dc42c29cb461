"""Will the rig's model fit? Its weights and KV cache against the memory the machine has left.

An 8B pair in float32 on a 24 GiB machine is killed by the kernel's OOM killer with no
message; on a GPU the first large allocation fails halfway through loading. Both are known
before anything is allocated: parameter counts come from headers (or the config), the KV
cache is sized by the same rule the rig uses. `check_rig_memory` refuses with both numbers
and, where one exists, the setting that would fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from eaglegraph.errors import MissingEnvironment
from eaglegraph.pair.model import ModelSide, Pair
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.kv_cache import KVLayout
from eaglegraph.rig.kv_specs import kv_layouts
from eaglegraph.rig.model_setup import resolve_model_dtype
from eaglegraph.rig.step import KV_BUDGET_BYTES

GIB = 2**30
OVERHEAD_BYTES = 1 * GIB  # torch, triton and Python themselves, persistent buffers, scratch


@dataclass(frozen=True)
class RigMemory:
    """What one rig holds, by part, in the dtype it will run."""

    dtype: torch.dtype
    weight_bytes: int
    kv_bytes: int
    buffer_bytes: int = 0
    overhead_bytes: int = OVERHEAD_BYTES

    @property
    def total(self) -> int:
        return self.weight_bytes + self.kv_bytes + self.buffer_bytes + self.overhead_bytes

    def describe(self) -> str:
        buffers = self.buffer_bytes + self.overhead_bytes
        return (
            f"weights {self.weight_bytes / GIB:.2f} GiB + KV cache {self.kv_bytes / GIB:.2f} GiB "
            f"+ ~{buffers / GIB:.1f} GiB buffers and runtime = {self.total / GIB:.2f} GiB "
            f"({str(self.dtype).removeprefix('torch.')})"
        )


def _parameters(side: ModelSide) -> int:
    index = side.checkpoint
    return index.parameter_count if index.has_weights else side.estimated_parameter_count


def rig_memory(pair: Pair, config: RigConfig, dtype: torch.dtype | None = None) -> RigMemory:
    """The rig's weights and KV cache for `config` (in `dtype`, else the one it resolves)."""
    assert pair.target is not None and pair.draft is not None
    dtype = dtype or resolve_model_dtype(config.dtype, pair, config.device)
    elem = torch.empty((), dtype=dtype).element_size()
    params = _parameters(pair.target)
    if pair.draft.path != pair.target.path:  # in-checkpoint MTP shares the target's weights
        params += _parameters(pair.draft)
    layouts = kv_layouts(pair, config.block_size, dtype, config.options.framework)
    per_block = sum(
        KVLayout(1, x.block_size, x.num_kv_heads, x.head_dim, x.dtype, x.latent).bytes_per_layer()
        for x in layouts
    )
    blocks_per_req = -(-config.max_model_len // config.block_size)
    wanted = config.num_blocks or 1 + config.max_num_seqs * blocks_per_req
    budget = KV_BUDGET_BYTES["cuda" if config.device.type == "cuda" else "cpu"]
    blocks = wanted if config.num_blocks else max(2, min(wanted, budget // max(per_block, 1)))
    # persistent buffers: block tables (int32, target/draft/state) and hidden-state rows at the
    # step's token budget (target hidden + aux taps + draft hidden, two copies for dirtying)
    seqs, tokens = config.max_num_seqs, config.options.max_num_batched_tokens
    widths = pair.target.geometry.hidden_size * 4 + pair.draft.geometry.hidden_size
    buffers = 3 * seqs * blocks_per_req * 4 + 2 * tokens * widths * elem
    return RigMemory(dtype, params * elem, blocks * per_block, buffers)


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def available_host_bytes() -> int | None:
    """MemAvailable, lowered to what a cgroup (container) limit still allows; None if unknown."""
    available = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        available = None
    cgroup = Path("/sys/fs/cgroup")
    for limit_file, usage_file in (
        ("memory.max", "memory.current"),
        ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes"),
    ):
        limit, usage = _read_int(cgroup / limit_file), _read_int(cgroup / usage_file)
        if limit is not None and usage is not None and limit < 1 << 60:
            left = max(limit - usage, 0)
            available = left if available is None else min(available, left)
            break
    return available


def available_device_bytes(device: torch.device) -> int:
    free, _ = torch.cuda.mem_get_info(device)
    return int(free)


def check_rig_memory(pair: Pair, config: RigConfig, available: int | None = None) -> RigMemory:
    """Refuse (MissingEnvironment) when the rig will not fit the memory left; else its needs.

    `available` defaults to the machine's: host memory on CPU, free device memory on CUDA.
    """
    need = rig_memory(pair, config)
    cuda = config.device.type == "cuda"
    if available is None:
        available = available_device_bytes(config.device) if cuda else available_host_bytes()
    if available is None or need.total <= available:
        return need
    where = "the GPU has" if cuda else "this machine has"
    message = (
        f"the pair needs about {need.total / GIB:.1f} GiB ({need.describe()}) and {where} "
        f"{available / GIB:.1f} GiB available"
    )
    raise MissingEnvironment(message, _what_fits(pair, config, need, available, cuda))


def _what_fits(pair: Pair, config: RigConfig, need: RigMemory, available: int, cuda: bool) -> str:
    """The nearest setting that fits, if one does; else where the run can go instead."""
    for name, dtype in (("bfloat16", torch.bfloat16),):
        if need.dtype.itemsize > dtype.itemsize:
            smaller = rig_memory(pair, config, dtype)
            if smaller.total <= available:
                return f"--dtype {name} needs {smaller.total / GIB:.1f} GiB and fits"
    if need.kv_bytes > need.weight_bytes and need.kv_bytes > need.total - available:
        return "lower --max-num-seqs or --max-model-len: the KV cache is most of it"
    if cuda:
        return "use a GPU with more free memory, or a smaller pair (eaglegraph scaffold --list)"
    return "run it on a GPU (--device cuda), or use a tiny preset (eaglegraph scaffold --list)"
