"""The three EAGLE kernels against loop references, padding fills included."""

from __future__ import annotations

import pytest
import torch

from eaglegraph.kernels.eagle import (
    prepare_eagle_decode,
    prepare_eagle_inputs,
    update_eagle_draft_inputs,
)
from eaglegraph.kernels.guard import Guard

from .reference import randint, randn

STALE = 77
Buffers = dict[str, torch.Tensor]


def ref_prepare_eagle_inputs(
    t: Buffers, e: Buffers, num_reqs: int, max_num_reqs: int, pad_lti: bool
) -> Buffers:
    """Loop reference of vLLM's _prepare_eagle_inputs_kernel on CPU copies of the buffers."""
    out = {name: x.cpu().clone() for name, x in e.items()}
    qsl = t["qsl"].cpu().tolist()
    for r in range(num_reqs):
        qs, qe = qsl[r], qsl[r + 1]
        query_len = qe - qs - int(t["num_rejected"][r])
        for j in range(1, query_len):
            out["input_ids"][qs + j - 1] = t["input_ids"][qs + j]
        last = qs + query_len - 1
        out["input_ids"][last] = t["next_tokens"][r]
        out["last_token_indices"][r] = last
        out["positions"][qs : qs + query_len] = t["positions"][qs : qs + query_len].cpu()
        out["qsl"][r] = qs
        out["seq_lens"][r] = t["seq_lens"][r]
    out["step"].fill_(0)
    out["qsl"][num_reqs : max_num_reqs + 1] = qsl[num_reqs]
    out["seq_lens"][num_reqs:max_num_reqs] = 0
    if pad_lti:
        out["last_token_indices"][num_reqs:max_num_reqs] = 0
    return out


def make_step(
    device: torch.device, gen: torch.Generator, num_reqs: int = 3, max_num_reqs: int = 6, k: int = 3
) -> tuple[Buffers, Buffers]:
    """A verified target step: a prefill chunk of 300 tokens (> one copy block) + decodes."""
    T = 330
    q_lens = [k + 1, 300, k + 1][:num_reqs]
    qsl = [0]
    for n in q_lens:
        qsl.append(qsl[-1] + n)
    qsl += [qsl[-1]] * (max_num_reqs - num_reqs)
    target = {
        "qsl": torch.tensor(qsl, dtype=torch.int32, device=device),
        "seq_lens": torch.tensor(
            [50, 340, 9, 5, 5, 5][:max_num_reqs], dtype=torch.int32, device=device
        ),
        "input_ids": randint(1, 1000, (T,), gen, torch.int32, device),
        "positions": randint(1, 1000, (T,), gen, torch.int64, device),
        "num_rejected": torch.tensor(
            [2, 0, 0, 4, 4, 4][:max_num_reqs], dtype=torch.int32, device=device
        ),
        "next_tokens": randint(1000, 2000, (max_num_reqs,), gen, torch.int64, device),
    }
    eagle = {  # stale garbage everywhere
        "input_ids": torch.full((T,), STALE, dtype=torch.int32, device=device),
        "positions": torch.full((T,), STALE, dtype=torch.int64, device=device),
        "qsl": torch.full((max_num_reqs + 1,), STALE, dtype=torch.int32, device=device),
        "seq_lens": torch.full((max_num_reqs,), STALE, dtype=torch.int32, device=device),
        "last_token_indices": torch.full((max_num_reqs,), 300, dtype=torch.int64, device=device),
        "step": torch.tensor(5, dtype=torch.int64, device=device),
    }
    return target, eagle


def run_prepare_inputs(
    target: Buffers,
    eagle: Buffers,
    num_reqs: int,
    max_num_reqs: int,
    pad_lti: bool,
    guard: Guard | None = None,
) -> None:
    prepare_eagle_inputs(
        target["qsl"],
        target["seq_lens"],
        target["input_ids"],
        target["positions"],
        target["num_rejected"],
        target["next_tokens"],
        eagle["input_ids"],
        eagle["positions"],
        eagle["qsl"],
        eagle["seq_lens"],
        eagle["last_token_indices"],
        eagle["step"],
        num_reqs,
        max_num_reqs,
        pad_last_token_indices=pad_lti,
        guard=guard,
    )


def check_prepare_eagle_inputs(
    device: torch.device, gen: torch.Generator, pad_lti: bool = True, num_reqs: int = 3
) -> None:
    target, eagle = make_step(device, gen, num_reqs=num_reqs)
    expected = ref_prepare_eagle_inputs(target, eagle, num_reqs, 6, pad_lti)
    run_prepare_inputs(target, eagle, num_reqs, 6, pad_lti)
    for name, exp in expected.items():
        assert torch.equal(eagle[name].cpu(), exp), name


@pytest.mark.parametrize("pad_lti", [True, False], ids=["post-39773", "pre-39773"])
def test_prepare_eagle_inputs(device: torch.device, gen: torch.Generator, pad_lti: bool) -> None:
    check_prepare_eagle_inputs(device, gen, pad_lti)


def test_prepare_eagle_inputs_pre_fix_leaves_stale_indices(
    device: torch.device, gen: torch.Generator
) -> None:
    target, eagle = make_step(device, gen)
    run_prepare_inputs(target, eagle, 3, 6, pad_lti=False)
    assert eagle["last_token_indices"][3:].tolist() == [300, 300, 300]
    run_prepare_inputs(target, eagle, 3, 6, pad_lti=True)
    assert eagle["last_token_indices"][3:].tolist() == [0, 0, 0]


def test_prepare_eagle_inputs_single_and_no_request(
    device: torch.device, gen: torch.Generator
) -> None:
    check_prepare_eagle_inputs(device, gen, num_reqs=1)
    target, eagle = make_step(device, gen, num_reqs=1)
    run_prepare_inputs(target, eagle, 0, 6, pad_lti=True)
    assert eagle["qsl"].tolist() == [0] * 7
    assert eagle["seq_lens"].tolist() == [0] * 6 and int(eagle["step"]) == 0
    assert torch.all(eagle["input_ids"] == STALE)


def check_prepare_eagle_decode(device: torch.device, gen: torch.Generator) -> None:
    num_reqs, R, k, max_model_len = 3, 6, 4, 64
    draft_tokens = randint(1, 500, (R, k), gen, torch.int64, device)
    target_seq_lens = torch.tensor([10, 64, 30, 9, 9, 9], dtype=torch.int32, device=device)
    num_rejected = torch.tensor([2, 0, 3, 1, 1, 1], dtype=torch.int32, device=device)
    positions = torch.tensor([7, 63, 26, STALE, STALE, STALE], dtype=torch.int64, device=device)
    input_ids = torch.full((8,), STALE, dtype=torch.int32, device=device)
    qsl = torch.full((R + 1,), STALE, dtype=torch.int32, device=device)
    seq_lens = torch.full((R,), STALE, dtype=torch.int32, device=device)
    prepare_eagle_decode(
        draft_tokens[:, 0],
        target_seq_lens,
        num_rejected,
        input_ids,
        positions,
        qsl,
        seq_lens,
        num_reqs,
        R,
        max_model_len,
    )
    assert input_ids[:num_reqs].tolist() == draft_tokens[:num_reqs, 0].tolist()
    assert torch.all(input_ids[num_reqs:] == STALE)
    assert positions.tolist() == [8, 63, 27, STALE, STALE, STALE]
    assert seq_lens.tolist() == [9, 64, 28, 0, 0, 0]
    assert qsl.tolist() == [0, 1, 2, 3, 3, 3, 3]
    # The [R, K] tensor itself reads column 0 too.
    input_ids.fill_(STALE)
    prepare_eagle_decode(
        draft_tokens,
        target_seq_lens,
        num_rejected,
        input_ids,
        positions,
        qsl,
        seq_lens,
        num_reqs,
        R,
        max_model_len,
    )
    assert input_ids[:num_reqs].tolist() == draft_tokens[:num_reqs, 0].tolist()


def test_prepare_eagle_decode(device: torch.device, gen: torch.Generator) -> None:
    check_prepare_eagle_decode(device, gen)


def check_update_eagle_draft_inputs(device: torch.device, gen: torch.Generator) -> None:
    num_reqs, R, k, H, max_model_len = 3, 5, 3, 1100, 40  # H > one copy block
    sampled = randint(1, 900, (R,), gen, torch.int64, device)
    output_hidden = randn((R + 2, H), gen, torch.float32, device)
    draft_tokens = torch.full((R, k), -1, dtype=torch.int64, device=device)
    input_ids = torch.full((8,), STALE, dtype=torch.int32, device=device)
    hidden = randn((8, H), gen, torch.float32, device)
    positions = torch.tensor([5, 39, 20, STALE, STALE, STALE, STALE, STALE], device=device)
    seq_lens = torch.tensor([6, 40, 21, 9, 9], dtype=torch.int32, device=device)
    step = torch.tensor(0, dtype=torch.int64, device=device)

    def run() -> None:
        update_eagle_draft_inputs(
            sampled,
            output_hidden,
            draft_tokens,
            input_ids,
            hidden,
            positions,
            seq_lens,
            step,
            num_reqs,
            k,
            max_model_len,
        )

    hidden_before = hidden.clone()
    for s in (1, 2):  # the same launch serves every step: the step is read on the device
        step.fill_(s)
        last = s >= k - 1
        snapshot = (input_ids.clone(), hidden.clone(), positions.clone(), seq_lens.clone())
        run()
        assert draft_tokens[:num_reqs, s].tolist() == sampled[:num_reqs].tolist()
        if last:
            assert torch.equal(input_ids, snapshot[0]) and torch.equal(hidden, snapshot[1])
            assert torch.equal(positions, snapshot[2]) and torch.equal(seq_lens, snapshot[3])
        else:
            assert input_ids[:num_reqs].tolist() == sampled[:num_reqs].tolist()
            assert torch.equal(hidden[:num_reqs], output_hidden[:num_reqs])
            assert positions[:num_reqs].tolist() == [6, 39, 21]
            assert seq_lens[:num_reqs].tolist() == [7, 40, 22]
    assert torch.all(draft_tokens[:, 0] == -1) and torch.all(draft_tokens[num_reqs:] == -1)
    assert torch.equal(hidden[num_reqs:], hidden_before[num_reqs:])
    assert torch.all(input_ids[num_reqs:] == STALE) and seq_lens[num_reqs:].tolist() == [9, 9]


def test_update_eagle_draft_inputs(device: torch.device, gen: torch.Generator) -> None:
    check_update_eagle_draft_inputs(device, gen)
