"""SGLang's --cuda-graph-max-bs (--cuda-graph-max-bs-decode from 0.5.14), release by release.

Each row's list is what the release's own functions return with that cuda_graph_max_bs,
executed from the wheel (GPU memory in MiB as `known.gpus` gives it):

- 0.5.1-0.5.2: `srt/model_executor/cuda_graph_runner.py::get_batch_sizes_to_capture` (the
  fixed list cut at cuda_graph_max_bs, extended by 16s up to it);
- 0.5.3-0.5.13: `srt/server_args.py::ServerArgs._generate_cuda_graph_batch_sizes`, then
  `cuda_graph_runner.py::get_batch_sizes_to_capture`;
- 0.5.14-0.5.18: `server_args.py::ServerArgs._generate_decode_cuda_graph_batch_sizes`, then
  `runner/base_cuda_graph_runner.py::get_batch_sizes_to_capture`;
- 0.5.19+: `arg_groups/cuda_graph_hook.py::generate_decode_cuda_graph_batch_sizes`, then
  `runner/base_cuda_graph_runner.py::get_batch_sizes_to_capture`.

A max_bs off the speculative list joins it from 0.5.10 (`if self.cuda_graph_max_bs not in
capture_bs: capture_bs.append(...)`, absent in 0.5.9); the pool (max_running_requests) joins a
list that passes it and caps it. A given max_bs is otherwise kept as typed: from 0.5.22
`arg_groups/memory_hook.py::handle_gpu_memory_settings` caps only the *default* at
max_running_requests (`decode_max_bs_is_default`).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.known.choose import profile_for_version

pytestmark = pytest.mark.fast

_SPEC = [*range(1, 9), *range(10, 33, 2)]  # 1-8, then 10-32 by 2
_FIXED = [*_SPEC, 40, 48, 56, *range(80, 161, 16)]  # 0.5.1-0.5.2 fixed list to 160
_TO_64 = [*_SPEC, *range(40, 65, 4)]
_TO_256 = [*_TO_64, *range(72, 257, 8)]

# (release, GPU, max_running_requests, cuda_graph_max_bs) -> the engine's capture list
ROWS: dict[tuple[str, str, int, int], list[int]] = {
    # cut at 50: 48 is the last fixed size; the 16s from 48 stop before 50
    ("0.5.1", "H100", 64, 50): [*_SPEC, 40, 48],
    # past the fixed list's 160: extended by 16s to 200
    ("0.5.2", "H100", 256, 200): [*_FIXED, 176, 192],
    # H200 (> 90 GiB): 160-256 by 8, then 16s from 256 to 280
    ("0.5.2", "H200", 300, 280): [*_FIXED, *range(168, 257, 8), 272],
    # 0.5.3: 40-60 by 4, no 64, and max_bs not appended
    ("0.5.3", "H100", 128, 64): [*_SPEC, *range(40, 61, 4)],
    # 0.5.9: 50 is off the list and not appended
    ("0.5.9", "H100", 128, 50): [*_SPEC, 40, 44, 48],
    # above L4's default (24): the given max_bs decides
    ("0.5.9", "L4", 64, 40): [*_SPEC, 40],
    # 0.5.10: 50 appended
    ("0.5.10", "H100", 128, 50): [*_SPEC, 40, 44, 48, 50],
    ("0.5.13", "H100", 128, 100): [*_TO_64, 72, 80, 88, 96, 100],
    # --cuda-graph-max-bs-decode era; L4 default is 24, given 300 is kept
    ("0.5.14", "L4", 300, 300): [*_TO_256, 272, 288, 300],
    ("0.5.16", "RTX-4090", 96, 1): [1],
    # the pool (40) caps a list built to 100
    ("0.5.19", "H200", 40, 100): [*_SPEC, 40],
    ("0.5.22", "B200", 600, 520): [*_TO_256, *range(272, 513, 16), 520],
    # below the H100 default (256)
    ("0.5.23", "H100", 48, 20): _SPEC[:14],
    ("0.5.23", "H100", 256, 130): [*_TO_64, *range(72, 129, 8), 130],
}


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["inspect", "llama3.1-8b-eagle3", *args])
    return result.exit_code, result.stdout, result.stderr


def _target_sizes(stdout: str) -> list[int]:
    phases = {p["phase"]: p for p in json.loads(stdout)["plan"]["phases"]}
    return [bs for _, bs in phases["target"]["descriptors"]]


@pytest.mark.parametrize("row", list(ROWS), ids=lambda r: "-".join(map(str, r)))
def test_max_bs_gives_the_engine_list(row: tuple[str, str, int, int]) -> None:
    release, gpu, mrr, max_bs = row
    renamed = tuple(map(int, release.split("."))) >= (0, 5, 14)  # the spelling users typed
    flag = "--cuda-graph-max-bs-decode" if renamed else "--cuda-graph-max-bs"
    code, out, err = _invoke(
        "--json", "--engine", f"sglang=={release}", "--gpu", gpu,
        "--max-running-requests", str(mrr), flag, str(max_bs),
    )  # fmt: skip
    assert code in (0, 1), err
    assert _target_sizes(out) == ROWS[row]


def test_both_spellings_are_one_option() -> None:
    base = ("--json", "--engine", "sglang==0.5.23", "--max-running-requests", "128")
    old = _invoke(*base, "--cuda-graph-max-bs", "50")
    new = _invoke(*base, "--cuda-graph-max-bs-decode", "50")
    assert old[1] == new[1]
    assert 50 in _target_sizes(old[1])


def test_capture_sizes_win_over_max_bs() -> None:
    """SGLang sets cuda_graph_max_bs to max(--cuda-graph-bs) when a list is given."""
    base = ("--json", "--engine", "sglang==0.5.23", "--max-running-requests", "128")
    code, out, err = _invoke(*base, "--capture-sizes", "1 2 4", "--cuda-graph-max-bs", "50")
    assert code in (0, 1), err
    assert _target_sizes(out) == [1, 2, 4]


def test_vllm_refuses_it_in_one_line() -> None:
    code, _, err = _invoke("--cuda-graph-max-bs", "50")
    assert code == 2
    line = err.strip()
    assert "\n" not in line
    assert "max_cudagraph_capture_size" in line and "--compilation-config" in line


def test_non_positive_is_refused() -> None:
    code, _, err = _invoke("--engine", "sglang==0.5.23", "--cuda-graph-max-bs", "0")
    assert code == 2
    assert "--cuda-graph-max-bs must be a positive integer" in err


@pytest.mark.parametrize("command", ["inspect", "capture", "probe", "memdiff"])
def test_every_planning_command_takes_it(command: str) -> None:
    out = CliRunner().invoke(cli, [command, "--help"], terminal_width=80).stdout
    assert "--cuda-graph-max-bs" in out and "--cuda-graph-max-bs-decode" in out


def test_the_append_flag_follows_the_releases() -> None:
    """0.5.9's `_generate_cuda_graph_batch_sizes` has no append; 0.5.10's has."""
    assert not profile_for_version("sglang", "0.5.9").profile.sglang_max_bs_appended
    assert profile_for_version("sglang", "0.5.10.post1").profile.sglang_max_bs_appended
    assert profile_for_version("sglang", "0.5.23").profile.sglang_max_bs_appended
