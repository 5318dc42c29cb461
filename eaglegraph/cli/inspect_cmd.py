"""`eaglegraph inspect`: headers-only look at a pair, its capture plan and known hazards."""

from __future__ import annotations

from typing import Any

import click

from eaglegraph.cli.app import make_app, output_options
from eaglegraph.cli.options import (
    dtype_option,
    fail_on_option,
    pair_arguments,
    plan_options_for,
    pop_plan_kwargs,
    warn_suspicious,
)
from eaglegraph.results.findings import reaches


@click.command("inspect")
@pair_arguments
@plan_options_for(engine_defaults=True)
@dtype_option
@click.option(
    "--predict-memory",
    is_flag=True,
    help="Predict each graph pool under each pool policy by simulating the caching "
    "allocator over the rig's capture sequence, recorded on the CPU (takes a while).",
)
@fail_on_option("error")
@output_options
@click.pass_context
def command(
    ctx: click.Context,
    model_dir: str | None,
    target_dir: str | None,
    draft_dir: str | None,
    dtype: str,
    predict_memory: bool,
    fail_on: str,
    json_output: bool,
    no_color: bool,
    **kwargs: Any,
) -> None:
    """Inspect a target/draft pair from config.json and safetensors headers only.

    MODEL_DIR holds target/ and draft/ subfolders, two model folders, a draft whose config
    names its verifier, a target with MTP layers, one side alone — or is a preset name.
    Reports geometry, the draft kind and its evidence, pair checks, the capture plan per phase
    and a memory estimate. Never loads tensor data.
    """
    app = make_app(ctx, json_output, no_color)
    from eaglegraph.probes.setup import plan_options
    from eaglegraph.reports.inspect_view import render_inspect
    from eaglegraph.results.inspect import INSPECT_SCHEMA
    from eaglegraph.rig.inspect import inspect_pair, open_pair

    pair = open_pair(model_dir, target_dir, draft_dir)
    target = pair.target
    options = plan_options(
        pair,
        pop_plan_kwargs(kwargs),
        engine_batch_defaults=True,
        architecture=target.architecture if target else None,
        head_dim=target.geometry.head_dim if target else None,
    )
    warn_suspicious(pair, options)
    report = inspect_pair(pair, options, None if dtype == "auto" else dtype)
    if predict_memory:
        import torch

        from eaglegraph.probes.memory_predict import predict_memory as predict
        from eaglegraph.rig.config import RigConfig

        with app.progress("predicting graph memory") as progress:
            progress("recording the capture sequence", milestone="recording the capture sequence")
            report.memory_prediction = predict(pair, RigConfig(options, torch.device("cpu"), dtype))
    app.emit(INSPECT_SCHEMA, report, render_inspect)
    ctx.exit(1 if reaches(report.findings, fail_on) else 0)
