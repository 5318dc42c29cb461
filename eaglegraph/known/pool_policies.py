"""The graph-memory pool policies the engines use, as the names runs and options spell them.

shared    — every graph in one global `graph_pool_handle()` (vLLM ≥ 0.23, SGLang);
dedicated — vLLM 0.22: EAGLE FULL graphs in a pool of their own (hazard `dedicated-eagle-pool`);
per-graph — each capture its own private pool (torch's default without `pool=`).
"""

from __future__ import annotations

from eaglegraph.known.enums import StrEnum


class PoolPolicy(StrEnum):
    SHARED = "shared"
    DEDICATED = "dedicated"
    PER_GRAPH = "per-graph"
