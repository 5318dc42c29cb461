"""`stacks PID PID …`: every rank named as its engine titled it, the odd one out marked."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.errors import BadInput, MissingEnvironment
from eaglegraph.results.stacks import RankName, RankStack
from eaglegraph.system.pyspy import dump_stacks
from eaglegraph.system.rank_stacks import divergence
from eaglegraph.system.ranks import rank_from_environ, rank_from_title, rank_name

# A rank of a TP server: the title the engine sets is the last argument (setproctitle is not
# installed here; /proc/PID/cmdline shows either the same way). All but one rank wait in the
# collective; the odd one replays a graph (sleeping inside it, like a spinning kernel's host).
RANK = textwrap.dedent(
    """
    import sys, time

    def all_reduce():
        time.sleep(600)

    def replay():
        time.sleep(600)

    def execute_model(odd):
        replay() if odd else all_reduce()

    print("ready", flush=True)
    execute_model(sys.argv[1] == "odd")
    """
)


@pytest.fixture
def ranks(tmp_path: Path) -> Iterator[list[subprocess.Popen[str]]]:
    script = tmp_path / "rank.py"
    script.write_text(RANK)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), "odd" if tp == 2 else "even", f"VLLM::Worker_TP{tp}"],
            stdout=subprocess.PIPE,
            text=True,
        )
        for tp in range(3)
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=10)


def test_titles_of_both_engines_name_the_rank() -> None:
    v = rank_from_title("VLLM::Worker_DP1_TP3_EP3")
    assert v is not None and (v.engine, v.role, v.label) == ("vllm", "Worker", "DP1 TP3 EP3")
    assert v.axes == {"DP": 1, "TP": 3, "EP": 3}
    s = rank_from_title("sglang::scheduler_DP0_TP1_EP1")
    assert s is not None and (s.engine, s.label) == ("sglang", "DP0 TP1 EP1")
    single = rank_from_title("VLLM::Worker")  # TP 1: no axis in the title
    assert single is not None and single.label == "Worker"
    assert rank_from_title("python -m vllm.entrypoints.openai.api_server") is None
    assert rank_from_title("foo::Worker_TP0") is None  # not an engine's prefix


def test_launcher_environment_names_the_rank_when_no_title() -> None:
    env = b"PATH=/usr/bin\0LOCAL_RANK=1\0RANK=5\0"
    assert rank_from_environ(env) == RankName("RANK 5", source="env")
    assert rank_from_environ(b"PATH=/bin\0") is None
    assert rank_name(42, "python serve.py", b"").label == "pid 42"


def _row(label: str, wait: str, collective: str | None, phase: str) -> RankStack:
    return RankStack(1, RankName(label), 0, phase, f"{wait} (x.py:1)", collective, False)


def test_the_rank_outside_the_majority_differs() -> None:
    rows = [_row(f"TP{i}", "all_reduce", "all_reduce", "collective wait (NCCL)") for i in range(3)]
    rows.append(_row("TP3", "replay", None, "cuda-graph replay"))
    text = divergence(rows)
    assert [r.differs for r in rows] == [False, False, False, True]
    assert text.startswith("TP3 differs: cuda-graph replay at replay")
    assert "TP0, TP1, TP2 wait in all_reduce" in text


def test_two_ranks_the_one_outside_the_collective_differs() -> None:
    rows = [
        _row("TP0", "all_reduce", "all_reduce", "collective wait (NCCL)"),
        _row("TP1", "forward", None, "serving loop"),
    ]
    assert divergence(rows).startswith("TP1 differs")
    assert [r.differs for r in rows] == [False, True]


def test_no_rank_differs_when_all_wait_alike_or_there_is_no_majority() -> None:
    same = [_row(f"TP{i}", "all_reduce", "all_reduce", "collective wait (NCCL)") for i in range(4)]
    assert divergence(same).startswith("all 4 ranks")
    assert not any(r.differs for r in same)
    mixed = [_row(f"TP{i}", f"f{i}", None, "serving loop") for i in range(3)]
    assert divergence(mixed).startswith("no majority")
    assert not any(r.differs for r in mixed)


def test_real_ranks_the_odd_one_is_named(ranks: list[subprocess.Popen[str]]) -> None:
    try:
        report = dump_stacks([p.pid for p in ranks])
    except MissingEnvironment as exc:
        pytest.skip(f"this machine does not allow ptrace: {exc}")
    assert report.pids == [p.pid for p in ranks]
    by_label = {r.rank.label: r for r in report.ranks}
    assert sorted(by_label) == ["TP0", "TP1", "TP2"]
    assert by_label["TP0"].collective == "all_reduce" and not by_label["TP0"].differs
    assert by_label["TP2"].differs and by_label["TP2"].collective is None
    assert by_label["TP2"].phase == "cuda-graph replay"
    assert report.divergence.startswith("TP2 differs: cuda-graph replay at replay")
    # the two waiting ranks share one stack group
    assert by_label["TP0"].group == by_label["TP1"].group != by_label["TP2"].group


def test_real_ranks_through_the_cli(ranks: list[subprocess.Popen[str]]) -> None:
    pids = [str(p.pid) for p in ranks]
    res = CliRunner().invoke(cli, ["stacks", "--json", *pids])
    if res.exit_code == 3 and "ptrace" in res.output:
        pytest.skip("this machine does not allow ptrace")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert [r["rank"]["label"] for r in doc["ranks"]] == ["TP0", "TP1", "TP2"]
    assert [r["differs"] for r in doc["ranks"]] == [False, False, True]
    res = CliRunner().invoke(cli, ["stacks", "--no-color", *pids], terminal_width=80)
    assert res.exit_code == 0, res.output
    assert "TP2 differs" in res.output and "▶ TP2" in res.output
    assert all(len(line) <= 80 for line in res.output.splitlines())


def test_every_pid_is_checked_before_any_dump() -> None:
    with pytest.raises(BadInput, match="no process with PID"):
        dump_stacks([1, 2**22 + 777])
