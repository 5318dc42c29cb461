"""CUDA smoke: target and drafts in bf16 on the GPU, eager and replayed from a CUDA graph.

Skips cleanly without a GPU. The graph capture checks the forwards have no host syncs and
that the Triton kernels launch with Python-int grids.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from eaglegraph.models import DraftArch, DraftStep, load_draft, random_draft, random_target
from tests.models.draft_support import TARGET_CONFIG, VD, draft_config, eagle3_tensors, make_target
from tests.models.models_support import DenseAttention, geometry_of, write_checkpoint

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

ARCH = DraftArch(kind="eagle3", target_hidden_size=64, num_aux=3, draft_vocab_size=VD)


def test_random_pair_forward_and_graph_replay_bf16() -> None:
    dev = torch.device("cuda")
    target = random_target(geometry_of(TARGET_CONFIG), "bfloat16", dev, seed=0)
    draft = random_draft(
        geometry_of(draft_config("eagle3", draft_vocab_size=VD)),
        ARCH,
        target,
        "bfloat16",
        dev,
        seed=1,
    )
    t = 16
    ids = torch.randint(0, 160, (t,), device=dev)
    pos = torch.arange(t, device=dev)
    attn = DenseAttention()

    def step() -> tuple[torch.Tensor, torch.Tensor]:
        hidden, aux = target(ids, pos, attn, aux_layer_ids=(1, 2, 3))
        assert aux is not None
        normed, _ = draft(DraftStep(ids, pos, aux, attn))
        return target.compute_logits(hidden), draft.compute_logits(normed)

    with torch.no_grad():
        eager = step()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            step()  # warm up (Triton compiles outside the capture)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            captured = step()
        graph.replay()
        torch.cuda.synchronize()
    for want, got in zip(eager, captured, strict=True):
        assert torch.isfinite(want).all()
        torch.testing.assert_close(got, want, atol=0, rtol=0)


def test_load_on_cuda_matches_cpu(tmp_path: Path) -> None:
    cpu_target = make_target()
    config = draft_config("eagle3", draft_vocab_size=VD)
    folder = write_checkpoint(
        tmp_path, config, eagle3_tensors(geometry_of(config), ARCH, cpu_target)
    )
    dev = torch.device("cuda")
    target = random_target(geometry_of(TARGET_CONFIG), "float32", dev, seed=0)
    target.load_state_dict(cpu_target.state_dict())
    draft_gpu = load_draft(folder, geometry_of(config), ARCH, target, "bfloat16", dev)
    draft_cpu = load_draft(folder, geometry_of(config), ARCH, cpu_target, "bfloat16", "cpu")
    for (name, a), (_, b) in zip(
        draft_gpu.state_dict().items(), draft_cpu.state_dict().items(), strict=True
    ):
        assert a.device.type == "cuda", name
        torch.testing.assert_close(a.cpu(), b, atol=0, rtol=0, msg=name)
