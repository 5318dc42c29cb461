"""`--engine VERSION` on the plan commands picks the profile that release behaves as."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli


def _inspect(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["inspect", "tiny-llama-eagle3", "--json", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("engine", "framework", "behavior", "hazard"),
    [
        ("vllm==0.19.1", "vllm", "vllm-pre-39773", "unpadded-last-token-indices"),
        # Llama runs MRV1 in 0.22 (global pool); the dedicated EAGLE pool is MRV2's
        ("vllm 0.22.0", "vllm", "vllm-0.22", None),
        ("vllm==0.24.0", "vllm", "vllm-0.23", None),
        ("vllm==0.33.0", "vllm", "vllm-current", None),
        ("sglang==0.5.3", "sglang", "sglang-0.5.3", "stale-padded-positions"),
    ],
)
def test_engine_version_selects_the_profile(
    engine: str, framework: str, behavior: str, hazard: str | None
) -> None:
    code, out, err = _inspect("--engine", engine)
    assert code in (0, 1), err
    plan = json.loads(out)["plan"]
    assert (plan["framework"], plan["behavior"]) == (framework, behavior)
    hazards = {f.get("hazard") for f in plan["findings"]}
    assert hazard is None or hazard in hazards


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--engine", "vllm==soon"], "cannot read the version"),
        (["--engine", "trtllm==1.0"], "cannot read engine version"),
        (["--engine", "vllm==0.24.0", "--behavior", "vllm-0.22"], "not both"),
        (["--engine", "sglang==0.5.9", "--framework", "vllm"], "belongs to sglang"),
    ],
)
def test_bad_engine_versions_are_one_line_errors(args: list[str], message: str) -> None:
    code, _, err = _inspect(*args)
    assert code == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
