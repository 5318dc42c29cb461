"""`eaglegraph memdiff`: pool memory under two policies, each captured in a fresh process."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from eaglegraph.cli.app import App, output_options
from eaglegraph.cli.options import (
    check_choices,
    plan_options,
    pool_option,
    predict_option,
    timeout_option,
    warn_suspicious,
)
from eaglegraph.cli.outputs import Outputs, output_files
from eaglegraph.cli.parallel_options import (
    parallel_options,
    pop_plan_and_layout,
    rank_limit_options,
)
from eaglegraph.cli.rig_options import build_spec, rig_options
from eaglegraph.probes.rank_limits import RankLimits
from eaglegraph.results.memdiff import MemdiffRun
from eaglegraph.results.memdiff_ranks import MemdiffRanksRun
from eaglegraph.results.parallel import ParallelLayout

if TYPE_CHECKING:
    from eaglegraph.probes.spec import RunSpec


@click.command("memdiff")
@click.argument("model_dir", metavar="MODEL_DIR")
@pool_option("Pool policy of the first capture.", "shared")
@pool_option("Pool policy to compare with (must differ from --pool).", "dedicated", "--against")
@plan_options
@rig_options
@parallel_options
@rank_limit_options
@timeout_option(1800.0, "Seconds per capture.")
@predict_option("Each capture predicts its pools on the CPU first and stops if they will not fit.")
@output_files(MemdiffRun, MemdiffRanksRun, refusals=True)
@output_options
def command(
    model_dir: str,
    pool: str,
    against: str,
    timeout: float,
    predict: bool,
    rank_limits: RankLimits,
    outputs: Outputs,
    app: App,
    **kwargs: Any,
) -> None:
    """Capture under --pool and --against (each in a fresh process) and diff pool memory per
    pool, per phase and per graph; check both produce identical draft tokens. Needs CUDA.

    At --tp/--dp > 1 each policy captures every rank (one process per rank, each policy its
    own set): per rank both pools, what lives outside the caching allocator (the capture's,
    the communicators'), and max − min across ranks. On CPU the ranks run as gloo processes
    and memory reads N/A."""
    plan, layout = pop_plan_and_layout(kwargs)
    check_choices(model_dir, None, None, plan)  # before torch is imported
    if not layout.single:
        outputs.refuse_beyond(MemdiffRanksRun, f"a memdiff at {layout.describe()}")
        spec = build_spec(model_dir, kwargs, pool=pool, plan=plan)
        warn_suspicious(spec.open_pair(), spec.options, spec.max_model_len, force=outputs.force)
        # each policy's set of ranks is one multi-rank run: --rank-timeout bounds it, as it
        # bounds capture's, within the --timeout of one capture
        _ranked(app, spec, layout, against, rank_limits.within(timeout), outputs)
        return
    from eaglegraph.probes.memdiff import memdiff

    spec = build_spec(model_dir, kwargs, pool=pool, plan=plan)
    warn_suspicious(spec.open_pair(), spec.options, spec.max_model_len, force=outputs.force)
    with app.progress("memdiff") as progress:
        run = memdiff(
            spec, against, timeout, on_stage=lambda s: progress(s, milestone=s), predict=predict
        )
    app.finish(run, outputs)


def _ranked(
    app: App,
    spec: RunSpec,
    layout: ParallelLayout,
    against: str,
    limits: RankLimits,
    outputs: Outputs,
) -> None:
    from eaglegraph.probes.memdiff_ranks import memdiff_ranks

    with app.progress(f"memdiff at {layout.describe()}") as progress:
        run = memdiff_ranks(
            spec,
            layout,
            against,
            limits,
            on_stage=lambda s: progress(s, milestone=s),
        )
    app.finish(run, outputs, run.exit_code)
