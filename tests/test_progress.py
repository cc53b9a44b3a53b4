"""Progress bars draw only on a terminal: in a log file or a pipe the commands' own lines are the
record, not thousands of carriage-return redraws."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

from hseval.cli.main import main
from hseval.core.progress import bar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_draws_on_a_terminal_only(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert bar(total=3).disable
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    shown = bar(total=3, file=terminal, mininterval=0)
    assert not shown.disable
    shown.update(3)
    shown.close()
    assert "\r" in terminal.getvalue() and "3/3" in terminal.getvalue()
    assert bar(total=3, enabled=False).disable  # --quiet wins


def test_evaluate_into_a_pipe_writes_lines_not_redraws(evaluated, tmp_path, capsys):
    metrics = json.loads((evaluated / "plain" / "metrics.json").read_text())
    run, root = Path(metrics["run_path"]), metrics["training"]["data"]["root"]
    assert main(["evaluate", str(run), "--data-root", root, "--projections", "none", "--out", str(tmp_path / "e")]) == 0
    out, err = capsys.readouterr()
    assert "\r" not in out + err
    assert "leaf top-1" in out  # the one line per run
