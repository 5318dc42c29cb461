"""The vocab-parallel embedding and LM head (issue 25): rows per rank as the engines pad and
split them and as `inspect` states them, and the sharded lookup and logits equal to the whole
model's over two gloo processes, eager and compiled."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.multiprocessing as mp

from eaglegraph.models.compile import CompiledForward
from eaglegraph.models.layers import VocabEmbedding
from eaglegraph.models.parallel import shard_models
from eaglegraph.models.vocab import VocabParallelEmbedding, padded_vocab, vocab_shard
from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.rig.model_setup import build_models
from tests.models.cpu_only import cpu_only

PRESETS = ("tiny-llama-eagle3", "tiny-deepseek-mtp")


def _models(preset: str) -> Any:
    pair = load_pair(materialize(preset))
    return build_models(pair, torch.float32, torch.device("cpu"), random_weights=True, seed=0)


def _heads(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Every LM head weight a model holds itself (an MTP module's `head`, an `lm_head`)."""
    out: dict[str, torch.Tensor] = {}
    for name, module in model.named_modules():
        for attr in ("lm_head", "head"):
            w = getattr(module, attr, None)
            if isinstance(w, torch.nn.Parameter):
                out[f"{name}.{attr}".lstrip(".")] = w
    return out


def test_padding_and_split_follow_the_engines() -> None:
    # vllm vocab_parallel_embedding.py::pad_vocab_size (64) and VocabParallelEmbedding._get_indices
    assert padded_vocab(128256) == 128256 and padded_vocab(151936) == 151936
    assert padded_vocab(32001) == 32064
    last = vocab_shard(32001, 3, 4)
    assert (last.rows, last.start, last.real_rows) == (8016, 24048, 7953)
    assert vocab_shard(100, 1, 2).real_rows == 64 - 28  # rows 64..127, vocabulary to 99
    with pytest.raises(Exception, match="does not divide the vocabulary padded to 128"):
        vocab_shard(100, 0, 3)


@pytest.mark.parametrize("preset", PRESETS)
def test_rows_per_rank_are_padded_vocab_over_tp_and_shared_modules_stay_shared(
    preset: str,
) -> None:
    for rank in (0, 1):
        models = _models(preset)
        target, draft = models.target, models.draft
        whole = sorted(w.shape[0] for m in (target, draft) for w in _heads(m).values())
        whole_embed = target.embed_tokens.weight.shape[0]
        shares_embed = draft.embed is target.embed_tokens
        shares_head = getattr(draft, "lm_head_weight", None) is target.lm_head_weight
        shard_models((target, draft), rank, 2, expert_parallel=True)
        assert isinstance(target.embed_tokens, VocabParallelEmbedding)
        assert isinstance(draft.embed, VocabParallelEmbedding)
        assert target.embed_tokens.weight.shape[0] == padded_vocab(whole_embed) // 2
        assert target.embed_tokens.shard.rank == rank
        # a draft that shares the target's embedding (or head) holds the one sharded module
        assert (draft.embed is target.embed_tokens) == shares_embed
        if shares_head:
            assert draft.lm_head_weight is target.lm_head_weight
        heads = {
            f"{role}.{name}": w
            for role, model in (("target", target), ("draft", draft))
            for name, w in _heads(model).items()
        }
        for name, w in heads.items():
            shard = w.vocab_shard  # type: ignore[attr-defined]
            assert w.shape[0] == shard.padded // 2 == padded_vocab(shard.vocab) // 2, name
            assert shard.rank == rank and shard.size == 2
        # every head is sharded from its whole rows (none was left replicated)
        assert sorted(w.vocab_shard.vocab for w in heads.values()) == whole  # type: ignore[attr-defined]


@pytest.mark.parametrize("preset", PRESETS)
def test_rig_rows_equal_what_inspect_states(preset: str) -> None:
    flags = ["--enable-expert-parallel"] if "mtp" in preset else []
    proc = subprocess.run(
        [sys.executable, "-m", "eaglegraph", "inspect", preset, "--tp", "2", *flags, "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    ranks = json.loads(proc.stdout)["ranks"]
    models = _models(preset)
    shard_models((models.target, models.draft), 0, 2, expert_parallel=bool(flags))
    assert models.target.embed_tokens.weight.shape[0] == ranks["target"]["vocab_rows"]
    target_head = models.target.lm_head_weight
    assert target_head.shape[0] == ranks["target"]["vocab_rows"]
    draft_embed = models.draft.embed if hasattr(models.draft, "embed") else None
    if isinstance(draft_embed, VocabEmbedding):
        assert draft_embed.weight.shape[0] == ranks["draft"]["vocab_rows"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rank(rank: int, port: int, preset: str, folder: str) -> None:
    """One gloo rank: the whole pair and this rank's shard of it, the same inputs, and what
    each returns (and what the ledger recorded), written for the parent to compare."""
    import torch.distributed as dist

    from eaglegraph.models.collectives import TensorParallel, tensor_parallel
    from eaglegraph.rig.ledger import Ledger, read_ledger

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        whole, sharded = _models(preset), _models(preset)
        shard_models((sharded.target, sharded.draft), rank, 2, expert_parallel=True)
        vocab = whole.target.vocab_size
        ids = torch.tensor([0, 1, vocab // 2 - 1, vocab // 2, vocab - 1, 5, vocab + 3])
        hidden = torch.randn(
            3, whole.target.hidden_size, generator=torch.Generator().manual_seed(1)
        )
        ledger_path = Path(folder) / f"rank{rank}.ledger"
        ledger = Ledger(ledger_path, rank)
        out: dict[str, Any] = {}
        with torch.inference_mode(), tensor_parallel(TensorParallel(rank, 2, None, ledger)):
            want = whole.target.embed_tokens(ids)
            got = sharded.target.embed_tokens(ids)
            out["embed_equal"] = bool(torch.equal(got[:-1], want[:-1]))
            out["bad_id_nan"] = bool(got[-1].isnan().all())
            for side in ("target", "draft"):
                w = getattr(whole, side).compute_logits(hidden)
                g = getattr(sharded, side).compute_logits(hidden)
                out[f"{side}_logits_shape"] = [list(g.shape), list(w.shape)]
                out[f"{side}_logits_close"] = bool(torch.allclose(g, w, rtol=1e-5, atol=1e-5))
            pos = torch.arange(5)
            attn = _copy_attention()
            want_h, _ = whole.target(ids[:5], pos, attn, ())
            eager_h, _ = sharded.target(ids[:5], pos, attn, ())
            compiled_h, _ = CompiledForward(sharded.target, "aot_eager")(ids[:5], pos, attn, ())
            out["forward_close"] = bool(torch.allclose(eager_h, want_h, rtol=1e-4, atol=1e-4))
            out["compiled_close"] = bool(torch.allclose(compiled_h, eager_h, rtol=1e-5, atol=1e-5))
        ledger.close()
        out["ops"] = [(e["op"], e["numel"]) for e in read_ledger(ledger_path) if e["ev"] == "enter"]
        out["head_rows"] = int(sharded.target.lm_head_weight.shape[0])
        out["hidden"] = int(whole.target.hidden_size)
        (Path(folder) / f"rank{rank}.json").write_text(json.dumps(out))
    finally:
        dist.destroy_process_group()


def _copy_attention() -> Any:
    from eaglegraph.models.mla import with_up_projections

    def core(
        layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor
    ) -> None:
        o.copy_(q[..., : o.shape[-1]])

    return with_up_projections(core)


@cpu_only  # gloo ranks on CPU tensors; on GPUs the ranks2 stage runs the same split over NCCL
@pytest.mark.parametrize("preset", PRESETS)
def test_sharded_lookup_and_logits_equal_the_whole_model_on_two_gloo_ranks(
    preset: str, tmp_path: Path
) -> None:
    mp.spawn(_rank, args=(_free_port(), preset, str(tmp_path)), nprocs=2, join=True)
    results = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    for out in results:
        assert out["embed_equal"] and out["bad_id_nan"], out
        for side in ("target", "draft"):
            got, want = out[f"{side}_logits_shape"]
            assert got == want, (side, out)  # padding cut off after the gather
            assert out[f"{side}_logits_close"], (side, out)
        assert out["forward_close"] and out["compiled_close"], out
        # the embedding's all-reduce first, then each head's all-gather of [3, rows] logits
        assert out["ops"][0] == ["all_reduce", 7 * out["hidden"]]
        gathers = [n for op, n in out["ops"] if op == "all_gather"]
        assert gathers and gathers[0] == 3 * out["head_rows"]
    assert results[0]["ops"] == results[1]["ops"]  # both ranks issue the same collectives
