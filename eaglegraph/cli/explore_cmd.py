"""`eaglegraph explore RUN.json | MODEL_DIR`: drill from a finding to its cause, interactively.

A saved run opens as it is. A model folder (or preset) is inspected first; from inside the app
`c` starts a capture and `r` a probe with the same options, each built here (the command layer)
and run in the app's worker thread. `--html` writes the same explorer as one browser page.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from eaglegraph.cli.app import make_app, output_options
from eaglegraph.cli.options import plan_options, pop_plan_kwargs
from eaglegraph.cli.rig_options import pop_rig_kwargs, rig_options
from eaglegraph.errors import BadInput

EXPLORE_SCHEMA = "eaglegraph.explore/1"


@click.command("explore")
@click.argument("source", metavar="RUN.json|MODEL_DIR")
@plan_options
@rig_options
@click.option("--html", "html_path", metavar="FILE", default=None, help="Write the HTML explorer.")
@click.option("--force", is_flag=True, help="Replace an existing --html file.")
@click.option(
    "--export-dir",
    type=click.Path(file_okay=False),
    default=".",
    help="Where `x` writes the view's SVG and the selection's JSON.",
)
@output_options
@click.pass_context
def command(
    ctx: click.Context,
    source: str,
    html_path: str | None,
    force: bool,
    export_dir: str,
    json_output: bool,
    no_color: bool,
    **kwargs: Any,
) -> None:
    """Explore a saved run (capture, memdiff, probe, inspect, triage) or a model folder.

    Keys: arrows move, Tab + Enter follow a link, b back, / search, p/s/k filter by phase,
    severity, kind, t timeline, x export, ? help, q quit. With --html the explorer is written
    as one self-contained page; --json prints the explorer's nodes and links.
    """
    app = make_app(ctx, json_output, no_color)
    if html_path and Path(html_path).exists() and not force:
        raise BadInput(f"{html_path} already exists", "pass --force to replace it")
    plan_kwargs = pop_plan_kwargs(kwargs)
    rig_kwargs = pop_rig_kwargs(kwargs)
    run, actions = _open(source, plan_kwargs, rig_kwargs)
    if html_path:
        from eaglegraph.reports.explore_html import write_explorer_html

        click.echo(f"wrote {write_explorer_html(run, html_path, overwrite=force)}", err=True)
    if app.json_output:
        from eaglegraph.reports.explore_model import build
        from eaglegraph.serial import dumps

        model = build(run).to_json()
        model["run_schema"] = model.pop("schema")
        click.echo(dumps({"schema": EXPLORE_SCHEMA, **model}))
    if html_path or app.json_output:
        return
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise BadInput("explore needs a terminal", "use --html FILE or --json to export instead")
    from eaglegraph.reports.explore_app import ExploreApp

    ExploreApp(run, actions=actions, export_dir=export_dir).run()


def _open(source: str, plan_kwargs: dict[str, Any], rig_kwargs: dict[str, Any]) -> Any:
    """A saved run as it is; a model folder inspected, with capture and probe ready to start."""
    path = Path(source)
    if path.is_file():
        from eaglegraph.results import load_run

        return load_run(path), {}
    from eaglegraph.rig.inspect import inspect_pair, open_pair
    from eaglegraph.rig.options import resolve_plan_options

    pair = open_pair(source, None, None)
    hint = pair.draft_facts.speculative_tokens if pair.draft_facts else None
    options = resolve_plan_options(**plan_kwargs, default_num_speculative_tokens=hint)
    report = inspect_pair(pair, options, None)
    return report, {
        "capture": lambda progress: _capture(source, pair, plan_kwargs, rig_kwargs, progress),
        "probe": lambda progress: _probe(source, plan_kwargs, rig_kwargs, progress),
    }


def _capture(source: str, pair: Any, plan_kwargs: dict, rig_kwargs: dict, progress: Any) -> Any:
    from eaglegraph.probes.capture import CaptureRequest, run_capture
    from eaglegraph.probes.setup import rig_config
    from eaglegraph.rig.plan import build_plan

    config = rig_config(pair, dict(plan_kwargs), **rig_kwargs)
    total = sum(p.descriptor_count for p in build_plan(config.options).phases) or 1
    done = [0]

    def on_event(e: Any) -> None:
        done[0] += 1
        progress(f"{e.phase} {e.descriptor}", done[0] / total)

    request = CaptureRequest(config=config, pool=None, schedule=None, snapshot=None, model=source)
    return run_capture(pair, request, on_event=on_event, on_stage=lambda s: progress(s, None))


def _probe(source: str, plan_kwargs: dict, rig_kwargs: dict, progress: Any) -> Any:
    from eaglegraph.cli.probe_cmd import PROBE_DEFAULT_SEQS
    from eaglegraph.pair.presets import resolve_model_arg
    from eaglegraph.probes.environment import run_environment
    from eaglegraph.probes.setup import resolve_device
    from eaglegraph.probes.stale_read import probe

    plan = dict(plan_kwargs)
    if plan.get("max_num_seqs") is None:
        plan["max_num_seqs"] = PROBE_DEFAULT_SEQS[plan.get("framework") or "vllm"]
    rig = dict(rig_kwargs)
    device = resolve_device(rig.get("device", "auto"))
    rig["device"] = device.type
    mode = plan.pop("mode", None)
    modes = [mode] if mode else ["all"]
    run = probe(
        str(resolve_model_arg(source)),
        plan,
        rig,
        modes=modes,
        on_case=lambda name, result: progress(f"case {name}", None),
        environment=run_environment(device),
    )
    run.config["model"] = source
    return run
