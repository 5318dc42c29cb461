"""Every planning command plans SGLang's graphs for the deployment's layout (issue 28).

SGLang's decode batch-size list depends on the TP size (`cuda_graph_max_bs` by GPU memory
and `tp_size < 4`), on DP attention (the request pool per DP worker, and batch sizes aligned to
the attention-TP size) and on two-batch overlap (sizes aligned to 2). `inspect` is the
reference: `capture`, `probe` and `memdiff` parse the same flags through their own options and
must build the same plan (they have no dry run, so the test runs the planning their command
runs: `pop_plan_and_layout`, then the spec and `build_plan`)."""

from __future__ import annotations

import json
from typing import Any

import click
import pytest
from click.testing import CliRunner

from eaglegraph.cli import capture_cmd, cli, memdiff_cmd, probe_cmd
from eaglegraph.cli.parallel_options import pop_plan_and_layout
from eaglegraph.cli.rig_options import build_spec, pop_rig_kwargs
from eaglegraph.probes.probing import ProbeRequest
from eaglegraph.rig.inspect import plan_facts
from eaglegraph.rig.plan import build_plan

pytestmark = pytest.mark.fast

MODEL = "tiny-llama-eagle3"
# every engine default inspect would take for the GPU given, so the commands differ only by
# what they are: the layout must be the one input left that moves the plan
FLAGS = (
    "--framework", "sglang", "--gpu", "H100", "--max-running-requests", "600", "-K", "3",
    "--attention-backend", "triton", "--max-num-batched-tokens", "2048",
)  # fmt: skip
COMMANDS = {
    "capture": capture_cmd.command,
    "probe": probe_cmd.command,
    "memdiff": memdiff_cmd.command,
}


def _inspect(*args: str) -> list[tuple[str, str, list[Any]]]:
    result = CliRunner().invoke(cli, ["inspect", MODEL, "--json", *FLAGS, *args])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)["plan"]
    return [(p["phase"], p["mode"], p["descriptors"]) for p in plan["phases"]]


def _command(name: str, *args: str) -> list[tuple[str, str, list[Any]]]:
    """The plan `name` builds for these flags, parsed by the command's own options."""
    command: click.Command = COMMANDS[name]
    ctx = command.make_context(name, [MODEL, *FLAGS, *args])
    kwargs = dict(ctx.params)
    plan, _layout = pop_plan_and_layout(kwargs)
    if name == "probe":
        spec = ProbeRequest.for_model(MODEL, plan, pop_rig_kwargs(kwargs)).spec
    else:
        spec = build_spec(MODEL, kwargs, plan=plan)
    facts = plan_facts(build_plan(spec.options))
    return [(p.phase, p.mode, p.descriptors) for p in facts.phases]


def _sizes(phases: list[tuple[str, str, list[Any]]], phase: str) -> list[int]:
    return next([reqs for _, reqs in d] for name, _, d in phases if name == phase)


LAYOUTS = [
    ("--tp", "2"),
    ("--tp", "4"),
    ("--tp-size", "4", "--dp-size", "2", "--enable-dp-attention"),
    ("--tp-size", "4", "--attn-dp-size", "4", "--enable-two-batch-overlap"),
]


@pytest.mark.parametrize("layout", LAYOUTS, ids=" ".join)
@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_planning_command_plans_as_inspect(name: str, layout: tuple[str, ...]) -> None:
    assert _command(name, *layout) == _inspect(*layout)


def test_tp4_takes_the_larger_default_max_bs() -> None:
    """H100 (80 GB): cuda_graph_max_bs 256 at TP < 4, 512 at TP >= 4
    (arg_groups/memory_hook.py::handle_gpu_memory_settings): capture used to plan TP 1's."""
    assert max(_sizes(_command("capture", "--tp", "2"), "target")) == 256
    assert max(_sizes(_command("capture", "--tp", "4"), "target")) == 512


def test_dp_attention_aligns_the_draft_runners_but_not_the_target() -> None:
    """TP 4 with 2 attention-DP groups: attention TP 2, a gathered buffer (mul_base 2). The
    target verify aligns bs x 4 draft tokens (every size), the draft runners bs itself; the
    pool is 600 // 2 = 300 requests per DP worker (0.5.23 base_cuda_graph_runner.py::
    get_batch_sizes_to_capture, kv_cache_configurator.py::resolve_max_num_reqs)."""
    phases = _inspect("--tp-size", "4", "--dp-size", "2", "--enable-dp-attention")
    target, decode = _sizes(phases, "target"), _sizes(phases, "draft_decode")
    assert target[:9] == [1, 2, 3, 4, 5, 6, 7, 8, 10] and target[-1] == 300
    assert decode[:5] == [2, 4, 6, 8, 10] and all(bs % 2 == 0 for bs in decode)
    assert _sizes(phases, "draft_prefill") == decode  # the draft extend: width 1 as well
    assert 300 in decode  # the pool (300) joins the list, as a multiple of 2


def test_two_batch_overlap_keeps_even_sizes_on_every_runner() -> None:
    """TBO doubles mul_base and counts one token per request, target included (attention DP
    over every rank: attention TP 1, so the 2 is TBO's alone; without an A2A backend 0.5.23
    runs TBO only under DP attention, validation_hook.py::check_two_batch_overlap)."""
    phases = _inspect("--tp-size", "2", "--attn-dp-size", "2", "--enable-two-batch-overlap")
    for phase in ("target", "draft_decode"):
        sizes = _sizes(phases, phase)
        assert sizes[:4] == [2, 4, 6, 8] and all(bs % 2 == 0 for bs in sizes)


def test_two_batch_overlap_is_sglangs() -> None:
    result = CliRunner().invoke(cli, ["inspect", MODEL, "--enable-two-batch-overlap"])
    assert result.exit_code == 2
    assert "--enable-two-batch-overlap is SGLang's" in result.output
