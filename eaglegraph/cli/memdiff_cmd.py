"""`eaglegraph memdiff`: pool memory under two policies, each captured in a fresh process."""

from __future__ import annotations

from typing import Any

import click

from eaglegraph.cli.app import make_app, output_options
from eaglegraph.cli.options import (
    check_choices,
    plan_options,
    pool_option,
    pop_plan_kwargs,
    predict_option,
    timeout_option,
    warn_suspicious,
)
from eaglegraph.cli.outputs import Outputs, output_files
from eaglegraph.cli.rig_options import build_spec, rig_options
from eaglegraph.results.memdiff import MemdiffRun


@click.command("memdiff")
@click.argument("model_dir", metavar="MODEL_DIR")
@pool_option("Pool policy of the first capture.", "shared")
@pool_option("Pool policy to compare with (must differ from --pool).", "dedicated", "--against")
@plan_options
@rig_options
@timeout_option(1800.0, "Seconds per capture.")
@predict_option("Each capture predicts its pools on the CPU first and stops if they will not fit.")
@output_files(MemdiffRun, refusals=True)
@output_options
@click.pass_context
def command(
    ctx: click.Context,
    model_dir: str,
    pool: str,
    against: str,
    timeout: float,
    predict: bool,
    outputs: Outputs,
    json_output: bool,
    no_color: bool,
    **kwargs: Any,
) -> None:
    """Capture under --pool and --against (each in a fresh process) and diff pool memory per
    pool, per phase and per graph; check both produce identical draft tokens. Needs CUDA."""
    app = make_app(ctx, json_output, no_color)
    plan = pop_plan_kwargs(kwargs)
    check_choices(model_dir, None, None, plan)  # before torch is imported
    from eaglegraph.probes.memdiff import memdiff

    spec = build_spec(model_dir, kwargs, pool=pool, plan=plan)
    warn_suspicious(spec.open_pair(), spec.options, spec.max_model_len, force=outputs.force)
    with app.progress("memdiff") as progress:
        run = memdiff(
            spec, against, timeout, on_stage=lambda s: progress(s, milestone=s), predict=predict
        )
    app.finish(ctx, run, outputs)
