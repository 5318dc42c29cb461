"""GPUs from real tickets: names in every common spelling, closest matches for a typo, and a
card described by memory and capability."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.cli.gpu_options import parse_capability
from eaglegraph.errors import BadInput
from eaglegraph.known.gpus import GPU_TABLE
from eaglegraph.rig.gpus import get_gpu

pytestmark = pytest.mark.fast


@pytest.mark.parametrize(
    ("spelling", "name", "sm", "gib"),
    [
        ("H800", "H800", 90, 79.2),
        ("h20", "H20", 90, 95.0),
        ("A800", "A800", 80, 79.2),
        ("L20", "L20", 89, 44.4),
        ("NVIDIA H100 80GB HBM3", "H100", 90, 79.2),  # torch's device name
        ("H100-SXM5-80GB", "H100", 90, 79.2),
        ("NVIDIA H100 PCIe", "H100-PCIe", 90, 79.2),
        ("NVIDIA A100-SXM4-40GB", "A100-40GB", 80, 39.4),
        ("NVIDIA GeForce RTX 4090", "RTX-4090", 89, 23.6),
        ("rtx_5090", "RTX-5090", 120, 31.4),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000", 120, 94.5),
        ("GB300", "GB300", 103, 268.0),
        ("B300", "B300", 103, 268.0),
    ],
)
def test_names_in_ticket_spellings(spelling: str, name: str, sm: int, gib: float) -> None:
    gpu = get_gpu(spelling)
    assert (gpu.name, gpu.sm, gpu.memory_gib) == (name, sm, gib)


def test_every_spelling_names_one_card() -> None:
    from eaglegraph.known.gpus import normalize_gpu_name

    seen: dict[str, str] = {}
    for gpu in GPU_TABLE:
        for spelling in (gpu.name, *gpu.aliases):
            key = normalize_gpu_name(spelling)
            assert seen.setdefault(key, gpu.name) == gpu.name, spelling


def test_unknown_name_gets_the_closest() -> None:
    with pytest.raises(BadInput) as err:
        get_gpu("H10")
    assert err.value.hint is not None and "H100" in err.value.hint and "H20" in err.value.hint


def test_memory_and_capability_describe_any_card() -> None:
    gpu = get_gpu("MI-card", 191.5, (9, 0))
    assert (gpu.name, gpu.sm, gpu.memory_gib) == ("MI-card", 90, 191.5)
    bigger = get_gpu("H100", 93.1)
    assert (bigger.name, bigger.memory_gib, bigger.sm) == ("H100", 93.1, 90)
    assert get_gpu(None, None, (12, 1)).sm == 121
    assert parse_capability("sm_90") == (9, 0) and parse_capability("12.0") == (12, 0)
    with pytest.raises(BadInput):
        parse_capability("9")


def test_cli_plans_for_h800_and_refuses_h10() -> None:
    ok = CliRunner().invoke(cli, ["inspect", "tiny-llama-eagle3", "--gpu", "H800", "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["plan"]["gpu"] == {
        "name": "H800",
        "capability": "9.0",
        "memory_gib": 79.2,
    }
    bad = CliRunner().invoke(cli, ["inspect", "tiny-llama-eagle3", "--gpu", "H10"])
    assert bad.exit_code == 2 and "did you mean H100" in bad.output
    custom = CliRunner().invoke(
        cli,
        ["inspect", "tiny-llama-eagle3", "--gpu-memory", "44.4", "--capability", "8.9", "--json"],
    )
    assert custom.exit_code == 0, custom.output
    assert json.loads(custom.output)["plan"]["gpu"]["capability"] == "8.9"


def test_a_described_card_survives_the_run_spec_round_trip() -> None:
    from eaglegraph.probes.spec import RunSpec, resolve_run
    from eaglegraph.rig.options import PlanChoices

    spec = resolve_run(
        "tiny-llama-eagle3", None, None, plan=PlanChoices(gpu="H800", gpu_memory_gib=70.0)
    )
    again = RunSpec.from_json(spec.to_json())
    assert (again.options.gpu.name, again.options.gpu.memory_gib) == ("H800", 70.0)
