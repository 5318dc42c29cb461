"""The DP agreement over a real collective: two processes on gloo (127.0.0.1, a free port,
10 s timeouts) each run `rank_step` with an exchange built on an int-tensor all_gather, as the
engines' CPU groups do, and their steps give the same findings as the in-process simulation —
including a scenario where the ranks issue different numbers of DP syncs (the rows' tags keep
the all_gathers paired, so it ends instead of hanging)."""

from __future__ import annotations

import pickle
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

from eaglegraph.known.dp_scenarios import SCENARIOS
from eaglegraph.known.hazards import HAZARDS
from eaglegraph.probes.dp_scenarios import compare_ranks, run_scenario

CASES = (
    ("vllm-drafter-phase-shift", "vllm-v1-0.11-dp"),
    ("vllm-drafter-phase-shift", "vllm-current"),
    ("sglang-idle-vs-missing-seed", "sglang-0.5.15"),
    ("sglang-idle-vs-missing-seed", "sglang-current"),
    ("vllm-mrv2-idle-rank-skips-propose", "vllm-mrv2-pre-35294"),
)

WORKER = textwrap.dedent(
    """
    import datetime, pickle, sys
    import torch
    import torch.distributed as dist
    from eaglegraph.known.dp_scenarios import SCENARIOS
    from eaglegraph.known.profiles import PROFILES
    from eaglegraph.rig.dp_agreement import rank_step

    rank, port, out, cases = int(sys.argv[1]), sys.argv[2], sys.argv[3], eval(sys.argv[4])
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=2, timeout=datetime.timedelta(seconds=10))

    def exchange(row):
        mine = torch.tensor(row, dtype=torch.int64)
        rows = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
        dist.all_gather(rows, mine)
        return [r.tolist() for r in rows]

    steps = {}
    for name, profile in cases:
        sc = SCENARIOS[name]
        steps[name, profile] = [
            rank_step(rank, batches[rank], PROFILES[profile], exchange, sc.setup, sc.runner)
            for batches in sc.steps
        ]
    dist.barrier()
    dist.destroy_process_group()
    with open(out, "wb") as f:
        pickle.dump(steps, f)
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_two_gloo_ranks_reach_the_simulations_findings(tmp_path: Path) -> None:
    port = str(_free_port())
    outs = [tmp_path / f"rank{r}.pkl" for r in range(2)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(r), port, str(outs[r]), repr(CASES)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(2)
    ]
    logs = []
    for p in procs:
        try:
            logs.append(p.communicate(timeout=40)[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
    assert all(p.returncode == 0 for p in procs), "\n".join(logs)
    per_rank = [pickle.loads(o.read_bytes()) for o in outs]
    for name, profile in CASES:
        scenario = SCENARIOS[name]
        simulated = run_scenario(scenario, profile)
        hazard = HAZARDS[scenario.hazard]
        for i, step in enumerate(simulated.steps):
            ranks = (per_rank[0][name, profile][i], per_rank[1][name, profile][i])
            assert ranks == step.ranks, (name, profile, i)
            assert compare_ranks(i, ranks, hazard) == step.findings
        assert simulated.as_expected, (name, profile)
