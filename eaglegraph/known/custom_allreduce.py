"""Which graph-captured all-reduces an engine's custom all-reduce registers, and how many fit.

Both engines pair the i-th all-reduce captured on every rank when they register graph buffers
after a capture (vLLM `custom_all_reduce.py::CustomAllreduce.register_graph_buffers`, one
`broadcast_object_list` per rank over the CPU group, then C++ `register_graph_buffers` opening
rank j's handle i for every i with no check that the ranks sent as many; SGLang
`custom_all_reduce_v2.py::CustomAllReduceV2._register_graph_inputs`, `all_gather_object` then
`peer_ptrs[i] = [ptrs_per_rank[r][i] for r in ranks]`). A rank that captured one more, one
fewer or another size hands its peers' kernels a pointer to the wrong buffer. The rules below
say which inputs take the custom path per engine, so the rank rig can check the contract
from its ledgers without the engines' kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1 << 20


@dataclass(frozen=True)
class RegistrationRule:
    engine: str
    max_bytes: int  # inputs at or above this take another path
    alignment: int  # byte sizes that are not a multiple take another path (0: no rule)
    dtypes: tuple[str, ...]
    world_sizes: tuple[int, ...]  # where the custom path exists at all (one node)
    capacity: int  # registered graph inputs one rank can hold
    source: str

    def registers(self, nbytes: int, dtype: str) -> bool:
        if dtype not in self.dtypes or nbytes >= self.max_bytes:
            return False
        return not self.alignment or nbytes % self.alignment == 0


RULES = {
    "vllm": RegistrationRule(
        engine="vllm",
        max_bytes=8 * MIB,  # max_size's default; lowered only with NVLink multicast
        alignment=16,
        dtypes=("float32", "float16", "bfloat16"),
        world_sizes=(2, 4, 6, 8),
        capacity=8 * MIB // (16 * 8),  # rank_data: 8 MiB of 16-pointer tuples
        source="vllm/distributed/device_communicators/custom_all_reduce.py::"
        "CustomAllreduce.should_custom_ar, CustomAllreduce.__init__ (rank_data)",
    ),
    "sglang": RegistrationRule(
        engine="sglang",
        max_bytes=16 * MIB,  # SGLANG_CUSTOM_ALL_REDUCE_V2_MAX_SIZE_KB's default
        alignment=0,
        dtypes=("float32", "float16", "bfloat16"),
        world_sizes=(2, 4, 6, 8),
        capacity=131072,  # the device pointer table's rows
        source="sglang/srt/distributed/device_communicators/custom_all_reduce_v2.py::"
        "CustomAllReduceV2._init_workspace, custom_all_reduce",
    ),
}

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
