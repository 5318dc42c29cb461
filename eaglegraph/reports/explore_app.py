"""`eaglegraph explore` in the terminal: a Textual app over the explorer model.

Keyboard only, readable at 80 columns: a tree of sections (findings, phases, graphs, pools,
buffers, cases, evidence, hazards) on the left, the selected node's detail and its links on the
right. Links are walked with Tab + Enter and walked back with `b`. The app renders what
`explore_model.build` arranged; runs started from inside (capture, probe) are built by the
caller's functions in a worker thread, so the app itself never computes a result.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, ProgressBar, Static, Tree
from textual.widgets.option_list import Option

from eaglegraph.errors import BadInput
from eaglegraph.reports.explore_model import Explorer, Node
from eaglegraph.reports.explore_ranks import explorer_of as build
from eaglegraph.reports.format import SEVERITY_STYLE
from eaglegraph.serial import atomic_write


class _Cancelled(KeyboardInterrupt):
    """Raised in a run started from inside at its next progress step once esc or q asked it to
    stop (a KeyboardInterrupt, so the run's own error handling does not record it as a crash
    and its `finally`s end worker processes)."""


# A run started from inside: called in a worker thread with a progress callback
# (description, fraction or None); returns the finished run.
Action = Callable[[Callable[[str, float | None], None]], Any]

HELP = """\
[b]eaglegraph explore[/b] — keys

  ↑ ↓ / Enter   move in the tree; Enter opens a section
  Tab           to the links of the selected item; Enter follows a link
  b             back to where you came from
  /             search (label, rule, buffer, detail); Esc clears
  p  s  k       cycle the phase / severity / kind filter
  t             capture timeline (+ − zoom, ← → pan, Esc closes)
  x             export the view (SVG) and the selection (JSON)
  c  r          start a capture / a probe (explore MODEL_DIR only)
  ?             this help        q  quit
"""


# The key line under the panes (one Static: Textual's Footer builds a widget per key).
KEYS = " ?help /search p s k filter t timeline b back x export q quit"


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "dismiss", "close")]

    def compose(self) -> ComposeResult:
        yield Static(HELP, id="help")


class TimelineScreen(ModalScreen[None]):
    """Capture events as bars on one time axis; zoom and pan change the window."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,t", "dismiss", "close"),
        Binding("plus,equals_sign", "zoom(2)", "zoom in"),
        Binding("minus", "zoom(0.5)", "zoom out"),
        Binding("right", "pan(1)", "later"),
        Binding("left", "pan(-1)", "earlier"),
    ]

    def __init__(self, events: list[Node]) -> None:
        super().__init__()
        self.events = events
        self.scale = 1.0
        self.window_start = 0.0

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="timeline"):
            yield Static(id="bars")

    def on_mount(self) -> None:
        self.redraw()

    def action_zoom(self, factor: float) -> None:
        self.scale = max(1.0, min(self.scale * factor, 1024.0))
        self.redraw()

    def action_pan(self, step: int) -> None:
        last = 1.0 - 1.0 / self.scale
        self.window_start = max(0.0, min(last, self.window_start + step * 0.25 / self.scale))
        self.redraw()

    def redraw(self) -> None:
        bars = self.query_one("#bars", Static)
        if not self.events:
            bars.update("no capture timeline in this run")
            return
        end = max((n.start_s or 0) + (n.duration_s or 0) for n in self.events) or 1.0
        span = end / self.scale
        lo = self.window_start * end
        width = max(20, self.size.width - 34)
        text = Text(
            f"zoom ×{self.scale:g}  window {lo:.3f}–{lo + span:.3f} s  (+ − zoom, ← → pan)\n"
        )
        for n in self.events:
            start = ((n.start_s or 0) - lo) / span * width
            cols = max(1, round((n.duration_s or 0) / span * width))
            first = max(0, round(start))
            shown = max(0, min(width, round(start) + cols) - first)
            text.append(f"{n.label[:30]:<31} ", style="bold" if n.severity else "")
            style = "red" if n.severity else _PHASE_STYLE.get(n.phase or "", "white")
            if shown and first < width:
                text.append(" " * first + "█" * shown, style=style)
            text.append("\n")
        bars.update(text)


_PHASE_STYLE = {"target": "green", "draft_prefill": "cyan", "draft_decode": "magenta"}


class ExploreApp(App[None]):
    """The explorer. `run` is any saved run; `actions` start new runs (MODEL_DIR mode)."""

    TITLE = "eaglegraph explore"
    CSS = """
    #nav { width: 26; border-right: solid $primary; }
    #right { width: 1fr; }
    #detail { height: 1fr; }
    #links { height: auto; max-height: 9; border-top: solid $primary; }
    #search { display: none; }
    #search.shown { display: block; }
    #status { height: 1; background: $boost; }
    #title { height: 1; background: $primary; color: $text; text-style: bold; }
    #keys { height: 1; background: $panel; color: $text-muted; }
    #work { display: none; height: 1; }
    #work.shown { display: block; }
    #help { width: 72; height: auto; border: solid $primary; padding: 1 2; background: $panel; }
    HelpScreen, TimelineScreen { align: center middle; }
    #timeline { width: 100%; height: 100%; background: $panel; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit_now", "quit"),
        Binding("question_mark", "help", "help"),
        Binding("slash", "search", "search"),
        Binding("escape", "cancel_or_clear", "cancel/clear", show=False),
        Binding("p", "cycle('phase')", "phase"),
        Binding("s", "cycle('severity')", "severity"),
        Binding("k", "cycle('kind')", "kind"),
        Binding("t", "timeline", "timeline"),
        Binding("b", "go_back", "back"),
        Binding("x", "export", "export"),
        Binding("c", "start('capture')", "capture", show=False),
        Binding("r", "start('probe')", "probe", show=False),
    ]

    def __init__(
        self,
        run: Any,
        *,
        actions: dict[str, Action] | None = None,
        export_dir: Path | str = ".",
    ) -> None:
        super().__init__()
        self.explorer: Explorer = build(run)
        self.actions = actions or {}
        self.export_dir = Path(export_dir)
        self.filters: dict[str, str | None] = {"phase": None, "severity": None, "kind": None}
        self.query_text = ""
        self.selected: str | None = None
        self.history: list[str] = []
        self.exported: list[Path] = []
        self.running: tuple[str, threading.Event] | None = None  # the run started here

    # --- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="title")
        with Horizontal():
            # no root row and narrow guides: at 80 columns the labels need the width
            nav: Tree[str] = Tree("run", id="nav")
            nav.show_root = False
            nav.guide_depth = 2
            yield nav
            with Vertical(id="right"):
                with VerticalScroll(id="detail", can_focus=False):
                    yield Static(id="body")
                yield OptionList(id="links")
        yield Input(placeholder="search…", id="search")
        yield Static(id="status")
        yield Static(KEYS + (" c capture r probe" if self.actions else ""), id="keys")

    def on_mount(self) -> None:
        self.show_title()
        self.refresh_tree()
        self.query_one("#nav", Tree).focus()

    def on_resize(self, event: Any) -> None:
        self.size_nav()

    def size_nav(self) -> None:
        """Fit the tree column to its labels and the terminal's width."""
        labels = [n.label for _, nodes in self.explorer.sections() for n in nodes]
        self.query_one("#nav", Tree).styles.width = nav_width(labels, self.size.width)

    def show_title(self) -> None:
        # one plain line instead of Textual's Header: its clock and icon widgets cost startup
        self.sub_title = self.explorer.title
        self.query_one("#title", Static).update(
            f" eaglegraph explore — {self.explorer.title} ({self.explorer.schema})"
        )

    # --- tree and filters -----------------------------------------------------------------

    def is_shown(self, node: Node) -> bool:
        """Whether the filters and the search let `node` through (not Textual's `visible`)."""
        for attr, want in self.filters.items():
            if want is not None and getattr(node, attr) != want:
                return False
        return not self.query_text or self.query_text in node.text()

    def refresh_tree(self) -> None:
        self.size_nav()
        tree = self.query_one("#nav", Tree)
        tree.clear()
        tree.root.set_label(self.explorer.schema)
        first: str | None = None
        for section, nodes in self.explorer.sections():
            shown = [n for n in nodes if self.is_shown(n)]
            if not shown:
                continue
            branch = tree.root.add(f"{section} ({len(shown)})", expand=section != "Graphs")
            groups: dict[str, Any] = {}
            for n in shown:
                parent = branch
                if n.group is not None:
                    if n.group not in groups:
                        groups[n.group] = branch.add(n.group, expand=False)
                    parent = groups[n.group]
                parent.add_leaf(_label(n), data=n.id)
                first = first or n.id
        tree.root.expand()
        self.update_status()
        if self.selected is None or not self.is_shown(self.explorer.nodes[self.selected]):
            self.show(first)

    def update_status(self) -> None:
        parts = [f"{k}={v}" for k, v in self.filters.items() if v]
        if self.query_text:
            parts.append(f"/{self.query_text}")
        shown = sum(self.is_shown(n) for n in self.explorer.nodes.values())
        self.query_one("#status", Static).update(
            f" {shown}/{len(self.explorer.nodes)} shown  "
            + ("filters: " + " ".join(parts) if parts else "no filter")
            + "  ? help"
        )

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        if event.node.data is not None:
            self.show(event.node.data)

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        if event.node.data is not None:
            self.show(event.node.data)

    # --- detail ---------------------------------------------------------------------------

    def show(self, node_id: str | None, remember: bool = False) -> None:
        body = self.query_one("#body", Static)
        links = self.query_one("#links", OptionList)
        links.clear_options()
        if node_id is None:
            self.selected = None
            body.update("nothing matches the filters")
            return
        if remember and self.selected and self.selected != node_id:
            self.history.append(self.selected)
        self.selected = node_id
        node = self.explorer.nodes[node_id]
        body.update(_detail(node))
        for target in node.links:
            other = self.explorer.nodes[target]
            links.add_option(Option(f"→ {other.section[:-1].lower()}: {other.label}", id=target))
        if node.links:
            links.highlighted = 0

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.follow(event.option.id)

    def follow(self, node_id: str) -> None:
        """Show a linked node and move the tree cursor to it (clearing filters that hide it)."""
        if not self.is_shown(self.explorer.nodes[node_id]):
            self.filters = dict.fromkeys(self.filters)
            self.query_text = ""
            self.refresh_tree()
        self.show(node_id, remember=True)
        self._select_in_tree(node_id)

    def _select_in_tree(self, node_id: str) -> None:
        tree = self.query_one("#nav", Tree)
        stack: list[tuple[Any, list[Any]]] = [(tree.root, [])]
        while stack:
            parent, path = stack.pop()
            for child in parent.children:
                if child.data == node_id:
                    for branch in path:
                        branch.expand()
                    self.call_after_refresh(tree.move_cursor, child)
                    return
                if child.children:
                    stack.append((child, [*path, child]))

    def action_go_back(self) -> None:
        """Back along the followed links (Textual's own `back` action pops screens)."""
        if self.history:
            target = self.history.pop()
            self.show(target)
            self._select_in_tree(target)

    # --- actions --------------------------------------------------------------------------

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_timeline(self) -> None:
        self.push_screen(TimelineScreen(self.explorer.timeline()))

    def action_search(self) -> None:
        box = self.query_one("#search", Input)
        box.add_class("shown")
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_text = event.value.strip().lower()
        self.refresh_tree()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one("#nav", Tree).focus()

    def action_clear(self) -> None:
        box = self.query_one("#search", Input)
        box.value = ""
        box.remove_class("shown")
        self.query_text = ""
        self.refresh_tree()
        self.query_one("#nav", Tree).focus()

    def action_cycle(self, attr: str) -> None:
        choices = [None, *self.explorer.values(attr)]
        now = choices.index(self.filters[attr]) if self.filters[attr] in choices else 0
        self.filters[attr] = choices[(now + 1) % len(choices)]
        self.refresh_tree()

    def action_export(self) -> None:
        """The screen as SVG, and the view as JSON: the selected node with its linked nodes,
        the filters and search in force and the ids they leave shown. Never replaces a file:
        a second export of the same view gets a numbered name."""
        base = re.sub(r"[^A-Za-z0-9_.-]+", "-", self.selected or "view").strip("-")
        stem, n = f"eaglegraph-explore-{base}", 1
        while any((self.export_dir / f"{stem}{s}").exists() for s in (".svg", ".json")):
            n += 1
            stem = f"eaglegraph-explore-{base}-{n}"
        nodes = self.explorer.nodes
        picked = [self.selected, *nodes[self.selected].links] if self.selected else []
        data = {
            "schema": self.explorer.schema,
            "selected": self.selected,
            "filters": self.filters,
            "search": self.query_text,
            "shown": [i for i, node in nodes.items() if self.is_shown(node)],
            "nodes": [nodes[i].to_json() for i in picked],
        }
        try:
            self.export_dir.mkdir(parents=True, exist_ok=True)
            svg = self.save_screenshot(filename=f"{stem}.svg", path=str(self.export_dir))
            out = atomic_write(self.export_dir / f"{stem}.json", json.dumps(data, indent=2) + "\n")
        except (OSError, BadInput) as exc:
            self.notify(f"export failed: {exc}", severity="error")
            return
        self.exported = [Path(svg), out]
        self.notify(f"wrote {svg} and {out}")

    def _work_bar(self) -> ProgressBar:
        """The progress bar of a run started from inside, mounted on first use (startup)."""
        found = self.query("#work")
        if found:
            return found.first(ProgressBar)
        bar = ProgressBar(id="work", show_eta=False)
        self.mount(bar, before=self.query_one("#status"))
        return bar

    def action_start(self, name: str) -> None:
        if name not in self.actions:
            self.notify(f"{name}: start explore on a MODEL_DIR to run one", severity="warning")
            return
        if self.running is not None:
            self.notify(f"{self.running[0]} is running (esc cancels it)", severity="warning")
            return
        bar = self._work_bar()
        bar.add_class("shown")
        bar.update(total=None, progress=0)
        self.notify(f"{name} started (esc cancels it)")
        cancel = threading.Event()

        def progress(text: str, fraction: float | None) -> None:
            if cancel.is_set():  # the work's next step ends it; its `finally`s clean up
                raise _Cancelled

            def apply() -> None:
                self.query_one("#status", Static).update(f" {name}: {text}  (esc cancels)")
                if fraction is not None:
                    bar.update(total=100, progress=100 * fraction)

            self.call_from_thread(apply)

        def work() -> None:
            try:
                ended: tuple[Any, str] = (self.actions[name](progress), "done")
            except _Cancelled:
                ended = (None, "cancelled")
            except Exception as exc:  # shown in the app; the run is lost, the app is not
                ended = (None, f"failed: {exc}")
            if not cancel.is_set() or ended[1] == "cancelled":
                with contextlib.suppress(RuntimeError):  # the app may have quit meanwhile
                    self.call_from_thread(self._work_ended, name, *ended)

        # a daemon thread, not a Textual worker: quitting never waits for a graph or a case
        # to finish (probe workers end themselves once this process is gone)
        self.running = (name, cancel)
        threading.Thread(target=work, name=f"explore-{name}", daemon=True).start()

    def _work_ended(self, name: str, result: Any, outcome: str) -> None:
        self.running = None
        self._work_bar().remove_class("shown")
        self.query_one("#status", Static).update(f" {name} {outcome}")
        if result is not None:
            self.explorer = build(result)
            self.show_title()
            self.selected = None
            self.history.clear()
            self.refresh_tree()
        self.notify(f"{name} {outcome}", severity="error" if outcome != "done" else "information")

    def action_cancel_or_clear(self) -> None:
        """esc: cancel the capture or probe started here, else clear the search."""
        if self.running is not None:
            self.running[1].set()
            self.notify(f"cancelling {self.running[0]} (it stops at its next step)")
            return
        self.action_clear()

    def action_quit_now(self) -> None:
        """q: leave at once; a run started here is told to stop and is not waited for."""
        if self.running is not None:
            self.running[1].set()
        self.exit()


def _label(n: Node) -> Text:
    text = Text()
    if n.severity:
        text.append("● ", style=SEVERITY_STYLE.get(n.severity, ""))
    text.append(n.label)
    return text


def _detail(n: Node) -> Group:
    """A node's fields in its order (a finding: the fix and its PR first); a URL gets a line of
    its own, never folded mid-link, so it can be copied or clicked whole."""
    rows = [*n.detail, ("section", f"{n.section} · {n.kind}")]
    key_width = min(24, max(len(key) for key, _ in rows))
    parts: list[Any] = [Text(n.label, style="bold")]
    table: Table | None = None
    for key, value in rows:
        if value.startswith(("https://", "http://")):
            parts.append(_UrlLine(key, value, key_width))
            table = None
            continue
        if table is None:
            table = _detail_table(key_width)
            parts.append(table)
        style = SEVERITY_STYLE.get(value, "") if key == "severity" else ""
        table.add_row(key, Text(value, style=style))
    return Group(*parts)


def _detail_table(key_width: int) -> Table:
    table = Table(show_header=False, box=None, expand=True, padding=(0, 1), pad_edge=False)
    table.add_column(style="bold cyan", no_wrap=True, width=key_width)
    table.add_column(overflow="fold", ratio=1)
    return table


@dataclass(frozen=True)
class _UrlLine:
    """`key  URL` on one line when it fits the pane, else the key and the URL on the next
    line; the URL itself is never wrapped, and is a terminal hyperlink."""

    key: str
    url: str
    key_width: int

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        link = Text(self.url, style=f"underline link {self.url}", no_wrap=True, overflow="ignore")
        key = Text(self.key.ljust(self.key_width) + " ", style="bold cyan")
        if len(key) + len(self.url) <= options.max_width:
            yield key + link
        else:
            yield key
            yield link


def nav_width(labels: list[str], columns: int) -> int:
    """The tree column: as wide as its longest label needs, at most a third of the terminal
    (the detail pane keeps room for a PR's URL on one line), at least 20."""
    want = max((len(label) for label in labels), default=0) + 6  # guides, bullet, border
    return max(20, min(want, columns // 3))
