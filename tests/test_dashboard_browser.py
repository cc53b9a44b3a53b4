"""The dashboard in a real browser: ``hseval dashboard DIR --port N`` as a subprocess, driven by
headless Chromium through playwright. Times the first render of the overview for six runs, saves a
screenshot, walks every page asserting on what is drawn (plot data read from the page), stops the
server with Ctrl-C (exit 0); and opens report.html offline.

Needs Debian's ``chromium`` (``apt-get install chromium``; ``$HSEVAL_CHROMIUM`` names another
binary) and the ``playwright`` package; never ``playwright install`` (it downloads browsers).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.dashboard_helpers import copy_runs

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install playwright "
                                                             "(the browser comes from the system, not playwright)")
CHROMIUM = os.environ.get("HSEVAL_CHROMIUM", "/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).is_file(),
                                reason=f"no Chromium at {CHROMIUM}: apt-get install chromium (or set $HSEVAL_CHROMIUM)")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
ROOT = Path(__file__).parents[1]
PLOTS = "document.querySelectorAll('.js-plotly-plot')"


def dashboard_argv(folder: Path, port: int) -> list[str]:
    return [sys.executable, "-m", "hseval", "dashboard", str(folder), "--port", str(port)]


class Server:
    """The dashboard process; its output is drained by a thread (a full pipe would block it)."""

    def __init__(self, argv: list[str]) -> None:
        self.lines: list[str] = []
        self.url: str | None = None
        self.ready = threading.Event()
        self.process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)
            if line.startswith("hseval dashboard: http"):
                self.url = line.split()[2]
                self.ready.set()

    def wait_ready(self, timeout: float = 60) -> str:
        if not self.ready.wait(timeout):
            raise AssertionError("the dashboard did not come up:\n" + "".join(self.lines))
        return self.url

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:  # hseval stops streamlit within ~10 s (terminate, then kill)
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise


@contextmanager
def dashboard_page(folder: Path):
    """The dashboard on ``folder`` and a headless Chromium page; the server is stopped with Ctrl-C
    afterwards and its exit code kept in ``server.code``."""
    from hseval.cli.dashboard import free_port

    server = Server(dashboard_argv(folder, free_port()))
    try:
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            yield server, browser.new_page(viewport={"width": 1400, "height": 1100})
            browser.close()
    finally:
        server.code = server.stop()


@pytest.fixture(scope="module")
def six_runs(evaluated, tmp_path_factory) -> Path:
    return copy_runs(evaluated, tmp_path_factory.mktemp("six") / "eval", copies=2)


def test_dashboard_in_chromium(six_runs, tmp_path, record_property):
    """The dashboard as a user sees it: the first render of the overview is timed and pictured, a
    click on the sunburst picks a node; then every page is walked: semantic colours equal across
    runs, the level-2 caption counts the shallower samples, no violin passes 180°, confusion axes
    carry names, Compare shows an interval and a p-value for every run against the baseline; the
    server stops with Ctrl-C."""
    with dashboard_page(six_runs) as (server, page):
        url = server.wait_ready()
        up = time.perf_counter()
        page.goto(url)
        page.wait_for_selector('[data-testid="stDataFrame"]', timeout=30_000)
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
        first_render = time.perf_counter() - up
        record_property("first_render_s", round(first_render, 3))
        print(f"\nfirst render of the overview (6 runs): {first_render:.2f} s after the server was up")
        assert page.locator("h1").first.inner_text() == "Overview"
        _wait_text(page, "top1 vs plain")  # the caption of the overview's "vs baseline" column
        page.wait_for_timeout(1000)  # let plotly finish laying out before the picture
        shot = tmp_path / "overview.png"
        page.screenshot(path=str(shot))
        assert shot.stat().st_size > 10_000
        if os.environ.get("HSEVAL_SCREENSHOT"):
            shutil.copyfile(shot, os.environ["HSEVAL_SCREENSHOT"])

        page.get_by_role("link", name="Hierarchy").click()
        page.wait_for_selector(".js-plotly-plot .sunburstlayer g.slice", timeout=30_000)
        page.wait_for_selector('[data-testid="stMetricValue"]', timeout=30_000)  # the node detail, for clothing
        page.locator(".sunburstlayer g.slice").filter(has_text="footwear").first.click()
        # the click selects the node: "Samples under it" becomes footwear's 3 classes × 20
        page.wait_for_function("() => [...document.querySelectorAll('[data-testid=stMetricValue]')]"
                               ".some(e => e.innerText === '60')", timeout=20_000)
        page.screenshot(path=str(tmp_path / "hierarchy.png"))

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
        _select(page, "Colour by", "super-class, level 2")
        _wait_text(page, "have no level-2 super-class")

        page.get_by_role("link", name="Geometry").click()
        page.wait_for_function(f"() => [...{PLOTS}].some(p => (p.data || []).some(t => t.type === 'violin'))",
                               timeout=30_000)
        page.wait_for_timeout(500)
        extent = page.evaluate(f"""() => [...{PLOTS}].flatMap(p => (p.calcdata || []).flat())
            .flatMap(c => (c && c.density) ? c.density.map(d => d.t) : [])""")
        assert extent and 0 <= min(extent) and max(extent) <= 180, (min(extent), max(extent))

        page.get_by_role("link", name="Confusion").click()
        page.wait_for_function(f"() => [...{PLOTS}].some(p => (p.data || []).some(t => t.type === 'heatmap'))",
                               timeout=30_000)
        axis = page.evaluate(f"() => [...{PLOTS}].flatMap(p => p.data).find(t => t.type === 'heatmap').x")
        assert "T-shirt/top" in axis and "Bag" in axis

        page.get_by_role("link", name="Compare").click()
        _wait_text(page, "exact McNemar test")  # the table itself is drawn on a canvas
        page.wait_for_function(f"""() => [...{PLOTS}].some(p => p.layout && p.layout.title
            && String(p.layout.title.text || '').includes('Difference from'))""", timeout=30_000)
        runs = page.evaluate(f"""() => [...{PLOTS}].filter(p => String((p.layout.title || {{}}).text || '')
            .includes('Difference from')).flatMap(p => p.data.map(t => t.name))""")
        assert len(set(runs)) >= 3, runs  # every other run against the baseline, each with its interval
        page.screenshot(path=str(tmp_path / "compare.png"))
    assert server.code == 0, "".join(server.lines)
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)


def test_report_opens_offline_in_chromium(evaluated, tmp_path):
    """report.html renders its plots from the file alone: the browser requests nothing else."""
    import shutil

    from hseval.reporting.report import write_report

    folder = tmp_path / "eval"
    shutil.copytree(evaluated, folder)
    write_report(folder)
    requests: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page()
        page.on("request", lambda request: requests.append(request.url))
        page.goto((folder / "report.html").as_uri())
        page.wait_for_function(f"() => [...{PLOTS}].some(p => (p.data || []).some(t => t.type === 'heatmap'))",
                               timeout=30_000)
        plots = page.evaluate("document.querySelectorAll('.js-plotly-plot .main-svg').length")
        axes = page.evaluate(f"""() => [...{PLOTS}].flatMap(p => p.data).filter(t => t.type === 'heatmap')
            .map(t => [[...t.x], [...t.y]])""")
        page.select_option("select.detail-choice", "riemann")  # another entry's detail is drawn on demand
        page.wait_for_function(f"() => [...{PLOTS}].filter(p => (p.data || []).some(t => t.type === 'heatmap'))"
                               ".length >= 2", timeout=30_000)
        browser.close()
    assert plots >= 6
    assert [url for url in requests if not url.startswith("file:")] == []
    assert axes and all("T-shirt/top" in x and "Ankle boot" in y for x, y in axes)  # names, not indices



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
