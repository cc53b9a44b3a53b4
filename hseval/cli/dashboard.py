"""``hseval dashboard DIR``: serve the Streamlit app of ``app/`` on an evaluation folder.

The folder is checked here first (a one-line error beats a browser tab full of tracebacks), then
``streamlit run app/main.py -- DIR`` runs as a child process bound to localhost unless told
otherwise. Ctrl-C (or SIGTERM) stops the server and exits 0.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from hseval import app
from hseval.core.errors import ConfigError, HsevalError, RunFormatError
from hseval.core.extras import check_installed

__all__ = ["register", "free_port", "streamlit_command", "app_entry", "cmd_dashboard"]

STARTUP_TIMEOUT_S = 60.0


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number in 1..65535, got {value}")
    return value


_port.bounds = (1, 65535)  # type: ignore[attr-defined]  # a TCP port's; the tests read them


def free_port(host: str = "127.0.0.1", port: int = 0) -> int:
    """``port`` if nobody listens on it at ``host``, else OSError; with ``port=0`` a port the OS
    picks. Checked before starting Streamlit so that a busy port is one clear line, and the
    health check cannot be answered by another server already on that port."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, port))
        return int(sock.getsockname()[1])


def app_entry() -> Path:
    """``app/main.py`` of the installed distribution (the ``app`` package ships next to ``hseval``)."""
    entry = Path(app.__file__).with_name("main.py")
    if entry.is_file():
        return entry
    raise HsevalError("the dashboard app (app/main.py) is not installed; reinstall hseval ('pip install -e .')")


def streamlit_command(folder: Path, *, host: str, port: int, entry: Path | None = None) -> list[str]:
    """The ``streamlit run`` command line: headless, no usage statistics, no file watcher (the
    app is not being edited), no developer toolbar (no "Deploy"), bound to ``host:port``; the
    script health check is on so that :func:`_warm_up` can run the app once before anyone opens it."""
    return [sys.executable, "-m", "streamlit", "run", str(entry or app_entry()),
            "--server.headless", "true", "--browser.gatherUsageStats", "false",
            "--server.fileWatcherType", "none", "--server.scriptHealthCheckEnabled", "true",
            "--client.toolbarMode", "minimal",
            "--server.address", host, "--server.port", str(port), "--", str(folder)]


def _wait_until_up(process: subprocess.Popen, url: str, timeout: float) -> None:
    """Poll Streamlit's health endpoint; fail with a one-line reason if the server dies first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise HsevalError(f"streamlit exited with code {process.returncode} before serving {url} "
                              "(is the port in use? see its output above)")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise HsevalError(f"streamlit did not answer at {url} within {timeout:.0f} s")


def _warm_up(url: str) -> None:
    """Run the app once in a bare session (Streamlit's script health check), so that the first
    browser to connect finds plotly and pandas imported and the folder read and cached: about a
    second less before the overview shows."""
    try:
        with urllib.request.urlopen(f"{url}/_stcore/script-health-check", timeout=STARTUP_TIMEOUT_S):
            pass
    except OSError:  # 503 when the app raised: the page itself will say why
        pass


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def cmd_dashboard(args: argparse.Namespace) -> int:
    from hseval.io.results import load_evaluation  # pandas: kept out of 'hseval --help'

    check_installed("streamlit", "the dashboard")
    folder = Path(args.dir).expanduser().resolve()
    evaluation = load_evaluation(folder)  # raises a one-line RunFormatError for a wrong folder
    if not evaluation.runs:  # a folder of damaged runs: nothing to show
        more = f" (and {len(evaluation.problems) - 1} more)" if len(evaluation.problems) > 1 else ""
        raise RunFormatError(f"{folder}: no readable evaluated run: {evaluation.problems[0]}{more}")
    for problem in evaluation.problems:
        print(f"hseval: warning: skipped {problem}", file=sys.stderr)
    try:
        port = free_port(args.host, args.port or 0)
    except OSError as exc:
        where = f"port {args.port} on {args.host}" if args.port else f"--host {args.host!r}"
        hint = "; choose another --port or leave it out" if args.port else ""
        raise ConfigError(f"cannot serve on {where} ({exc.strerror or exc}){hint}") from None
    host = "localhost" if args.host in ("0.0.0.0", "::") else (f"[{args.host}]" if ":" in args.host else args.host)
    url = f"http://{host}:{port}"
    env = {**os.environ, app.ENV_VAR: str(folder), app.SHOWN_VAR: args.dir}
    process = subprocess.Popen(streamlit_command(folder, host=args.host, port=port), env=env)
    # SIGTERM (a service manager, a test) stops the server the same way as Ctrl-C; and Ctrl-C works
    # even where the parent started us with SIGINT ignored (a background job of a script, some test
    # runners' workers), in which case Python would not have installed its handler
    in_main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, signal.default_int_handler) for sig in (signal.SIGINT, signal.SIGTERM)} \
        if in_main else {}
    try:
        _wait_until_up(process, url, STARTUP_TIMEOUT_S)
        _warm_up(url)
        print(f"hseval dashboard: {url}  ({len(evaluation.runs)} run(s) from {folder}; Ctrl-C stops it)", flush=True)
        code = process.wait()
        if code != 0:
            raise HsevalError(f"streamlit stopped with code {code}")
        return 0
    except KeyboardInterrupt:
        print("hseval dashboard: stopped", file=sys.stderr)
        return 0
    finally:
        _stop(process)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def register(commands: argparse._SubParsersAction) -> None:
    dashboard = commands.add_parser("dashboard", help="interactive dashboard of an evaluation folder (Streamlit)")
    dashboard.add_argument("dir", help="a folder written by 'hseval evaluate'")
    dashboard.add_argument("--port", type=_port, default=None, help="port to serve on (default: a free one)")
    dashboard.add_argument("--host", default="127.0.0.1",
                           help="address to bind (default 127.0.0.1: this machine only; 0.0.0.0 exposes it)")
    dashboard.set_defaults(func=cmd_dashboard)
