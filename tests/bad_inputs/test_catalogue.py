"""Every row of the bad-input catalogue (``README.md`` here, generated from ``cases.py``): the real
command line on the bad input exits with code 2, prints exactly one line ``hseval: error: ...``
matching the pinned message, no traceback, runs no planted code and writes nothing."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hseval.cli.main import main
from tests.bad_inputs.advice import check_advice
from tests.bad_inputs.builders import MARKER_NAME
from tests.bad_inputs.cases import CASES, readme_table, table

ROOT = Path(__file__).parents[2]
PREFIX = "hseval: error: "


def snapshot(folder: Path) -> dict[str, tuple]:
    """Every file (size, mtime, SHA-256) and folder below ``folder``."""
    out: dict[str, tuple] = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_dir():
            out[rel] = ("dir",)
        else:
            stat = path.stat()
            out[rel] = (stat.st_size, stat.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest())
    return out


def run_cli(argv: list[str], *, in_subprocess: bool, capsys) -> tuple[int, str]:
    if not in_subprocess:
        code = main(argv)
        return code, capsys.readouterr().err
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-m", "hseval", *argv], env=env, capture_output=True, text=True,
                          timeout=120)
    return done.returncode, done.stderr


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_gives_one_line_and_writes_nothing(case, good, tmp_path, capsys):
    folder = tmp_path / "case"
    folder.mkdir()
    argv = case.build(folder, good)
    capsys.readouterr()
    before = snapshot(folder)
    code, err = run_cli(argv, in_subprocess=case.subprocess, capsys=capsys)
    lines = err.strip().splitlines()
    assert code == 2, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert len(lines) == 1 and lines[0].startswith(PREFIX), err[-3000:]
    assert case.pattern().search(lines[0][len(PREFIX):]), f"\n  got:      {lines[0]}\n  expected: {case.expect}"
    check_advice(argv, lines[0][len(PREFIX):])  # the printed line names only options its command has
    assert not (folder / MARKER_NAME).exists(), "a planted pickle ran"
    assert snapshot(folder) == before, "the command wrote or changed files"


def test_readme_table_equals_the_cases():
    assert readme_table() == table(), "run 'python -m tests.bad_inputs.cases' to regenerate README.md"


def test_the_catalogue_covers_every_area():
    areas = [c.area for c in CASES]
    assert len(CASES) >= 40 and len({c.id for c in CASES}) == len(CASES)
    assert {"hierarchy", "run", "data", "cli", "dashboard"} <= set(areas)
    assert min(areas.count(a) for a in ("hierarchy", "run", "data", "cli")) >= 8


def test_the_app_on_a_folder_of_garbage_shows_an_error(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from tests.bad_inputs.cases import garbage_folder

    monkeypatch.setenv("HSEVAL_EVAL_DIR", str(garbage_folder(tmp_path)))
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=60).run()
    assert not at.exception, [e.message for e in at.exception]
    messages = [e.value for e in at.error]
    assert any("none of its runs could be read" in m for m in messages), messages
    for run in ("plain", "riemann", "multitask"):  # each damaged run is named with its reason
        assert any(f"garbage/{run}/" in m for m in messages), (run, messages)
