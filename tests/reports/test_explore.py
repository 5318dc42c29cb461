"""`eaglegraph explore` driven headless through Textual's pilot, at 80 columns, keys only."""

from __future__ import annotations

import asyncio
import html
import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.reports.explore_app import ExploreApp
from eaglegraph.results import load_run

SIZE = (80, 30)


@pytest.fixture(scope="module")
def saved(explore_runs: dict[str, Path]) -> dict[str, Path]:
    return explore_runs


def screen_text(app: ExploreApp) -> str:
    """What the terminal shows now, as plain text (the SVG export's text, tags removed)."""
    svg = app.export_screenshot()
    body = svg[svg.index("<g class=") :]
    return html.unescape(re.sub(r"<[^>]+>", "", body)).replace("\xa0", " ")


async def work_done(app: ExploreApp, pilot: Any, timeout: float = 300) -> None:
    """Wait until the capture or probe started inside the app has ended."""
    deadline = time.monotonic() + timeout
    await pilot.pause()
    while app.running is not None and time.monotonic() < deadline:
        await pilot.pause(0.05)
    assert app.running is None, "the run started inside never ended"
    await pilot.pause()


def drive(run: Any, steps: Any, tmp_path: Path) -> Any:
    async def main() -> Any:
        app = ExploreApp(run, export_dir=tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            return await steps(app, pilot)

    return asyncio.run(main())


@pytest.mark.parametrize(
    ("kind", "expect"),
    [
        ("probe", ["Findings", "stale-read:draft.kv_indptr", "Buffers"]),
        ("capture", ["Graphs", "Pools", "global"]),
        ("memdiff", ["Pools", "eagle", "dedicated"]),
        ("inspect", ["Phases", "draft_decode", "capture plan"]),
        ("triage", ["Evidence", "triage.stale-buffer-read"]),
    ],
)
def test_opens_every_kind_of_saved_run(
    saved: dict[str, Path], tmp_path: Path, kind: str, expect: list[str]
) -> None:
    async def steps(app: ExploreApp, pilot: Any) -> str:
        # open every section so the leaves are on screen
        return "\n".join(_leaf_labels(app)) + screen_text(app)

    shown = drive(load_run(saved[kind]), steps, tmp_path)
    for text in expect:
        assert text in shown, f"{kind}: {text!r} not shown"


def _leaf_labels(app: ExploreApp) -> list[str]:
    from textual.widgets import Tree

    tree = app.query_one("#nav", Tree)
    return [str(b.label) for b in tree.root.children] + [
        str(leaf.label) for b in tree.root.children for leaf in b.children
    ]


def test_probe_finding_drills_down_to_its_pr_and_back(
    saved: dict[str, Path], tmp_path: Path
) -> None:
    async def steps(app: ExploreApp, pilot: Any) -> list[str]:
        seen = [app.selected or ""]
        first = screen_text(app)
        await pilot.press("tab")  # to the links of the selected finding
        await pilot.press("enter")  # its first link: the hazard
        await pilot.pause()
        seen.append(app.selected or "")
        hazard = screen_text(app)
        await pilot.press("shift+tab", "b")  # back to the tree, then back to the finding
        await pilot.pause()
        seen.append(app.selected or "")
        return [first, hazard, *seen]

    first, hazard, *seen = drive(load_run(saved["probe"]), steps, tmp_path)
    assert seen[0].startswith("finding:") and "draft.kv_indptr" in first
    assert "csr_paged_decode" in first  # the kernel the guard caught
    assert seen[1] == "hazard:piecewise-draft-decode"
    assert "PR #39773" in hazard and "(vllm-project/vllm#39773)" in hazard
    assert seen[2] == seen[0]


def _follow(app: ExploreApp, target: str) -> list[str]:
    """Keys that follow the link to `target` from the selected node: Tab, ↓ × its index, Enter."""
    index = app.explorer.nodes[app.selected or ""].links.index(target)
    return ["tab", *["down"] * index, "enter"]


def test_probe_finding_drills_to_its_graph_and_pool(saved: dict[str, Path], tmp_path: Path) -> None:
    """finding → the graph its phase replayed → that graph's pool (and what else lives there)
    → back to the finding, keys only."""

    async def steps(app: ExploreApp, pilot: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"start": app.selected}
        graph = next(x for x in app.explorer.nodes["finding:0"].links if ":graph:" in x)
        await pilot.press(*_follow(app, graph))
        await pilot.pause()
        out["graph"] = (app.selected, screen_text(app))
        pool = next(x for x in app.explorer.nodes[graph].links if ":pool:" in x)
        await pilot.press("shift+tab", *_follow(app, pool))
        await pilot.pause()
        out["pool"] = (app.selected, screen_text(app), app.explorer.nodes[pool])
        await pilot.press("shift+tab", "b", "b")
        await pilot.pause()
        out["back"] = app.selected
        return out

    out = drive(load_run(saved["probe"]), steps, tmp_path)
    assert out["start"] == "finding:0"
    graph, text = out["graph"]
    assert graph.startswith("case:piecewise-b1:graph:")
    assert "draft_decode PIECEWISE(tokens=4" in text and "by the probed draft_decode step" in text
    pool, text, node = out["pool"]
    assert pool == "case:piecewise-b1:pool:(0,1)" and "global" in text
    lives = [v for k, v in node.detail if k == "lives here"]
    # every graph of the case lives in the one global pool: all three phases share it
    assert len(lives) == len([n for n in node.links if ":graph:" in n]) > 3
    assert {v.split()[1] for v in lives} == {"target", "draft_prefill", "draft_decode"}
    assert out["back"] == "finding:0"


def test_triage_line_links_to_the_rule_that_used_it(saved: dict[str, Path]) -> None:
    from eaglegraph.reports.explore_model import build

    nodes = build(load_run(saved["triage"])).nodes
    primary = next(n for n in nodes.values() if n.section == "Evidence" and n.severity)
    signal = nodes[next(x for x in primary.links if x.startswith("signal:"))]
    assert signal.section == "Rules" and primary.id in signal.links
    assert any(v.startswith(primary.label.split()[0]) for k, v in signal.detail if k == "matched")
    finding = nodes["finding:0"]
    assert finding.id in primary.links and finding.id in signal.links
    # the fixes triage offers for this report (only those whose affected range it may be in)
    # each link to the hazards their upstream change documents
    from eaglegraph.reports.explore_model import _hazards_by_ref

    fixes = [nodes[x] for x in finding.links if x.startswith("fix:")]
    assert fixes
    for fix in fixes:
        documented = {f"hazard:{h.id}" for h in _hazards_by_ref(fix.label)}
        assert documented <= set(fix.links)
        assert all("PR" in dict(nodes[h].detail) for h in documented)


def test_hazard_detail_has_fix_and_affected_versions(saved: dict[str, Path]) -> None:
    from eaglegraph.reports.explore_model import build

    detail = dict(build(load_run(saved["probe"])).nodes["hazard:piecewise-draft-decode"].detail)
    assert detail["fixed in"] == "vLLM ≥ 0.20" and detail["affected"] == "vllm < 0.20"
    assert detail["fix"].startswith("use vLLM ≥ 0.20 (PR #39773)")


def test_search_and_filters(saved: dict[str, Path], tmp_path: Path) -> None:
    async def steps(app: ExploreApp, pilot: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"all": _leaf_labels(app)}
        await pilot.press("slash", *"last_page_len")
        await pilot.pause()
        out["search"] = _leaf_labels(app)
        out["status"] = screen_text(app)
        await pilot.press("escape")
        await pilot.press("s")  # severity filter: the first severity present (error)
        await pilot.pause()
        out["severity"] = (app.filters["severity"], _leaf_labels(app))
        await pilot.press("s", "s")  # back to no filter
        await pilot.press("p")  # phase filter
        await pilot.pause()
        out["phase"] = (app.filters["phase"], _leaf_labels(app))
        return out

    out = drive(load_run(saved["probe"]), steps, tmp_path)
    assert any(x.startswith("Buffers (") for x in out["all"])
    assert any("last_page_len" in x for x in out["search"])
    assert not any(x.endswith("kv_indptr") for x in out["search"])
    assert any(x.endswith("kv_indptr") for x in out["all"])
    assert "/last_page_len" in out["status"]
    severity, labels = out["severity"]
    assert severity == "error" and not any(x.startswith("Buffers") for x in labels)
    phase, labels = out["phase"]
    assert phase is not None and labels and all(not x.startswith("Run") for x in labels)


def test_help_timeline_and_export(saved: dict[str, Path], tmp_path: Path) -> None:
    async def steps(app: ExploreApp, pilot: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        await pilot.press("question_mark")
        await pilot.pause()
        out["help"] = screen_text(app)
        await pilot.press("escape", "t")
        await pilot.pause()
        out["timeline"] = screen_text(app)
        await pilot.press("plus", "plus", "right")
        await pilot.pause()
        out["zoomed"] = screen_text(app)
        await pilot.press("escape", "x")
        await pilot.pause()
        out["files"] = app.exported
        await pilot.press("s", "x")  # severity filter on, export again: a new pair of files
        await pilot.pause()
        out["again"] = app.exported
        return out

    out = drive(load_run(saved["capture"]), steps, tmp_path)
    assert "search" in out["help"] and "timeline" in out["help"]
    assert "zoom ×1" in out["timeline"] and "#0 target PIECEWISE" in out["timeline"]
    assert "zoom ×4" in out["zoomed"]
    svg, data = out["files"]
    assert svg.suffix == ".svg" and svg.read_text().startswith("<svg")
    exported = json.loads(data.read_text())
    assert exported["schema"] == "eaglegraph.capture/1" and exported["nodes"]
    svg2, data2 = out["again"]
    assert svg2 != svg and data2 != data and svg.exists()  # the first export is kept
    filtered = json.loads(data2.read_text())
    assert filtered["filters"]["severity"] and 0 < len(filtered["shown"]) < len(exported["shown"])


def test_command_exports_without_a_terminal(saved: dict[str, Path], tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "x.html"
    result = runner.invoke(cli, ["explore", str(saved["probe"]), "--html", str(out)])
    assert result.exit_code == 0, result.output
    assert 'id="model"' in out.read_text()
    result = runner.invoke(cli, ["--json", "explore", str(saved["triage"])])
    doc = json.loads(result.stdout)
    assert doc["schema"] == "eaglegraph.explore/1"
    evidence = [n for n in doc["nodes"].values() if n["section"] == "Evidence"]
    assert any(n["links"] for n in evidence)  # a log line links to the rule that used it
    result = runner.invoke(cli, ["explore", str(saved["probe"])])
    assert result.exit_code == 2 and "needs a terminal" in result.output
    result = runner.invoke(cli, ["explore", str(tmp_path / "missing.json")])
    assert result.exit_code == 2


def test_a_run_started_from_inside_replaces_the_view(
    saved: dict[str, Path], tmp_path: Path
) -> None:
    from tests.reports.runs import cuda_run

    calls: list[str] = []

    def capture(progress: Any) -> Any:
        progress("target FULL(tokens=4, reqs=1)", 0.5)
        calls.append("capture")
        return cuda_run()

    async def main() -> tuple[str, str]:
        app = ExploreApp(load_run(saved["inspect"]), actions={"capture": capture})
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            before = app.explorer.schema
            await pilot.press("c")
            await work_done(app, pilot)
            return before, app.explorer.schema

    before, after = asyncio.run(main())
    assert calls == ["capture"]
    assert (before, after) == ("eaglegraph.inspect/1", "eaglegraph.capture/1")


def test_explore_model_dir_starts_a_real_capture(tmp_path: Path) -> None:
    """`explore MODEL_DIR`: inspect, then `c` runs the command layer's capture (three FULL
    graphs, the smallest plan) in the app's worker; its progress reaches the status line and
    the capture replaces the inspect view."""
    from eaglegraph.probes.explore import open_source as _open

    plan = {"mode": "FULL", "capture_sizes": (4,), "max_num_seqs": 4}
    report, actions = _open("tiny-llama-eagle3", plan, {"device": "cpu"})
    seen: list[tuple[str, float | None]] = []

    def capture(progress: Any) -> Any:
        return actions["capture"](lambda text, f: (seen.append((text, f)), progress(text, f)))

    async def main() -> tuple[str, str, str]:
        app = ExploreApp(report, actions={"capture": capture}, export_dir=tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            before = app.explorer.schema
            await pilot.press("c")
            await work_done(app, pilot)
            return before, app.explorer.schema, screen_text(app)

    before, after, shown = asyncio.run(main())
    assert (before, after) == ("eaglegraph.inspect/1", "eaglegraph.capture/1")
    fractions = [f for _, f in seen if f is not None]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any(text.startswith("graph 3/3: draft_decode FULL") for text, _ in seen)
    assert "Graphs" in shown and "capture" in shown
    assert sorted(actions) == ["capture", "probe"]


def test_explore_model_dir_probe_runs_the_probe_command_spec(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`r` probes with the spec `eaglegraph probe` would build (4 requests, no compile, the
    --mode given) and turns its plan and case callbacks into progress."""
    import eaglegraph.probes.probing as probing
    from eaglegraph.probes.explore import open_source as _open

    calls: dict[str, Any] = {}

    def fake_probe(
        spec: Any, *, modes: list[str], on_plan: Any, on_case: Any, **options: Any
    ) -> str:
        calls.update(spec=spec, modes=list(modes), options=options)
        on_plan(["a", "b"])
        on_case("a", None)
        on_case("a", type("R", (), {"status": "ok"})())
        return "run"

    monkeypatch.setattr(probing, "probe", fake_probe)
    plan = {"mode": "PIECEWISE", "behavior": "vllm-pre-39773"}
    _, actions = _open("tiny-llama-eagle3", plan, {"device": "cpu"})
    seen: list[tuple[str, float | None]] = []
    assert actions["probe"](lambda text, f: seen.append((text, f))) == "run"
    spec = calls["spec"]
    assert calls["modes"] == ["PIECEWISE"] and spec.options.max_num_seqs == 4
    assert calls["options"]["isolate"] is True and calls["options"]["batches"] is None
    assert spec.compile_model is False and spec.options.behavior.name == "vllm-pre-39773"
    assert seen == [("2 cases planned", 0.0), ("case 1/2: a", 0.0), ("case a: ok", 0.5)]


def _endless(started: threading.Event, stopped: threading.Event) -> Any:
    """A run that reports progress forever, until the app stops it."""

    def capture(progress: Any) -> Any:
        started.set()
        try:
            n = 0
            while True:
                n += 1
                progress(f"graph {n}", None)
                time.sleep(0.05)
        finally:
            stopped.set()

    return capture


def test_esc_cancels_a_run_started_inside(saved: dict[str, Path]) -> None:
    started, stopped = threading.Event(), threading.Event()

    async def main() -> tuple[str, str]:
        app = ExploreApp(
            load_run(saved["inspect"]), actions={"capture": _endless(started, stopped)}
        )
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("c")
            assert await asyncio.to_thread(started.wait, 10)
            await pilot.press("escape")
            await work_done(app, pilot, timeout=10)
            return app.explorer.schema, screen_text(app)

    schema, shown = asyncio.run(main())
    assert stopped.is_set() and schema == "eaglegraph.inspect/1"  # the view is kept
    assert "capture cancelled" in shown


def test_q_quits_within_a_second_while_a_run_is_going(saved: dict[str, Path]) -> None:
    started, stopped = threading.Event(), threading.Event()

    async def main() -> float:
        app = ExploreApp(
            load_run(saved["inspect"]), actions={"capture": _endless(started, stopped)}
        )
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("c")
            assert await asyncio.to_thread(started.wait, 10)
            t0 = time.monotonic()
            await pilot.press("q")
            await pilot.pause()
            return time.monotonic() - t0

    took = asyncio.run(main())
    assert took < 1.0
    assert stopped.wait(2)  # told to stop, and it did at its next step


def test_explore_capture_uses_the_commands_quick_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """`c` on a MODEL_DIR captures what `eaglegraph capture` captures on CPU: the quick plan
    (a few requests), not the engine's whole default plan."""
    import eaglegraph.probes.capture as capture
    from eaglegraph.probes.explore import open_source as _open
    from eaglegraph.rig.options import CPU_CAPTURE_MAX_NUM_SEQS

    seen: dict[str, Any] = {}

    def fake_capture(pair: Any, request: Any, **kwargs: Any) -> str:
        seen["max_num_seqs"] = request.config.options.max_num_seqs
        return "run"

    monkeypatch.setattr(capture, "run_capture", fake_capture)
    _, actions = _open("tiny-llama-eagle3", {}, {"device": "cpu"})
    assert actions["capture"](lambda text, f: None) == "run"
    assert seen["max_num_seqs"] == CPU_CAPTURE_MAX_NUM_SEQS["vllm"]


def test_the_first_screen_of_a_finding_has_the_fix_and_its_pr_whole(
    saved: dict[str, Path], tmp_path: Path
) -> None:
    """At 80×24 the selected finding shows its fix and its PR's URL, the URL on one line."""

    async def steps(app: ExploreApp, pilot: Any) -> tuple[str | None, str]:
        return app.selected, screen_text(app)

    selected, shown = drive(load_run(saved["probe"]), steps, tmp_path)
    assert selected is not None and selected.startswith("finding:")
    lines = shown.splitlines()
    assert any("use vLLM ≥ 0.20 (PR #39773)" in line for line in lines)
    assert any("https://github.com/vllm-project/vllm/pull/39773" in line for line in lines)


def test_the_tree_column_follows_the_terminal(saved: dict[str, Path]) -> None:
    from eaglegraph.reports.explore_app import nav_width

    assert nav_width(["a" * 40], 80) == 26 and nav_width(["a" * 40], 160) == 46
    assert nav_width(["short"], 160) == 20

    async def main(width: int) -> int:
        app = ExploreApp(load_run(saved["probe"]))
        async with app.run_test(size=(width, 24)) as pilot:
            await pilot.pause()
            return app.query_one("#nav").size.width

    narrow, wide = asyncio.run(main(80)), asyncio.run(main(160))
    assert narrow <= 80 // 3 < wide
