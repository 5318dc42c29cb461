"""The CPU prediction against the CUDA caching allocator (run on the GPU machine)."""

from __future__ import annotations

import gc
import random

import pytest
import torch

from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.probes.allocator_sim import Alloc, Event, Free, simulate
from eaglegraph.probes.capture import CaptureRequest, run_capture
from eaglegraph.probes.memory_predict import predict_policy, record_capture
from eaglegraph.probes.spec import rig_config

pytestmark = pytest.mark.cuda
MiB = 1 << 20


def _clean() -> None:
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


def _sequence(seed: int, graphs: int) -> list[Event]:
    rng = random.Random(seed)
    events: list[Event] = []
    live: list[int] = []
    next_id = 0
    for graph in range(graphs):
        for _ in range(60):
            if live and rng.random() < 0.4:
                events.append(Free(live.pop(rng.randrange(len(live)))))
                continue
            size = rng.choice(
                [rng.randint(1, 8192), rng.randint(1, 3 * MiB), rng.randint(8 * MiB, 48 * MiB)]
            )
            events.append(Alloc(next_id, size, graph))
            live.append(next_id)
            next_id += 1
        for i in live:  # a capture's temporaries die with it
            events.append(Free(i))
        live.clear()
    return events


def _pool_bytes() -> dict[tuple[int, int], int]:
    """Reserved bytes per graph pool, from the allocator's segments (a reserved-bytes delta
    would also count default-pool growth during a capture, e.g. the generator's graph state)."""
    out: dict[tuple[int, int], int] = {}
    for seg in torch.cuda.memory._snapshot()["segments"]:
        pool = tuple(seg["segment_pool_id"])
        if pool != (0, 0):
            out[pool] = out.get(pool, 0) + int(seg["total_size"])  # type: ignore[index]
    return out


def _replay_on_cuda(events: list[Event], pool_of: dict[int, str]) -> dict[str, int]:
    """Run the sequence inside real captures; reserved bytes per pool name."""
    handles = {name: torch.cuda.graph_pool_handle() for name in dict.fromkeys(pool_of.values())}
    stream = torch.cuda.Stream()
    graphs = []
    by_graph: dict[int, list[Event]] = {}
    owner: dict[int, int] = {}
    for e in events:
        graph = e.graph if isinstance(e, Alloc) else owner[e.id]
        if isinstance(e, Alloc):
            owner[e.id] = e.graph
        by_graph.setdefault(graph, []).append(e)
    for graph, evs in sorted(by_graph.items()):
        _clean()
        g = torch.cuda.CUDAGraph()
        tensors: dict[int, torch.Tensor] = {}
        with torch.cuda.graph(g, pool=handles[pool_of[graph]], stream=stream):
            for e in evs:
                if isinstance(e, Alloc):
                    tensors[e.id] = torch.empty(e.nbytes, dtype=torch.uint8, device="cuda")
                    tensors[e.id][:1].zero_()
                else:
                    del tensors[e.id]
        graphs.append(g)
    per_pool = _pool_bytes()
    return {name: per_pool.get(tuple(h), 0) for name, h in handles.items()}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_simulator_matches_the_cuda_allocator(seed: int) -> None:
    events = _sequence(seed, graphs=4)
    for pool_of in ({g: "one" for g in range(4)}, {0: "a", 1: "b", 2: "a", 3: "b"}):
        measured = _replay_on_cuda(events, pool_of)
        predicted = {p.name: p.reserved_bytes for p in simulate(events, pool_of).pools}
        assert predicted == measured, (pool_of, predicted, measured)


CASES = [
    ("tiny-llama-eagle3", {"max_num_seqs": 8, "num_speculative_tokens": 3}),
    ("tiny-llama-eagle1", {"max_num_seqs": 8, "num_speculative_tokens": 3, "mode": "FULL"}),
    ("llama3.1-8b-eagle1", {"max_num_seqs": 64, "num_speculative_tokens": 3}),
]


@pytest.mark.parametrize(("preset", "plan"), CASES, ids=[c[0] for c in CASES])
def test_prediction_within_ten_percent_per_pool(preset: str, plan: dict[str, object]) -> None:
    pair = load_pair(materialize(preset))
    config = rig_config(pair, plan, device="cuda", max_model_len=512, random_weights=True)
    recording = record_capture(pair, config)
    for policy in ("shared", "dedicated", "per-graph"):
        _clean()
        run = run_capture(pair, CaptureRequest(config=config, pool=policy, predict=False))
        assert run.ok, run.failed
        predicted = predict_policy(recording, policy)
        graph_pools = [p for p in run.pools if p.graphs]
        if policy == "per-graph":  # one private pool per capture: compare the totals
            pairs = [("all", sum(p.reserved_bytes for p in graph_pools), predicted.reserved_bytes)]
        else:
            pairs = []
            for pool in graph_pools:
                want = predicted.pool(pool.label)
                assert want is not None, (pool.label, [p.label for p in predicted.pools])
                pairs.append((pool.label, pool.reserved_bytes, want.reserved_bytes))
        for label, measured, guess in pairs:
            assert abs(guess - measured) <= 0.1 * measured, (preset, policy, label, guess, measured)
        del run


def test_capture_stops_before_an_oom_with_what_fits() -> None:
    """With the device nearly full, capture refuses before capturing and says what fits."""
    from eaglegraph.errors import MissingEnvironment
    from eaglegraph.rig.step import Rig

    _clean()
    pair = load_pair(materialize("tiny-llama-eagle3"))
    config = rig_config(
        pair, {"max_num_seqs": 8, "num_speculative_tokens": 3}, device="cuda", max_model_len=512
    )
    recording = record_capture(pair, config)
    need = predict_policy(recording, "per-graph").reserved_bytes
    rig = Rig(pair, config)
    _clean()  # no cached default-pool blocks: what is free is all the capture could get
    free = torch.cuda.mem_get_info()[0]
    hog = torch.empty(free - need // 2, dtype=torch.uint8, device="cuda")
    try:
        with pytest.raises(MissingEnvironment, match="would run out of GPU memory") as info:
            run_capture(pair, CaptureRequest(config=config, pool="per-graph"), rig=rig)
    finally:
        del hog
        _clean()  # hand the hog back to the driver: later tests read free memory from it
    message = str(info.value)
    assert "predicted" in message and ("fit" in message or "lower" in message)
    assert not rig.runners["target"].graphs  # nothing was captured
