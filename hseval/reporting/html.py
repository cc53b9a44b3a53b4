"""The offline HTML page of ``hseval report``: sections with a table of contents, each chart with a
one-line reading guide, per-group detail behind a selector.

The page loads nothing from the network. plotly.js (4.8 MB) is inlined gzip-compressed and
base64-encoded (2 MB) and unpacked by the browser's own ``DecompressionStream``; each figure is
plotly's JSON (``fig.to_json()``) in a ``<script type="application/json">`` block, drawn with
``Plotly.newPlot`` once plotly.js is loaded — the detail charts of a group only when that group
is chosen. So the page's size grows with the number of groups shown, not with the library.
"""

from __future__ import annotations

import base64
import gzip
import itertools
import re
from dataclasses import dataclass, field
from functools import cache

import pandas as pd
from plotly.offline import get_plotlyjs

from hseval.reporting.escape import html

__all__ = ["Chart", "Section", "Detail", "page", "anchor"]

STYLE = ("body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1300px;padding:0 1em;color:#222}"
         "table{border-collapse:collapse;font-size:13px;margin:1em 0;display:block;overflow-x:auto;max-width:100%}"
         "td,th{border:1px solid #ccc;padding:3px 6px;text-align:right;white-space:nowrap}"
         "th{background:#f3f3f3;white-space:normal;min-width:4em}"
         "td:first-child,th:first-child{text-align:left;position:sticky;left:0;background:#fafafa}"
         "td.text{text-align:left;white-space:normal;min-width:7em;max-width:32em}"
         "h2{margin-top:2.2em;border-bottom:1px solid #ddd}.guide{color:#555;margin:.2em 0 .6em}"
         ".problem{color:#a00}nav ol{columns:2}.chart{min-height:300px}details.columns{font-size:13px;color:#444}"
         "details.columns dt{font-weight:600}details.columns dd{margin:0 0 .4em 1.2em}th[title]{cursor:help}"
         "select{font-size:15px;padding:3px}#loading{color:#888}")


@dataclass
class Chart:
    """A figure (or a table, as a frame) with a one-line reading guide: what a good head looks like on it."""

    title: str
    figure: object
    guide: str


@dataclass
class Section:
    title: str
    intro: str = ""
    tables: list[pd.DataFrame] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)


@dataclass
class Detail:
    """Charts per entry (a run or a seed group) shown one entry at a time, chosen in a selector."""

    title: str
    intro: str
    entries: dict[str, list[Chart]]


def anchor(title: str) -> str:
    """A stable id for a heading (also the Markdown anchor GitHub derives from it)."""
    text = re.sub(r"[^\w\- ]", "", title.lower(), flags=re.UNICODE).strip()
    return re.sub(r"\s+", "-", text)


@cache
def _plotly_js() -> str:
    """plotly.js packed once per process (gzip of 4.8 MB: a quarter of a second)."""
    packed = base64.b64encode(gzip.compress(get_plotlyjs().encode(), 9, mtime=0)).decode()
    return f"<script type='application/octet-stream' id='plotly-gz'>{packed}</script>"


_LOADER = """<script>
(async () => {
  const folder = decodeURIComponent(location.pathname).replace(/[\\/][^\\/]*$/, '');  // where the page is now
  document.querySelectorAll('.here').forEach(span => { span.textContent = folder; });
  const status = document.getElementById('loading');
  try {
    const packed = document.getElementById('plotly-gz').textContent;
    const bytes = Uint8Array.from(atob(packed), c => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    const script = document.createElement('script');
    script.textContent = await new Response(stream).text();
    document.head.appendChild(script);
  } catch (err) {
    status.textContent = 'The charts need a browser with DecompressionStream (Chrome 80, Firefox 113, Safari 16.4 '
      + 'or later): ' + err;
    return;
  }
  status.remove();
  const config = {displaylogo: false, responsive: true};
  const draw = (holder) => {
    if (holder.dataset.drawn) return;
    const fig = JSON.parse(document.getElementById(holder.id + '-json').textContent);
    Plotly.newPlot(holder, fig.data, fig.layout, config);
    holder.dataset.drawn = '1';
  };
  document.querySelectorAll('.chart:not(.detail .chart)').forEach(draw);
  document.querySelectorAll('select.detail-choice').forEach(select => {
    const show = () => {
      document.querySelectorAll('.detail[data-group="' + select.dataset.group + '"]').forEach(part => {
        const on = part.dataset.entry === select.value;
        part.style.display = on ? '' : 'none';
        if (on) part.querySelectorAll('.chart').forEach(draw);
      });
    };
    select.addEventListener('change', show);
    show();
  });
})();
</script>"""


def _figure(chart: Chart, name: str) -> str:
    """A chart's holder and its figure's JSON block, named ``name``."""
    data = chart.figure.to_json().replace("<", "\\u003c")  # no tag in the JSON: nothing closes the script
    return (f"<h3>{html(chart.title)}</h3><p class='guide'>{html(chart.guide)}</p>"
            f"<div class='chart' id='{name}'></div>"
            f"<script type='application/json' id='{name}-json'>{data}</script>")


_NUMBER = re.compile(r"[<>+\-−]?\s*\d[\d.,]*(e[+-]?\d+)?( ± [\d.,]+)?( ★)?")
"""A number written as text ("0.8022", "< 0.0001", "0.81 ± 0.02"): aligned as a number."""


def _cell(value) -> str:
    """A table cell: a number right-aligned on one line, text (a name, a reason, a citation) left-aligned
    and wrapped, so that a long cell keeps the table within the page and stays readable."""
    if isinstance(value, str):
        return f"<td>{html(value)}</td>" if _NUMBER.fullmatch(value) else f"<td class='text'>{html(value)}</td>"
    if value is None or (isinstance(value, float) and value != value):
        return "<td></td>"
    if isinstance(value, float):
        return f"<td>{value:.4f}</td>"
    return f"<td>{html(value)}</td>"


def _table(frame: pd.DataFrame, helps: dict[str, str]) -> str:
    """The table, each column's help in its header's hover and listed below it."""
    if frame.empty:
        return "<p><em>(none)</em></p>"
    head = "".join(f"<th title='{html(helps[c])}'>{html(c)}</th>" if c in helps else f"<th>{html(c)}</th>"
                   for c in frame.columns)
    rows = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in frame.itertuples(index=False))
    text = f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    described = [c for c in frame.columns if c in helps]
    if described:
        text += ("<details class='columns'><summary>What the columns mean</summary><dl>"
                 + "".join(f"<dt>{html(c)}</dt><dd>{html(helps[c])}</dd>" for c in described) + "</dl></details>")
    return text


def page(title: str, lead: str, problems: list[str], sections: list[Section], details: list[Detail], *,
         helps: dict[str, str] | None = None, folder: str | None = None, here: bool = False) -> str:
    """The whole self-contained page; every text given is plain text (escaped here). ``helps``: the
    help of each column name of its tables; ``folder``: the evaluation folder, shown under the lead
    (``here``: the page lies in it, so when opened the page shows the folder it is in now, wherever
    it was written)."""
    numbers = itertools.count(1)

    def figure(chart: Chart) -> str:
        if isinstance(chart.figure, pd.DataFrame):
            return f"<h3>{html(chart.title)}</h3><p class='guide'>{html(chart.guide)}</p>{_table(chart.figure, {})}"
        return _figure(chart, f"fig{next(numbers)}")

    toc = [f"<li><a href='#{anchor(s.title)}'>{html(s.title)}</a></li>" for s in [*sections, *details]]
    where = f"<p>Evaluation folder: <code class='{'here' if here else 'folder'}'>{html(folder)}</code></p>" \
        if folder else ""
    body = [f"<h1>{html(title)}</h1><p>{html(lead)}</p>{where}", "<p id='loading'>Loading the charts…</p>",
            *(f"<p class='problem'>Skipped: {html(p)}</p>" for p in problems),
            f"<nav><h2 id='contents'>Contents</h2><ol>{''.join(toc)}</ol></nav>"]
    for section in sections:
        body.append(f"<h2 id='{anchor(section.title)}'>{html(section.title)}</h2>")
        if section.intro:
            body.append(f"<p class='guide'>{html(section.intro)}</p>")
        body += [_table(t, helps or {}) for t in section.tables]
        body += [figure(c) for c in section.charts]
    for k, detail in enumerate(details):
        body.append(f"<h2 id='{anchor(detail.title)}'>{html(detail.title)}</h2>"
                    f"<p class='guide'>{html(detail.intro)}</p>")
        options = "".join(f"<option value='{html(name)}'>{html(name)}</option>"
                          for name in detail.entries)
        body.append(f"<label>Show: <select class='detail-choice' data-group='d{k}'>{options}</select></label>")
        for name, charts in detail.entries.items():
            body.append(f"<div class='detail' data-group='d{k}' data-entry='{html(name)}'>"
                        + "".join(figure(c) for c in charts) + "</div>")
    return "\n".join(["<!DOCTYPE html><html><head><meta charset='utf-8'>",
                      f"<title>{html(title)}</title><style>{STYLE}</style>{_plotly_js()}</head><body>",
                      *body, _LOADER, "</body></html>"])
