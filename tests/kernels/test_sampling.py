"""Argmax (torch.argmax semantics), draft-vocab mapping and greedy verification."""

from __future__ import annotations

import torch

from eaglegraph.kernels.sampling import argmax_map_draft, argmax_rows, greedy_verify

from .reference import randint, randn


def check_argmax(device: torch.device, gen: torch.Generator, vocab: int = 5000) -> None:
    n, num_rows = 6, 5
    logits = randn((n, vocab), gen, torch.float32, device)
    logits[1, 17] = logits[1, 4000] = 1e6  # tie across vocab blocks -> lowest index
    logits[2, 33] = logits[2, 34] = 1e6  # tie inside a block
    logits[3] = float("-inf")  # all -inf -> 0
    logits[4, 100] = float("nan")  # NaN wins
    logits[4, 4500] = float("nan")
    out = torch.full((n,), -7, dtype=torch.int64, device=device)
    argmax_rows(logits, out, num_rows)
    expected = torch.argmax(logits[:num_rows].cpu(), dim=-1)
    assert torch.equal(out[:num_rows].cpu(), expected)
    assert expected[1] == 17 and expected[2] == 33 and expected[3] == 0 and expected[4] == 100
    assert out[num_rows] == -7


def test_argmax_rows(device: torch.device, gen: torch.Generator) -> None:
    check_argmax(device, gen)


def test_argmax_rows_spanning_vocab_blocks(device: torch.device, gen: torch.Generator) -> None:
    """A vocab wider than any kernel block (even the interpreter's 64K): ties and NaNs across
    blocks, several rows per program."""
    vocab, n = 70_000, 5
    logits = randn((n, vocab), gen, torch.float32, device)
    logits[0, 5] = logits[0, 69_000] = 1e6  # tie across blocks -> lowest index
    logits[1, 69_999] = 1e6  # maximum in the last, partial block
    logits[2, 66_000] = float("nan")  # a NaN only in the second block wins
    logits[3] = float("-inf")
    logits[3, 65_536] = 0.0  # the only finite value, first of the second block
    out = torch.full((n,), -7, dtype=torch.int64, device=device)
    argmax_rows(logits, out, 4)
    assert out.tolist() == [5, 69_999, 66_000, 65_536, -7]


def test_argmax_small_vocab(device: torch.device, gen: torch.Generator) -> None:
    logits = randn((3, 37), gen, torch.float32, device)
    out = torch.empty(3, dtype=torch.int64, device=device)
    argmax_rows(logits, out, 3)
    assert torch.equal(out, logits.argmax(-1))


def test_argmax_map_draft(device: torch.device, gen: torch.Generator) -> None:
    vd = 300
    logits = randn((4, vd), gen, torch.float32, device)
    d2t = randint(0, 5000, (vd,), gen, torch.int64, device)
    out = torch.empty(4, dtype=torch.int64, device=device)
    argmax_map_draft(logits, d2t, out, 4)
    j = logits.argmax(-1)
    assert torch.equal(out, j + d2t[j])
    argmax_map_draft(logits, None, out, 4)
    assert torch.equal(out, j)


def ref_greedy_verify(
    target_argmax: torch.Tensor,
    draft_tokens: torch.Tensor,
    qsl: torch.Tensor,
    num_reqs: int,
    ks: list[int],
) -> tuple[list[int], list[int], list[int], list[list[int]]]:
    """Per-request loop reference; ``ks[r]`` is request r's draft count."""
    acc, rej, nxt, rows = [], [], [], []
    ta, dt, q = target_argmax.cpu().tolist(), draft_tokens.cpu().tolist(), qsl.cpu().tolist()
    width = draft_tokens.shape[1]
    for r in range(num_reqs):
        qs, qe, k = q[r], q[r + 1], ks[r]
        if qe - qs == k + 1:
            n = 0
            while n < k and dt[r][n] == ta[qs + n]:
                n += 1
            nt, nr = ta[qs + n], k - n
        else:
            n, nr = 0, 0
            nt = ta[qe - 1] if qe > qs else -1
        acc.append(n)
        rej.append(nr)
        nxt.append(nt)
        rows.append(dt[r][:n] + [nt] + [-1] * (width - n))
    return acc, rej, nxt, rows


def check_greedy_verify(device: torch.device, gen: torch.Generator) -> None:
    k, R, num_reqs = 3, 6, 5
    q_lens = [4, 4, 7, 4, 4]  # request 2 is a prefill chunk
    qsl_list = [0]
    for n in q_lens:
        qsl_list.append(qsl_list[-1] + n)
    qsl_list += [qsl_list[-1]]
    T = qsl_list[num_reqs] + 3
    target = randint(1, 50, (T,), gen, torch.int64, "cpu")
    drafts = randint(1, 50, (R, k), gen, torch.int64, "cpu")
    # Request 0 accepts all, 1 accepts one, 3 accepts none, 4 accepts two.
    drafts[0] = target[0:3]
    drafts[1, 0] = target[4]
    drafts[1, 1] = target[5] + 1
    drafts[3, 0] = target[15] + 1
    drafts[4, :2] = target[19:21]
    drafts[4, 2] = target[21] + 1
    qsl = torch.tensor(qsl_list, dtype=torch.int32, device=device)
    outs = (
        torch.full((R,), -9, dtype=torch.int32, device=device),
        torch.full((R,), -9, dtype=torch.int32, device=device),
        torch.full((R,), -9, dtype=torch.int64, device=device),
        torch.full((R, k + 1), -9, dtype=torch.int64, device=device),
    )
    greedy_verify(target.to(device), drafts.to(device), qsl, num_reqs, k, *outs)
    acc, rej, nxt, rows = ref_greedy_verify(target, drafts, qsl, num_reqs, [k] * num_reqs)
    assert acc == [3, 1, 0, 0, 2]
    assert outs[0][:num_reqs].tolist() == acc
    assert outs[1][:num_reqs].tolist() == rej
    assert outs[2][:num_reqs].tolist() == nxt
    assert outs[3][:num_reqs].tolist() == rows
    assert outs[0][num_reqs] == -9 and outs[3][num_reqs, 0] == -9


def test_greedy_verify(device: torch.device, gen: torch.Generator) -> None:
    check_greedy_verify(device, gen)


def test_greedy_verify_per_request_draft_counts(device: torch.device, gen: torch.Generator) -> None:
    """A device tensor of per-request K (0 for a prefill), capped at draft_tokens' width."""
    width, R = 3, 6
    ks = [3, 2, 0, 1, 3, 9]  # request 5's count is out of range: clamped to 3
    q_lens = [4, 3, 5, 2, 4, 4]
    qsl_list = [0, *torch.tensor(q_lens).cumsum(0).tolist()]
    target = randint(1, 9, (qsl_list[-1],), gen, torch.int64, "cpu")
    drafts = randint(1, 9, (R, width), gen, torch.int64, "cpu")
    drafts[0] = target[0:3]  # request 0 accepts everything
    drafts[1, 0] = target[4]  # request 1 accepts at least one
    outs = (
        torch.full((R,), -9, dtype=torch.int32, device=device),
        torch.full((R,), -9, dtype=torch.int32, device=device),
        torch.full((R,), -9, dtype=torch.int64, device=device),
        torch.full((R, width + 1), -9, dtype=torch.int64, device=device),
    )
    greedy_verify(
        target.to(device),
        drafts.to(device),
        torch.tensor(qsl_list, dtype=torch.int32, device=device),
        R,
        torch.tensor(ks, dtype=torch.int32, device=device),
        *outs,
    )
    clamped = [min(k, width) for k in ks]
    acc, rej, nxt, rows = ref_greedy_verify(target, drafts, torch.tensor(qsl_list), R, clamped)
    assert acc[0] == 3 and acc[1] >= 1 and acc[2] == 0 and rej[2] == 0
    assert outs[0].tolist() == acc
    assert outs[1].tolist() == rej
    assert outs[2].tolist() == nxt
    assert outs[3].tolist() == rows
