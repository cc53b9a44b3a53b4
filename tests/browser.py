"""The dashboard in a real browser: ``hseval dashboard DIR --port N`` as a subprocess and a headless
Chromium page driven by playwright (the browser test, and ``bench/scale.py``'s page times).

Needs Debian's ``chromium`` (``$HSEVAL_CHROMIUM`` names another binary) and the ``playwright``
package; never ``playwright install`` (it downloads browsers).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = os.environ.get("HSEVAL_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
ROOT = Path(__file__).parents[1]
PAGES = ("Overview", "Hierarchy", "Geometry", "Embeddings", "Confusion", "Compare", "Decisions")
_SVGS = "document.querySelectorAll('.js-plotly-plot .main-svg').length"
_RUNNING = "document.querySelector('[data-testid=\"stStatusWidget\"]') !== null"


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

    def peak_memory(self) -> int:
        """The largest peak resident memory (bytes, ``VmHWM``) among the server's processes: the
        streamlit child that holds the loaded runs."""
        pids, peak = [self.process.pid], 0
        while pids:
            pid = pids.pop()
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            except OSError:
                continue
            peak = max([peak] + [int(line.split()[1]) * 1024 for line in status.splitlines()
                                 if line.startswith("VmHWM:")])
            pids += [int(c) for c in children]
        return peak

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
    """The dashboard on ``folder`` and a headless Chromium page at 1400×900; the server is stopped
    with Ctrl-C afterwards and its exit code kept in ``server.code``."""
    from playwright import sync_api

    from hseval.cli.dashboard import free_port

    server = Server(dashboard_argv(folder, free_port()))
    try:
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            yield server, browser.new_page(viewport={"width": 1400, "height": 900})
            browser.close()
    finally:
        server.code = server.stop()


def drawn(page, minimum: int = 1, timeout: int = 60_000) -> None:
    """Wait until ``minimum`` plotly figures are drawn and their number has stopped growing."""
    page.wait_for_function(f"() => {_SVGS} >= {minimum}", timeout=timeout)
    count = -1
    while count != (count := page.evaluate(_SVGS)):
        page.wait_for_timeout(1500)


def settle(page, name: str, *, quiet_ms: int = 500, timeout: float = 120) -> float:
    """Click the sidebar link to page ``name`` and return the seconds until it settled: its title is
    shown, the script is no longer running and the number of drawn figures has not changed for
    ``quiet_ms`` (which is not counted)."""
    start = time.perf_counter()
    page.get_by_role("link", name=name).click()
    page.wait_for_function(f"() => [...document.querySelectorAll('h1')].some(h => h.innerText.trim() === {name!r})",
                           timeout=timeout * 1000)
    last, since = -1, time.perf_counter()
    while time.perf_counter() - start < timeout:
        count = page.evaluate(f"() => {_RUNNING} ? -1 : {_SVGS}")
        now = time.perf_counter()
        if count != last or count < 0:
            last, since = count, now
        elif (now - since) * 1000 >= quiet_ms:
            return since - start
        page.wait_for_timeout(50)
    raise AssertionError(f"the {name} page did not settle within {timeout:.0f} s")
