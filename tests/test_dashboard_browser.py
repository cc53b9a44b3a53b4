"""The report and the dashboard in a real browser, looked at: ``hseval dashboard DIR --port N`` as a
subprocess and report.html, driven by headless Chromium through playwright at 1400×900. Every
figure of the report and of every page is checked as a person would look at it (its height, its
legend, its labels, the runs' colours) and pictured; the first render of the overview is timed;
the server stops with Ctrl-C (exit 0); the report loads nothing from the network.

Needs Debian's ``chromium`` (``apt-get install chromium``; ``$HSEVAL_CHROMIUM`` names another
binary) and the ``playwright`` package; never ``playwright install`` (it downloads browsers).
"""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.request
from pathlib import Path

import pytest

from hseval.core import fileio
from hseval.core.errors import HsevalWarning
from tests.browser import CHROMIUM, dashboard_page, drawn, settle
from tests.dashboard_helpers import copy_runs
from tests.helpers import reseal

pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install playwright "
                                                  "(the browser comes from the system, not playwright)")
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).is_file(),
                                reason=f"no Chromium at {CHROMIUM}: apt-get install chromium (or set $HSEVAL_CHROMIUM)")
PLOTS = "document.querySelectorAll('.js-plotly-plot')"


LOOK = """() => {
  const boxes = (root, sel) => [...root.querySelectorAll(sel)].filter(e => e.textContent.trim())
    .map(e => e.getBoundingClientRect()).filter(r => r.width > 0 && r.height > 0);
  const overlap = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1
    && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  const inside = (a, b) => a.left >= b.left - 1 && a.right <= b.right + 1 && a.top >= b.top - 1
    && a.bottom <= b.bottom + 1;
  const pairs = rects => rects.flatMap((a, i) => rects.slice(i + 1).filter(b => overlap(a, b))).length;
  // slanted tick labels are parallel lines of text: two overlap when the gap between their lines
  // (the ticks' spacing times the sine of the angle) is less than the text's height
  const slanted = root => {
    const ticks = [...root.querySelectorAll('.xtick text')].filter(e => e.textContent.trim())
      .map(e => /translate\\(([-\\d.]+)[^)]*\\)\\s*rotate\\(([-\\d.]+)/.exec(e.getAttribute('transform') || ''))
      .filter(m => m).map(m => [parseFloat(m[1]), Math.abs(Math.sin(parseFloat(m[2]) * Math.PI / 180))]);
    const size = parseFloat(getComputedStyle(root.querySelector('.xtick text') || root).fontSize) || 12;
    const xs = ticks.map(t => t[0]).sort((a, b) => a - b);
    return xs.slice(1).filter((x, i) => (x - xs[i]) * ticks[0][1] < 0.9 * size).length;
  };
  return [...document.querySelectorAll('.js-plotly-plot')].filter(p => p._fullLayout && p.offsetParent).map(p => {
    const svg = p.querySelector('.main-svg').getBoundingClientRect();
    const legend = p.querySelector('.legend');
    const frame = legend && legend.querySelector('.bg').getBoundingClientRect();
    const items = legend ? [...legend.querySelectorAll('.traces')].map(e => e.getBoundingClientRect()) : [];
    const colours = {};
    (p.data || []).forEach(t => {
      const c = t.marker && typeof t.marker.color === 'string' ? t.marker.color : t.line && t.line.color;
      if (t.name && c) colours[t.name] = c;
    });
    return {title: String((p._fullLayout.title || {}).text || '').split('<br>')[0], height: svg.height,
            shown: p._fullLayout.showlegend ? p._fullData.filter(t => t.visible === true && t.showlegend).length : 0,
            items: items.length, clipped: items.filter(r => !inside(r, frame) || !inside(r, svg)).length,
            ticks: pairs(boxes(p, '.xtick text:not([transform*="rotate"]), .ytick text')) + slanted(p),
            labels: pairs(boxes(p, '.textpoint text')), colours};
  });
}"""
"""Every drawn figure of the page: its height, its legend (entries in the DOM, traces it should
show, entries outside its box or the figure), overlapping tick labels and text labels (pairs of
bounding boxes), and the colour of each named trace."""


@pytest.fixture(scope="module")
def many_runs(evaluated, tmp_path_factory) -> Path:
    """Two copies of each run: fourteen runs, more than the demo's twelve, with equal values in
    every chart (what stacked marks on one point); each copy is told trained with another learning
    rate, so that every run is drawn on its own, not as a seed group."""
    folder = copy_runs(evaluated, tmp_path_factory.mktemp("many") / "eval", copies=2)
    for run in (p for p in folder.iterdir() if p.name.endswith("-2")):
        metrics = json.loads((run / "metrics.json").read_text())
        metrics["training"]["optim"]["lr"] = metrics["training"]["optim"]["lr"] * int(run.name[-1])
        fileio.write_json(run / "metrics.json", metrics)
        reseal(run)
    return folder


class Look:
    """Looks at every figure of each page opened: the checks of :data:`LOOK`, a screenshot of each
    figure and of the page (in ``folder``), and one colour per run across everything looked at."""

    def __init__(self, folder: Path, runs: set[str]) -> None:
        self.folder, self.runs, self.colours, self.failures = folder, runs, {}, []
        folder.mkdir(parents=True, exist_ok=True)

    def __call__(self, page, name: str, *, scope: str = "") -> list[dict]:
        page.wait_for_timeout(800)  # plotly lays out once more after the first draw
        figures = page.evaluate(LOOK)
        for k, fig in enumerate(figures):
            where = f"{name} figure {k + 1} ({fig['title']!r})"
            if fig["height"] < 300:
                self.failures.append(f"{where}: drawn {fig['height']:.0f} px tall")
            if fig["items"] != fig["shown"] or fig["clipped"]:
                self.failures.append(f"{where}: {fig['items']} legend entries drawn of {fig['shown']}, "
                                     f"{fig['clipped']} clipped")
            if fig["ticks"] or fig["labels"]:
                self.failures.append(f"{where}: {fig['ticks']} tick labels and {fig['labels']} text labels overlap")
            for run, colour in fig["colours"].items():
                if run in self.runs and self.colours.setdefault(run, (colour, where))[0] != colour:
                    self.failures.append(f"{where}: {run} is {colour}, but {self.colours[run][0]} in "
                                         f"{self.colours[run][1]}")
        plots = page.locator(f"{scope} .js-plotly-plot".strip())
        for k in range(plots.count()):
            if plots.nth(k).is_visible():
                plots.nth(k).screenshot(path=str(self.folder / f"{name}-{k + 1:02d}.png"))
        page.screenshot(path=str(self.folder / f"{name}.png"))
        return figures


def _break(folder: Path, run: str) -> None:
    """Edit a run's metrics.json as a user might: its checksum no longer matches, so it is skipped."""
    path = folder / run / "metrics.json"
    path.write_text(path.read_text() + "\n")


def test_report_and_every_page_read_right(many_runs, tmp_path, record_property):
    """The report and every dashboard page as a researcher sees them at 1400×900, with fourteen runs
    whose values repeat: each figure drawn at least 300 px tall, every legend entry drawn inside its
    legend and figure, no two tick labels (nor class-vector names) on top of each other, one colour
    per run on every page and in the report, every report table
    within the page — also after a run is made unreadable, when the
    baseline's change is said. Screenshots of every figure and page go to $HSEVAL_SCREENSHOTS
    (default: this test's tmp folder). Along the way: the first render of the overview is timed,
    a click on the sunburst picks a node, the semantic colours of the embeddings are equal across
    runs, no violin passes 180°, confusion axes carry names, Compare has an interval and a p-value
    for every run, the report loads nothing from the network, and the server stops with Ctrl-C."""
    from hseval.reporting.report import write_report

    write_report(many_runs)
    moved = tmp_path / "moved"  # the report is read where it is now, not where it was written
    moved.mkdir()
    shutil.copy2(many_runs / "report.html", moved / "report.html")
    names = {p.name for p in many_runs.iterdir() if (p / "metrics.json").is_file()}
    look = Look(Path(os.environ.get("HSEVAL_SCREENSHOTS") or tmp_path / "screens"), names)
    with dashboard_page(many_runs) as (server, page):
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        page.goto((moved / "report.html").as_uri())
        drawn(page, minimum=10)
        report = look(page, "report")
        assert page.locator(".here").inner_text() == str(moved)  # not where it was written
        assert [url for url in requests if not url.startswith("file:")] == []
        hidden = page.evaluate("""() => [...document.querySelectorAll('table')]
            .filter(t => t.scrollWidth > t.clientWidth + 1).map(t => t.innerText.slice(0, 60))""")
        assert hidden == []  # every table within the page: no column behind a scroll bar
        assert any("heatmap" in f["title"] or "confusion" in f["title"] for f in report)
        axes = page.evaluate(f"""() => [...{PLOTS}].flatMap(p => p.data).filter(t => t.type === 'heatmap')
            .map(t => [[...t.x], [...t.y]])""")
        assert axes and all("T-shirt/top" in x and "Ankle boot" in y for x, y in axes)

        url = server.wait_ready()
        up = time.perf_counter()
        page.goto(url)
        page.wait_for_selector('[data-testid="stDataFrame"]', timeout=30_000)
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
        first_render = time.perf_counter() - up
        record_property("first_render_s", round(first_render, 3))
        print(f"\nfirst render of the overview ({len(names)} runs): {first_render:.2f} s after the server was up")
        assert page.locator("h1").first.inner_text() == "Overview"
        _wait_text(page, "top1 vs plain")
        drawn(page, minimum=2)
        look(page, "overview")

        page.get_by_role("link", name="Hierarchy").click()
        page.wait_for_selector(".js-plotly-plot .sunburstlayer g.slice", timeout=30_000)
        page.wait_for_selector('[data-testid="stMetricValue"]', timeout=30_000)
        page.locator(".sunburstlayer g.slice").filter(has_text="footwear").first.click()
        page.wait_for_function("() => [...document.querySelectorAll('[data-testid=stMetricValue]')]"
                               ".some(e => e.innerText === '60')", timeout=20_000)
        look(page, "hierarchy")

        page.get_by_role("link", name="Geometry").click()
        page.wait_for_function(f"() => [...{PLOTS}].some(p => (p.data || []).some(t => t.type === 'violin'))",
                               timeout=30_000)
        drawn(page, minimum=5)
        extent = page.evaluate(f"""() => [...{PLOTS}].flatMap(p => (p.calcdata || []).flat())
            .flatMap(c => (c && c.density) ? c.density.map(d => d.t) : [])""")
        assert extent and 0 <= min(extent) and max(extent) <= 180, (min(extent), max(extent))
        look(page, "geometry")

        page.get_by_role("link", name="Embeddings").click()
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
        _select(page, "Colour by", "correct / wrong")
        page.wait_for_function(f"() => [...{PLOTS}].some(p => (p.data || []).some(t => t.name === 'correct'))",
                               timeout=30_000)
        first = {t["name"]: t["colour"] for t in _traces(page, "correct") if t["name"] in ("correct", "wrong")}
        _select(page, "Run", "riemann")
        page.wait_for_function(f"""() => [...{PLOTS}].some(p => String((p.layout.title || {{}}).text || '')
            .includes('riemann:') && p.data.some(t => t.name === 'correct'))""", timeout=30_000)
        second = {t["name"]: t["colour"] for t in _traces(page, "correct") if t["name"] in ("correct", "wrong")}
        assert first and first == {k: second[k] for k in first}  # correct / wrong: one colour in every run
        _select(page, "Highlight", "clothing / tops")
        _wait_text(page, "under tops highlighted")
        look(page, "embeddings")  # the legend keeps its colours under a highlight
        _select(page, "Colour by", "super-class, level 2 · Trouser, Dress, tops +3 more")
        _wait_text(page, "have no level-2 super-class")

        page.get_by_role("link", name="Confusion").click()
        page.wait_for_function(f"() => [...{PLOTS}].some(p => (p.data || []).some(t => t.type === 'heatmap'))",
                               timeout=30_000)
        axis = page.evaluate(f"() => [...{PLOTS}].flatMap(p => p.data).find(t => t.type === 'heatmap').x")
        assert "T-shirt/top" in axis and "Bag" in axis
        look(page, "confusion")

        page.get_by_role("link", name="Compare").click()
        _wait_text(page, "exact McNemar test")  # the table itself is drawn on a canvas
        page.wait_for_function(f"""() => [...{PLOTS}].some(p => p.layout && p.layout.title
            && String(p.layout.title.text || '').includes('Difference from'))""", timeout=30_000)
        runs = page.evaluate(f"""() => [...{PLOTS}].filter(p => String((p.layout.title || {{}}).text || '')
            .includes('Difference from')).flatMap(p => p.data.map(t => t.name))""")
        assert len(set(runs) & names) == len(names) - 1, runs  # every other run against the baseline, with its interval
        drawn(page, minimum=6)
        look(page, "compare")

        page.get_by_role("link", name="Decisions").click()  # the operating curves, one per run, and the stop depths
        page.wait_for_function(f"""() => [...{PLOTS}].some(p => String((p.layout.title || {{}}).text || '')
            .includes('correct against specific'))""", timeout=30_000)
        page.wait_for_function(f"""() => [...{PLOTS}].some(p => String((p.layout.title || {{}}).text || '')
            .includes('Depth of the threshold'))""", timeout=30_000)
        curves = page.evaluate(f"""() => [...{PLOTS}].filter(p => String((p.layout.title || {{}}).text || '')
            .includes('correct against specific')).flatMap(p => p.data.map(t => t.name))""")
        assert names - {"barz-denzler", "barz-denzler-2"} <= set(curves), curves  # each run with probabilities
        _wait_text(page, "Run whose answers to show")
        look(page, "decisions")

        _break(many_runs, "plain")  # the baseline is skipped now: it changes, and the page says so
        page.get_by_role("link", name="Overview").click()
        _wait_text(page, "The baseline plain could not be read: comparing with plain-2 instead.")
        drawn(page, minimum=2)
        look(page, "overview-without-plain")
        with pytest.warns(HsevalWarning, match="left out of the report"):  # said, and drawn without it
            write_report(many_runs)
        page.goto((many_runs / "report.html").as_uri())
        drawn(page, minimum=10)
        look(page, "report-without-plain")
    assert not look.failures, "\n".join(look.failures)
    assert server.code == 0, "".join(server.lines)
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)


def _select(page, label: str, option: str) -> None:
    """Choose ``option`` in the Streamlit selectbox labelled ``label`` (as a user clicks it)."""
    page.get_by_role("combobox", name=label, exact=True).first.click()
    page.get_by_role("option", name=option, exact=True).first.click()


def _traces(page, name: str) -> list[dict]:
    """name, type and marker colour of every trace of every plot on the page whose traces include ``name``."""
    return page.evaluate(f"""() => [...{PLOTS}].flatMap(p => (p.data || []).some(t => t.name === {name!r})
        ? p.data.map(t => ({{name: t.name, type: t.type, colour: t.marker && t.marker.color}})) : [])""")


def _wait_text(page, text: str, timeout: int = 30_000) -> None:
    page.wait_for_function(f"() => document.body.innerText.includes({text!r})", timeout=timeout)


def test_a_5000_class_tree_is_shown_in_parts(large_evaluated, tmp_path):
    """At 5,000 classes, as a person sees it: every page settles; the confusion page says the leaf
    matrix is too large to draw and shows the most-confused pairs table; the hierarchy chart draws
    at most 3 levels at first; the figures are readable (the checks of :data:`LOOK`)."""
    look = Look(Path(os.environ.get("HSEVAL_SCREENSHOTS") or tmp_path / "screens") / "large", {"large"})
    with dashboard_page(large_evaluated) as (server, page):
        page.goto(server.wait_ready())
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=60_000)
        times = {name: settle(page, name) for name in ("Hierarchy", "Confusion", "Embeddings", "Geometry")}
        print("\nseconds to settle at 5,000 classes:", times, f"server peak {server.peak_memory() / 2**30:.2f} GB")

        page.get_by_role("link", name="Confusion").click()
        _wait_text(page, "too many to draw")
        _wait_text(page, "Most-confused pairs")
        page.wait_for_selector('[data-testid="stDataFrame"]', timeout=30_000)
        page.wait_for_function(f"() => [...{PLOTS}].some(p => (p.data || []).some(t => t.type === 'heatmap'))",
                               timeout=30_000)
        heatmaps = page.evaluate(f"() => [...{PLOTS}].flatMap(p => p.data).filter(t => t.type === 'heatmap')"
                                 ".map(t => t.x.length)")
        assert heatmaps and max(heatmaps) <= 201  # only the one super-class's classes (and "outside")
        look(page, "confusion")

        page.get_by_role("link", name="Hierarchy").click()
        page.wait_for_selector(".js-plotly-plot .sunburstlayer g.slice", timeout=60_000)
        drawn(page)
        levels = page.evaluate(f"""() => [...{PLOTS}].flatMap(p => (p._fullData || []))
            .filter(t => t.type === 'sunburst').map(t => t.maxdepth)""")
        slices = page.locator(".sunburstlayer g.slice").count()
        total = page.evaluate(f"() => [...{PLOTS}].flatMap(p => p.data).find(t => t.type === 'sunburst').ids.length")
        assert levels and 1 <= levels[0] <= 3 and slices <= total
        look(page, "hierarchy")
    assert not look.failures, "\n".join(look.failures)
    assert server.code == 0, "".join(server.lines)
