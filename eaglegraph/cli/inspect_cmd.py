"""`eaglegraph inspect`: headers-only look at a pair, its capture plan and known hazards."""

from __future__ import annotations

from typing import Any

import click

from eaglegraph.cli.app import App, output_options
from eaglegraph.cli.options import (
    check_choices,
    dtype_option,
    fail_on_option,
    pair_arguments,
    plan_options_for,
    warn,
)
from eaglegraph.cli.outputs import Outputs, output_files
from eaglegraph.cli.parallel_options import parallel_options, pop_plan_and_layout
from eaglegraph.results.findings import reaches
from eaglegraph.results.inspect import InspectReport


@click.command("inspect")
@pair_arguments
@plan_options_for(engine_defaults=True)
@parallel_options
@dtype_option
@click.option(
    "--predict-memory",
    is_flag=True,
    help="Predict each graph pool under each pool policy by simulating the caching "
    "allocator over the rig's capture sequence, recorded on the CPU (takes a while).",
)
@fail_on_option("error")
@output_files(InspectReport, inputs=("model_dir", "target_dir", "draft_dir"))
@output_options
def command(
    model_dir: str | None,
    target_dir: str | None,
    draft_dir: str | None,
    dtype: str,
    predict_memory: bool,
    fail_on: str,
    outputs: Outputs,
    app: App,
    **kwargs: Any,
) -> None:
    """Inspect a target/draft pair from config.json and safetensors headers only.

    MODEL_DIR holds target/ and draft/ subfolders, two model folders, a draft whose config
    names its verifier, a target with MTP layers, one side alone — or is a preset name.
    Reports geometry, the draft kind and its evidence, pair checks, the capture plan per phase
    and a memory estimate. Never loads tensor data.
    """
    plan, layout = pop_plan_and_layout(kwargs)
    check_choices(model_dir, target_dir, draft_dir, plan)  # before torch is imported
    from eaglegraph.probes.inspection import InspectRequest

    request = InspectRequest(
        model_dir,
        target_dir,
        draft_dir,
        plan=plan,
        dtype=dtype,
        predict_memory=predict_memory,
        layout=layout,
    )
    inspection = request.resolve()
    warn(inspection.warnings())
    with app.progress("predicting graph memory") as progress:
        report = inspection.run(on_stage=lambda stage: progress(stage, milestone=stage))
    app.finish(report, outputs, 1 if reaches(report.findings, fail_on) else 0)
