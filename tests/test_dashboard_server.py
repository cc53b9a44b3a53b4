"""``hseval dashboard`` as a server process: Ctrl-C stops it with exit 0 even when it was started
with SIGINT ignored (a background job of a script, a test runner's worker), where Python installs
no handler of its own and the server used to ignore Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_ctrl_c_stops_a_dashboard_started_with_sigint_ignored(evaluated):
    from hseval.cli.dashboard import free_port

    argv = [sys.executable, "-m", "hseval", "dashboard", str(evaluated), "--port", str(free_port())]
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        deadline = time.monotonic() + 90
        for line in process.stdout:  # up when it prints its address
            if line.startswith("hseval dashboard: http") or time.monotonic() > deadline:
                break
        assert process.poll() is None, "the dashboard exited before it was up"
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
