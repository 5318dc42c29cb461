"""Allocation recording and the pre-launch pool prediction (CPU; the CUDA comparison is in
test_memory_predict_cuda.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from eaglegraph.probes.alloc_recorder import AllocationRecorder, shape_only_kernels
from eaglegraph.probes.allocator_sim import Alloc, Free
from eaglegraph.probes.memory_predict import predict_policy, record_capture
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.inspect import open_pair
from eaglegraph.rig.options import PlanChoices, resolve_plan_options
from eaglegraph.rig.step import Rig


def test_recorder_sees_new_storages_and_their_deaths() -> None:
    rec = AllocationRecorder()
    with rec:
        with rec.scope("target", "FULL", 4, None):
            a = torch.empty(1000)
            b = a + 1
            view = b[10:]
            b.mul_(2)  # in place: no allocation
            del a
            c = torch.empty(3000)
        d = torch.empty(10)  # outside a capture: not recorded
        del b, view
        torch.zeros(1)
        del c
    assert rec.finish() == [Alloc(0, 4000, 0), Alloc(1, 4000, 0), Free(0), Alloc(2, 12000, 0),
                            Free(1), Free(2)]  # fmt: skip
    assert [s.phase for s in rec.scopes] == ["target"] and d.numel() == 10


def test_nested_scopes_belong_to_the_outer_capture() -> None:
    rec = AllocationRecorder()
    with rec, rec.scope("target", "FULL", 4, None), rec.scope("x", "PIECEWISE", 4, None, "t"):
        torch.empty(8)
    assert len(rec.scopes) == 1 and rec.finish()[0] == Alloc(0, 32, 0)


def _config(**kw: object) -> tuple[object, RigConfig]:
    pair = open_pair("tiny-llama-eagle3")
    opts = resolve_plan_options(PlanChoices(max_num_seqs=2, num_speculative_tokens=2, **kw))  # type: ignore[arg-type]
    return pair, RigConfig(opts, torch.device("cpu"))


@pytest.fixture(scope="module")
def recording() -> object:
    pair, cfg = _config()
    return record_capture(pair, cfg)  # type: ignore[arg-type]


def test_meta_recording_matches_the_emulated_cpu_capture(recording: object) -> None:
    """The shape-only (meta) run allocates exactly what the real emulated run allocates."""
    pair, cfg = _config()
    cpu = dataclasses.replace(cfg, dtype=recording.dtype, random_weights=True)  # type: ignore[attr-defined]
    rig = Rig(pair, cpu)  # type: ignore[arg-type]
    rec = AllocationRecorder()
    with rec, shape_only_kernels(rec):
        rig.capture(tracer=rec)
    sizes = [e.nbytes for e in rec.finish() if isinstance(e, Alloc)]
    assert sizes == [e.nbytes for e in recording.events if isinstance(e, Alloc)]  # type: ignore[attr-defined]
    assert rec.scopes == recording.scopes  # type: ignore[attr-defined]


def test_every_planned_graph_is_a_scope_and_everything_dies(recording: object) -> None:
    pair, cfg = _config()
    rig = Rig(pair, dataclasses.replace(cfg, random_weights=True))  # type: ignore[arg-type]
    planned = sum(len(rig.runners[p].dispatcher.capture_order()) for p in rig.runners)
    scopes = recording.scopes  # type: ignore[attr-defined]
    # PIECEWISE pieces are captured once per (model, num_tokens); every FULL graph is a scope
    full = sum(1 for s in scopes if s.piece is None)
    assert 0 < len(scopes) <= planned and full > 0
    events = recording.events  # type: ignore[attr-defined]
    allocs = {e.id for e in events if isinstance(e, Alloc)}
    assert allocs == {e.id for e in events if isinstance(e, Free)}  # nothing outlives capture
    # the dtype a CUDA capture runs in (the config's), not the CPU's float32
    assert recording.dtype == pair.target.geometry.dtype == "bfloat16"  # type: ignore[attr-defined]


def test_policies_route_captures_as_the_pool_manager_does(recording: object) -> None:
    shared = predict_policy(recording, "shared")  # type: ignore[arg-type]
    dedicated = predict_policy(recording, "dedicated")  # type: ignore[arg-type]
    per_graph = predict_policy(recording, "per-graph")  # type: ignore[arg-type]
    assert [p.label for p in shared.pools] == ["global"]
    assert {p.label for p in dedicated.pools} == {"global", "eagle (dedicated)"}
    eagle = dedicated.pool("eagle (dedicated)")
    assert eagle is not None and set(eagle.bytes_per_phase) <= {"draft_prefill", "draft_decode"}
    assert all(g.pool == "global" for g in dedicated.graphs if g.mode != "FULL")
    assert len(per_graph.pools) == len(recording.scopes)  # type: ignore[attr-defined]
    assert shared.reserved_bytes > 0
    assert shared.reserved_bytes <= dedicated.reserved_bytes <= per_graph.reserved_bytes
    for pred in (shared, dedicated, per_graph):
        # each pool's growth is attributed to the graphs captured into it
        for pool in pred.pools:
            assert sum(pool.bytes_per_phase.values()) == pool.reserved_bytes


def test_fit_check_finds_the_largest_capture_size_that_fits(recording: object) -> None:
    from eaglegraph.probes.fit import check_fit, without_larger

    rec = recording
    need = predict_policy(rec, "per-graph").reserved_bytes  # type: ignore[arg-type]
    ok = check_fit(rec, "per-graph", need, 2)  # type: ignore[arg-type]
    assert ok.fits and ok.predicted_bytes == need and "need" in ok.message()
    tight = check_fit(rec, "per-graph", need - 1, 2)  # type: ignore[arg-type]
    assert not tight.fits and tight.largest_capture_that_fits is not None
    assert tight.largest_capture_that_fits < tight.largest_capture
    smaller = without_larger(rec, tight.largest_capture_that_fits)  # type: ignore[arg-type]
    assert predict_policy(smaller, "per-graph").reserved_bytes <= need - 1
    assert f"capture sizes up to {tight.largest_capture_that_fits} fit" in tight.message()
    none = check_fit(rec, "per-graph", 0, 2)  # type: ignore[arg-type]
    assert none.largest_capture_that_fits is None and "lower" in none.message()


def test_only_wholly_free_default_segments_are_releasable() -> None:
    """The slack inside a segment still in use, and free graph-pool segments, are no use to a
    new capture's pool: counting them let a capture that would not fit go ahead."""
    from eaglegraph.probes.pool_accounting import releasable_bytes

    mib = 1 << 20

    def seg(pool: tuple[int, int], total: int, allocated: int, active: int | None = None) -> dict:
        active = allocated if active is None else active
        return {
            "segment_pool_id": pool,
            "total_size": total * mib,
            "allocated_size": allocated * mib,
            "active_size": active * mib,
        }

    segments = [
        seg((0, 0), 20, 0),  # wholly free: released on demand
        seg((0, 0), 20, 3),  # 17 MiB free inside, but the segment stays
        seg((0, 0), 2, 0, active=1),  # freed on another stream, not yet reusable
        seg((1, 0), 20, 0),  # a live graph's private pool
        seg((0, 2), 2, 0),  # a shared graph pool
    ]
    assert releasable_bytes(segments) == 20 * mib
    assert releasable_bytes([]) == 0


def test_inspect_shows_the_prediction_per_policy(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from eaglegraph.cli import cli

    args = ["inspect", "tiny-llama-eagle3", "--max-num-seqs", "2", "-K", "2", "--predict-memory"]
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code in (0, 1), result.stderr
    doc = json.loads(result.stdout)["memory_prediction"]
    policies = {p["policy"]: p for p in doc["policies"]}
    assert set(policies) == {"shared", "dedicated", "per-graph"}
    assert [p["label"] for p in policies["shared"]["pools"]] == ["global"]
    assert policies["shared"]["pools"][0]["reserved_bytes"] > 0
    saved = tmp_path / "inspect.json"
    saved.write_text(result.stdout)
    text = CliRunner().invoke(cli, ["report", str(saved), "--no-color"]).stdout
    assert "Graph memory, predicted" in text and "eagle (dedicated)" in text  # re-rendered
    plain = CliRunner().invoke(cli, [*args[:-1], "--json"])
    assert json.loads(plain.stdout)["memory_prediction"] is None  # only when asked for
    # vLLM compiles the target and the simulation records the eager forward: the method says
    # so; SGLang runs it eager, and there is nothing to say
    assert "eager target" in doc["method"] and "engine compiles it" in doc["method"]
    sglang = CliRunner().invoke(cli, [*args, "--framework", "sglang", "--json"])
    method = json.loads(sglang.stdout)["memory_prediction"]["method"]
    assert "eager target" in method and "compiles" not in method


def test_full_captures_hold_fa3_split_kv_accumulators(recording: object) -> None:
    """vLLM on Hopper caps FA3 at 32 splits under FULL graphs: each FULL capture's attention
    allocates out_accum [32, heads, tokens, head_dim] fp32 from the pool; PIECEWISE skips it."""
    pair, _ = _config()
    geo = pair.target.geometry  # type: ignore[attr-defined]
    scopes = {s.index: s for s in recording.scopes}  # type: ignore[attr-defined]
    modes = set()
    for e in recording.events:  # type: ignore[attr-defined]
        if isinstance(e, Alloc):
            scope = scopes[e.graph]
            if e.nbytes == 32 * geo.num_attention_heads * scope.num_tokens * geo.head_dim * 4:
                modes.add(scope.mode)
    assert modes == {"FULL"}


def test_mla_up_projections_are_outside_breakable_segments() -> None:
    """An MLA attention call's joined query `[T, heads, L+R]` is allocated inside the call:
    inside a FULL graph it is the pool's, but where attention runs eagerly between segments
    (SGLang's breakable prefill graphs) it lives in the default pool on CUDA, so the
    recording must not give it to the graph."""
    pair = open_pair("tiny-deepseek-mtp")
    # sglang-0.5.15 with flash_attn: no draft-extend runner, so the step's draft extend runs
    # on the breakable prefill graphs (sglang-current replays FULL extend graphs instead)
    opts = resolve_plan_options(
        PlanChoices(
            max_num_seqs=2, num_speculative_tokens=2, behavior="sglang-0.5.15",
            attention_backend="flash_attn",
        )
    )  # fmt: skip
    recording = record_capture(pair, RigConfig(opts, torch.device("cpu")))  # type: ignore[arg-type]
    from eaglegraph.pair.mla import mla_dims

    mla = mla_dims(pair.target.config)  # type: ignore[attr-defined]
    assert mla is not None
    heads = pair.target.geometry.num_attention_heads  # type: ignore[attr-defined]
    row = mla.kv_lora_rank + mla.qk_rope_head_dim
    itemsize = torch.empty(0, dtype=getattr(torch, recording.dtype)).element_size()
    scopes = {s.index: s for s in recording.scopes}
    joined_query_modes: set[str] = set()
    for e in recording.events:
        if isinstance(e, Alloc):
            scope = scopes[e.graph]
            if e.nbytes == scope.num_tokens * heads * row * itemsize:
                joined_query_modes.add(scope.mode)
    assert {s.mode for s in recording.scopes} >= {"FULL", "BREAKABLE"}
    assert joined_query_modes == {"FULL"}
