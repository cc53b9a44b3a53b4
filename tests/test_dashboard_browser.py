"""The dashboard in a real browser: ``hseval dashboard DIR --port N`` as a subprocess, driven by
headless Chromium through playwright. Checks that the overview's table and a plot render, that a
click on the sunburst picks a node, times the first render of the overview for six runs, saves a
screenshot and stops the server with Ctrl-C (exit 0).

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
from pathlib import Path

import pytest

from tests.test_dashboard import copy_runs

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install playwright "
                                                             "(the browser comes from the system, not playwright)")
CHROMIUM = os.environ.get("HSEVAL_CHROMIUM", "/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).is_file(),
                                reason=f"no Chromium at {CHROMIUM}: apt-get install chromium (or set $HSEVAL_CHROMIUM)")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
ROOT = Path(__file__).parents[1]


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


@pytest.fixture(scope="module")
def six_runs(evaluated, tmp_path_factory) -> Path:
    return copy_runs(evaluated, tmp_path_factory.mktemp("six") / "eval", copies=2)


def test_dashboard_renders_in_chromium(six_runs, tmp_path, record_property):
    from hseval.commands.dashboard import free_port

    port = free_port()
    server = Server(dashboard_argv(six_runs, port))
    try:
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            url = server.wait_ready()
            up = time.perf_counter()
            page.goto(url)
            page.wait_for_selector('[data-testid="stDataFrame"]', timeout=30_000)
            page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
            first_render = time.perf_counter() - up
            record_property("first_render_s", round(first_render, 3))
            print(f"\nfirst render of the overview (6 runs): {first_render:.2f} s after the server was up")
            assert page.locator("h1").first.inner_text() == "Overview"
            page.wait_for_timeout(1000)  # let plotly finish laying out before the picture
            shot = tmp_path / "overview.png"
            page.screenshot(path=str(shot))
            assert shot.stat().st_size > 10_000
            if os.environ.get("HSEVAL_SCREENSHOT"):
                shutil.copyfile(shot, os.environ["HSEVAL_SCREENSHOT"])

            page.get_by_role("link", name="Hierarchy").click()
            page.wait_for_selector(".js-plotly-plot .sunburstlayer g.slice", timeout=30_000)
            page.wait_for_selector('[data-testid="stMetricValue"]', timeout=30_000)  # the node detail, for Bag
            page.locator(".sunburstlayer g.slice").filter(has_text="footwear").first.click()
            # the click selects the node: "Samples under it" becomes footwear's 3 classes × 20
            page.wait_for_function("() => [...document.querySelectorAll('[data-testid=stMetricValue]')]"
                                   ".some(e => e.innerText === '60')", timeout=20_000)
            page.screenshot(path=str(tmp_path / "hierarchy.png"))
            browser.close()
    finally:
        code = server.stop()
    assert code == 0, "".join(server.lines)
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)


def test_report_opens_offline_in_chromium(evaluated, tmp_path):
    """report.html renders its plots from the file alone: the browser requests nothing else."""
    import shutil

    from hseval.report import write_report

    folder = tmp_path / "eval"
    shutil.copytree(evaluated, folder)
    write_report(folder)
    requests: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page()
        page.on("request", lambda request: requests.append(request.url))
        page.goto((folder / "report.html").as_uri())
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
        plots = page.evaluate("document.querySelectorAll('.js-plotly-plot .main-svg').length")
        browser.close()
    assert plots >= 6
    assert [url for url in requests if not url.startswith("file:")] == []
