"""The explorer in a browser: one self-contained HTML file (inline CSS and JS, no network).

The page embeds the same explorer model the terminal app shows (`explore_model.build`) as JSON
and draws it with a few lines of plain JavaScript: a sortable, filterable table of every node,
a detail pane with the same drill-down links, the capture timeline and byte bars. So a run
attached to a ticket opens anywhere, offline, and reads like `eaglegraph explore`.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from eaglegraph.reports.explore_ranks import explorer_of as build
from eaglegraph.serial import atomic_write

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:.6em 1em}header h1{font-size:1.1em;margin:0}
header small{opacity:.7}#bar{display:flex;gap:.5em;padding:.5em 1em;flex-wrap:wrap}
#bar input,#bar select{font:inherit;padding:.2em .4em}main{display:flex;gap:1em;padding:0 1em}
#left{flex:1 1 55%;min-width:0}#right{flex:1 1 45%;min-width:0}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{text-align:left;padding:.25em .5em;border-bottom:1px solid #e3e6ea;vertical-align:top}
th{cursor:pointer;user-select:none;background:#eef0f3;position:sticky;top:0}
th.asc:after{content:" \\25B2"}th.desc:after{content:" \\25BC"}
tr.row{cursor:pointer}tr.row:hover{background:#eef4ff}tr.sel{background:#dde8ff}
.error{color:#b3261e;font-weight:600}.warning{color:#a86400}.info{color:#0b6e99}
#detail{background:#fff;padding:.6em 1em;border:1px solid #e3e6ea}
#detail h2{font-size:1.05em;margin:.2em 0 .5em}#detail dt{font-weight:600;color:#0b6e99}
#report{margin:1em;background:#fff;border:1px solid #e3e6ea;padding:.5em}
#report pre{font-family:Menlo,'DejaVu Sans Mono',consolas,monospace;font-size:12px}
#detail dd{margin:0 0 .4em 0;white-space:pre-wrap;word-break:break-word}
#links a{display:block;margin:.15em 0}.bars{background:#fff;border:1px solid #e3e6ea;
padding:.4em .6em;margin-top:1em}.bars div.r{display:flex;align-items:center;gap:.5em;
font-size:12px;cursor:pointer}.bars span.l{flex:0 0 45%;overflow:hidden;white-space:nowrap;
text-overflow:ellipsis}.bars span.t{flex:1;position:relative;height:10px;background:#f0f2f5}
.bars span.b{position:absolute;top:0;height:10px;background:#3f7fdc;min-width:2px}
.bars span.b.draft_prefill{background:#1b9aaa}.bars span.b.draft_decode{background:#a34fc4}
.bars span.b.error{background:#b3261e}.bars span.t{overflow:hidden}
.zoom{display:flex;gap:.4em;align-items:center;font-size:12px;margin:.2em 0 .4em}
.zoom button{font:inherit;padding:0 .5em}#back{font:inherit}
"""

_JS = r"""
const M = JSON.parse(document.getElementById('model').textContent);
const N = M.nodes, order = [];
M.sections.forEach(([s, ids]) => ids.forEach(id => order.push(id)));
let sortKey = null, sortDir = 1, selected = null;
const $ = id => document.getElementById(id);
const esc = s => String(s ?? '').replace(/[&<>"]/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));
function fill(sel, attr) {
  const vals = [...new Set(order.map(id => N[id][attr]).filter(v => v))].sort();
  vals.forEach(v => { const o = document.createElement('option'); o.value = o.textContent = v; sel.appendChild(o); });
}
fill($('f-section'), 'section'); fill($('f-phase'), 'phase');
fill($('f-severity'), 'severity'); fill($('f-kind'), 'kind');
function text(n) { return [n.label, n.kind, n.phase, n.severity, ...n.detail.flat()].join(' ').toLowerCase(); }
function visible(n) {
  const q = $('q').value.trim().toLowerCase();
  for (const a of ['section', 'phase', 'severity', 'kind']) {
    const v = $('f-' + a).value; if (v && n[a] !== v) return false;
  }
  return !q || text(n).includes(q);
}
function rows() {
  let ids = order.filter(id => visible(N[id]));
  if (sortKey) ids.sort((a, b) => {
    const x = N[a][sortKey] ?? '', y = N[b][sortKey] ?? '';
    return (typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y))) * sortDir;
  });
  $('rows').innerHTML = ids.map(id => { const n = N[id];
    return `<tr class="row${id === selected ? ' sel' : ''}" data-id="${esc(id)}"><td>${esc(n.section)}</td>` +
      `<td>${esc(n.label)}</td><td>${esc(n.phase)}</td><td class="${esc(n.severity)}">${esc(n.severity)}</td>` +
      `<td>${esc(n.kind)}</td></tr>`; }).join('');
  $('count').textContent = `${ids.length} / ${order.length} shown`;
}
function show(id, push) {
  const n = N[id]; if (!n) return; selected = id;
  if (push !== false) history.replaceState(null, '', '#' + encodeURIComponent(id));
  let h = `<h2 id="d-title">${esc(n.label)}</h2><dl><dt>section</dt><dd>${esc(n.section)} · ${esc(n.kind)}</dd>`;
  n.detail.forEach(([k, v]) => {
    const val = /^https?:\/\//.test(v) ? `<a href="${esc(v)}">${esc(v)}</a>` : esc(v);
    h += `<dt>${esc(k)}</dt><dd class="${k === 'severity' ? esc(v) : ''}">${val}</dd>`; });
  h += '</dl><div id="links">' + n.links.map(l => `<a href="#${encodeURIComponent(l)}" data-link="${esc(l)}">→ ${esc(N[l].section)}: ${esc(N[l].label)}</a>`).join('') + '</div>';
  $('detail').innerHTML = h; rows();
}
function bars(el, nodes, key) {
  if (!nodes.length) { el.style.display = 'none'; return; }
  let end = 0; nodes.forEach(n => end = Math.max(end, key === 'time' ? n.start_s + n.duration_s : n.bytes));
  end = end || 1;
  const rows = document.createElement('div'); el.appendChild(rows);
  rows.innerHTML = nodes.map(n => {
    const width = key === 'time' ? 100 * n.duration_s / end : 100 * n.bytes / end;
    return `<div class="r" data-id="${esc(n.id)}"><span class="l">${esc(n.label)}</span><span class="t">` +
      `<span class="b ${esc(n.phase)} ${esc(n.severity)}" style="left:0%;width:${width}%"></span></span></div>`;
  }).join('');
  return {end, rows};
}
// The timeline's window: zoom scales it, pan moves it; bars outside the window are clipped.
const T = {scale: 1, lo: 0, nodes: order.map(id => N[id]).filter(n => n.start_s !== null)};
T.view = bars($('timeline-rows'), T.nodes, 'time');
if (!T.view) $('timeline').style.display = 'none';
function drawTimeline() {
  if (!T.view) return;
  const span = T.view.end / T.scale, lo = T.lo * T.view.end;
  T.view.rows.querySelectorAll('div.r').forEach((r, i) => {
    const n = T.nodes[i], b = r.querySelector('span.b');
    b.style.left = `${100 * (n.start_s - lo) / span}%`;
    b.style.width = `${100 * n.duration_s / span}%`;
  });
  $('zoom-label').textContent = `zoom ×${T.scale}  window ${lo.toFixed(3)}–${(lo + span).toFixed(3)} s`;
}
function zoom(f) { T.scale = Math.max(1, Math.min(1024, T.scale * f)); T.lo = Math.min(T.lo, 1 - 1 / T.scale); drawTimeline(); }
function pan(step) { T.lo = Math.max(0, Math.min(1 - 1 / T.scale, T.lo + step * 0.25 / T.scale)); drawTimeline(); }
$('zoom-in').onclick = () => zoom(2); $('zoom-out').onclick = () => zoom(0.5);
$('pan-left').onclick = () => pan(-1); $('pan-right').onclick = () => pan(1);
drawTimeline();
bars($('pools'), order.map(id => N[id]).filter(n => n.section === 'Pools' && n.bytes), 'bytes');
document.addEventListener('keydown', e => {
  if (e.target.matches('input, select')) return;
  const keys = {'+': () => zoom(2), '=': () => zoom(2), '-': () => zoom(0.5),
    'ArrowLeft': () => pan(-1), 'ArrowRight': () => pan(1), '/': () => $('q').focus(),
    'b': () => history.back()};
  if (keys[e.key]) { e.preventDefault(); keys[e.key](); }
});
function exportView() {
  const ids = order.filter(id => visible(N[id]));
  const view = {schema: M.schema, selected, search: $('q').value,
    filters: Object.fromEntries(['section', 'phase', 'severity', 'kind'].map(a => [a, $('f-' + a).value || null])),
    nodes: ids.map(id => N[id])};
  const a = $('export');
  a.href = URL.createObjectURL(new Blob([JSON.stringify(view, null, 2)], {type: 'application/json'}));
}
$('export').addEventListener('click', exportView);
$('back').onclick = () => history.back();
document.addEventListener('click', e => {
  const link = e.target.closest('[data-link]');
  if (link) { e.preventDefault(); location.hash = encodeURIComponent(link.dataset.link); return; }
  const row = e.target.closest('[data-id]'); if (row) show(row.dataset.id);
});
document.querySelectorAll('th[data-key]').forEach(th => th.addEventListener('click', () => {
  const k = th.dataset.key; sortDir = sortKey === k ? -sortDir : 1; sortKey = k;
  document.querySelectorAll('th').forEach(t => t.className = '');
  th.className = sortDir > 0 ? 'asc' : 'desc'; rows();
}));
['q', 'f-section', 'f-phase', 'f-severity', 'f-kind'].forEach(id => {
  $(id).addEventListener('input', rows); $(id).addEventListener('change', rows); });
window.addEventListener('hashchange', () => show(decodeURIComponent(location.hash.slice(1)), false));
const start = decodeURIComponent(location.hash.slice(1));
show(N[start] ? start : order[0], false);
"""

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8"><meta name="generator" content="eaglegraph">
<title>{title}</title><style>{css}</style></head><body>
<header><h1>{title}</h1><small>{schema} · eaglegraph explore</small></header>
<div id="bar"><input id="q" type="search" placeholder="search…">
<select id="f-section"><option value="">all sections</option></select>
<select id="f-phase"><option value="">all phases</option></select>
<select id="f-severity"><option value="">all severities</option></select>
<select id="f-kind"><option value="">all kinds</option></select><span id="count"></span>
<button id="back" title="back (b)">← back</button>
<a id="export" download="eaglegraph-explore-view.json" href="#">export view (JSON)</a></div>
<main><div id="left"><table><thead><tr><th data-key="section">section</th>
<th data-key="label">item</th><th data-key="phase">phase</th><th data-key="severity">severity</th>
<th data-key="kind">kind</th></tr></thead><tbody id="rows"></tbody></table>
<div class="bars" id="timeline"><b>capture timeline</b><div class="zoom">
<button id="zoom-out" title="zoom out (-)">−</button><button id="zoom-in" title="zoom in (+)">+</button>
<button id="pan-left" title="earlier (←)">←</button><button id="pan-right" title="later (→)">→</button>
<span id="zoom-label"></span></div><div id="timeline-rows"></div></div>
<div class="bars" id="pools"><b>pool bytes</b></div></div>
<div id="right"><div id="detail"></div></div></main>{report}
<script type="application/json" id="model">{model}</script>
<script>{js}</script></body></html>
"""


def render_explorer_html(run: Any, *, title: str | None = None, report: str = "") -> str:
    """The explorer page for a run; `<` in the model JSON is escaped so no run text is markup.

    `report` is the terminal report as recorded HTML, shown under the explorer.
    """
    model = build(run)
    data = json.dumps(model.to_json(), ensure_ascii=False).replace("<", "\\u003c")
    return _PAGE.format(
        title=html.escape(title or f"eaglegraph — {model.title}"),
        schema=html.escape(model.schema),
        css=_CSS,
        js=_JS,
        model=data,
        report=f'<details open id="report"><summary>terminal report</summary>{report}</details>'
        if report
        else "",
    )


def write_explorer_html(run: Any, path: Path | str, overwrite: bool = False) -> Path:
    """Write the page atomically; refuses to replace a file unless `overwrite`."""
    return atomic_write(path, render_explorer_html(run), overwrite=overwrite)
