"""`eaglegraph memdiff`: pool memory under two policies, each captured in a fresh process."""

from __future__ import annotations

from typing import Any

import click

from eaglegraph.cli.app import make_app, output_options
from eaglegraph.cli.options import Seconds, plan_options, warn_suspicious
from eaglegraph.cli.outputs import Writes, check_outputs
from eaglegraph.cli.rig_options import build_spec, rig_options


@click.command("memdiff")
@click.argument("model_dir", metavar="MODEL_DIR")
@click.option(
    "--pool",
    type=click.Choice(["shared", "dedicated", "per-graph"]),
    default="shared",
    show_default=True,
    help="Pool policy of the first capture.",
)
@click.option(
    "--against",
    type=click.Choice(["shared", "dedicated", "per-graph"]),
    default="dedicated",
    show_default=True,
    help="Pool policy to compare with (must differ from --pool).",
)
@plan_options
@rig_options
@click.option(
    "--save",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the run (eaglegraph.memdiff/1).",
)
@click.option(
    "--html", type=click.Path(dir_okay=False), default=None, help="Write the report as HTML."
)
@click.option(
    "--trace",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write a Chrome trace of both captures (Perfetto).",
)
@click.option("--force", is_flag=True, help="Replace existing output files.")
@click.option(
    "--timeout",
    type=Seconds(),
    default=1800.0,
    show_default=True,
    help="Seconds per capture.",
)
@click.option(
    "--predict/--no-predict",
    default=True,
    show_default=True,
    help="Each capture predicts its pools on the CPU first and stops if they will not fit.",
)
@output_options
@click.pass_context
def command(
    ctx: click.Context,
    model_dir: str,
    pool: str,
    against: str,
    save: str | None,
    html: str | None,
    trace: str | None,
    force: bool,
    timeout: float,
    predict: bool,
    json_output: bool,
    no_color: bool,
    **kwargs: Any,
) -> None:
    """Capture under --pool and --against (each in a fresh process) and diff pool memory per
    pool, per phase and per graph; check both produce identical draft tokens. Needs CUDA."""
    app = make_app(ctx, json_output, no_color)
    from eaglegraph.probes.memdiff import memdiff
    from eaglegraph.reports.html import write_html
    from eaglegraph.reports.memdiff_view import render_memdiff
    from eaglegraph.reports.trace import write_trace
    from eaglegraph.results.memdiff import MEMDIFF_SCHEMA
    from eaglegraph.serial import atomic_write, document, dumps

    check_outputs(
        {"--save": save, "--html": html, "--trace": trace}, force=force, inputs=(model_dir,)
    )
    spec = build_spec(model_dir, kwargs, pool=pool)
    warn_suspicious(spec.open_pair(), spec.options, spec.max_model_len)
    with app.progress("memdiff") as progress:
        run = memdiff(
            spec, against, timeout, on_stage=lambda s: progress(s, milestone=s), predict=predict
        )
    writes = Writes()
    if save:
        text = dumps(document(MEMDIFF_SCHEMA, run)) + "\n"
        writes.write("--save", save, lambda: atomic_write(save, text, overwrite=force))
    if html:
        writes.write("--html", html, lambda: write_html(run, html, overwrite=force))
    if trace:
        writes.write("--trace", trace, lambda: write_trace(run, trace, overwrite=force))
    app.emit(MEMDIFF_SCHEMA, run, render_memdiff)
    writes.finish(ctx, 0)
