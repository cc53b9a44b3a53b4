"""README's figures are written by the scripts that measure or count them, never by hand.

Each figure sits in a ``<!-- NAME:start -->…<!-- NAME:end -->`` block (scripts/readme_blocks.py);
these tests check that every block has a script that writes it, that a measured figure says where,
when and how it was measured, that counted figures equal what they count, and the block writer.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from scripts import readme_blocks
from scripts.readme_blocks import block_names, read_block, write_block
from scripts.readme_tests import block_text, failed_elsewhere, outcome

ROOT = Path(__file__).resolve().parents[1]

# block -> (the script that writes it, whether it is a measurement that must say where and when)
WRITERS = {
    "demo-time": ("scripts/readme_demo.py", True),
    "test-suite": ("scripts/readme_tests.py", True),
    "fast-lane": ("scripts/readme_tests.py", True),
    "demo-table": ("scripts/readme_demo.py", True),
    "demo-report-size": ("scripts/readme_demo.py", False),  # a size of the demo that demo-table dates
    "bench-heads-cpu": ("bench/heads.py", True),
    "bench-train-step": ("bench/train_step.py", True),
    "bench-evaluate": ("bench/evaluate.py", True),
    "bench-metrics": ("bench/metrics.py", True),
    "bench-probe": ("bench/probe.py", True),
    "bench-scale": ("bench/scale.py", True),
    "bench-decisions": ("bench/decisions.py", True),
    "bench-predict": ("bench/predict.py", True),
    "budgets-table": ("scripts/readme_budgets.py", True),
    "bad-inputs-count": ("tests/bad_inputs/cases.py", False),
    "metrics-help": ("scripts/json_schemas.py", False),  # the metrics' help, from where they are defined
}
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def test_every_block_has_a_writer_that_writes_it():
    names = block_names(readme_blocks.README.read_text(encoding="utf-8"))
    assert len(names) == len(set(names)), "a block name appears twice"
    assert set(names) == set(WRITERS), "a README block without a writer here, or a writer without its block"
    for name, (script, _) in WRITERS.items():
        assert f'"{name}"' in (ROOT / script).read_text(encoding="utf-8"), f"{script} does not write {name}"


@pytest.mark.parametrize("name", [n for n, (_, measured) in WRITERS.items() if measured])
def test_a_measured_figure_says_where_when_and_how(name):
    text = read_block(name)
    script = WRITERS[name][0]
    assert DATE.search(text), f"{name}: no date"
    assert script in text, f"{name}: does not name {script}, the command that measures it again"
    assert re.search(rf"{re.escape(script)}[^`]*` on \S", text) or re.search(r" on \S.*\(\d+ threads", text), \
        f"{name}: no machine"


def test_the_catalogue_count_is_the_catalogue():
    from tests.bad_inputs.cases import CASES

    assert read_block("bad-inputs-count") == str(len(CASES))


def test_the_metrics_list_is_the_metrics_help():
    from scripts.json_schemas import metrics_list

    assert read_block("metrics-help").strip() == metrics_list().strip()


def test_the_test_count_is_this_suite(request):
    """Within 10 % of what this session collected, when the session is the whole suite."""
    config = request.config
    if config.args and [Path(a).resolve() for a in config.args] != [ROOT / "tests"] or config.option.keyword \
            or config.option.markexpr:
        pytest.skip("a partial run does not collect the whole suite")
    stated = int(re.match(r"([\d,]+) tests", read_block("test-suite")).group(1).replace(",", ""))
    collected = len(request.session.items)
    assert abs(stated - collected) <= 0.1 * collected, (stated, collected)


def test_write_block_replaces_only_the_block(tmp_path):
    readme = tmp_path / "README.md"
    original = ("# t\n\nIt takes <!-- time:start -->5 s<!-- time:end --> here.\n\n<!-- table:start -->\n| a |\n"
                "<!-- table:end -->\ntail ✓\n")
    readme.write_text(original, encoding="utf-8")
    write_block("time", "7.5 s", readme)
    write_block("table", "| b |\n|---|\n", readme)
    assert readme.read_text(encoding="utf-8") == ("# t\n\nIt takes <!-- time:start -->7.5 s<!-- time:end --> here.\n\n"
                                                  "<!-- table:start -->\n| b |\n|---|\n<!-- table:end -->\ntail ✓\n")
    assert read_block("time", readme) == "7.5 s"
    assert block_names(readme.read_text(encoding="utf-8")) == ["time", "table"]
    with pytest.raises(KeyError, match="0 blocks named 'missing'"):
        write_block("missing", "x", readme)
    readme.write_text(original + original, encoding="utf-8")
    with pytest.raises(KeyError, match="2 blocks named 'time'"):
        write_block("time", "x", readme)
    assert readme.read_text(encoding="utf-8") == original + original  # a refused write changes nothing
    assert [p.name for p in tmp_path.iterdir()] == ["README.md"]  # and leaves no temporary behind


def test_the_test_suite_line_is_read_from_pytest(monkeypatch):
    monkeypatch.setattr(readme_blocks, "_quiet_loads", [0.12])  # as after a quiet measurement
    monkeypatch.setattr(readme_blocks, "busy", lambda: None)
    monkeypatch.setattr(readme_blocks.os, "getloadavg", lambda: (0.1, 0.0, 0.0))
    counts = outcome("===== 1210 passed, 5 skipped, 2 xfailed, 3 warnings in 431.20s (0:07:11) =====")
    assert counts == {"passed": 1210, "skipped": 5, "xfailed": 2}
    assert outcome("1 failed, 9 passed, 2 errors in 3.1s") == {"failed": 1, "passed": 9, "error": 2}
    text = block_text(counts, 431.2, "python scripts/readme_tests.py")
    assert text.startswith("1,217 tests in 7.2 minutes") and DATE.search(text) and "load 0.12" in text


def test_a_figure_is_dated_only_after_a_quiet_measurement(monkeypatch):
    """No stamp without a quiet check first; a machine busy before the measurement, or when its
    figure is stamped (after it), refuses the figure; the stamp gives the highest load seen."""
    monkeypatch.setattr(readme_blocks, "_quiet_loads", [])
    with pytest.raises(SystemExit, match="call require_quiet"):
        readme_blocks.stamp("python x.py")
    monkeypatch.setattr(readme_blocks, "busy", lambda: "another process runs pytest (pid 7: pytest -q)")
    with pytest.raises(SystemExit, match="busy before the measurement .another process runs pytest"):
        readme_blocks.require_quiet("python x.py")
    # after: the measurement's own load may settle (one-minute average), other work may not
    high = "load average 1.50 on 2 cores (a README figure needs below 0.60)"
    slept = []
    monkeypatch.setattr(readme_blocks.time, "sleep", slept.append)
    monkeypatch.setattr(readme_blocks, "_other_work", lambda: None)
    states = iter([None, high, high, None])
    monkeypatch.setattr(readme_blocks, "busy", lambda: next(states))
    readme_blocks.require_quiet("python x.py")
    readme_blocks.stamp("python x.py")  # settled after two waits
    assert len(slept) == 2
    monkeypatch.setattr(readme_blocks, "SETTLE_SECONDS", 0)
    states = iter([None, high])
    monkeypatch.setattr(readme_blocks, "busy", lambda: next(states))
    readme_blocks.require_quiet("python x.py")
    with pytest.raises(SystemExit, match="busy after the measurement .load average 1.50"):
        readme_blocks.stamp("python x.py")
    monkeypatch.setattr(readme_blocks, "SETTLE_SECONDS", 240)
    monkeypatch.setattr(readme_blocks, "_other_work", lambda: "another process runs hseval (pid 8: hseval demo)")
    states = iter([None, "another process runs hseval (pid 8: hseval demo)"])
    monkeypatch.setattr(readme_blocks, "busy", lambda: next(states))
    readme_blocks.require_quiet("python x.py")
    with pytest.raises(SystemExit, match="busy after the measurement .another process runs hseval"):
        readme_blocks.stamp("python x.py")  # no wait for another process's work
    monkeypatch.setattr(readme_blocks, "_quiet_loads", [])
    loads = iter([0.05, 0.21])
    monkeypatch.setattr(readme_blocks, "_quiet_loads", [])
    monkeypatch.setattr(readme_blocks, "busy", lambda: None)
    monkeypatch.setattr(readme_blocks.os, "getloadavg", lambda: (next(loads), 0.0, 0.0))
    readme_blocks.require_quiet("python x.py")
    assert "load 0.21, " in readme_blocks.stamp("python x.py")


def test_other_processes_are_seen_but_not_this_one_or_its_parents():
    import subprocess
    import sys

    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "hseval-readme-marker"])
    try:
        # the child's command line is this process's until it has exec'd: look until it shows (10 s at most)
        for _ in range(100):
            seen = [pid for pid, _ in readme_blocks._processes_running(("hseval-readme-marker",))]
            if other.pid in seen:
                break
            time.sleep(0.1)
        assert other.pid in seen
    finally:
        other.kill()
        other.wait()
    assert os.getpid() not in [pid for pid, _ in readme_blocks._processes_running(("pytest", "python"))]


def test_only_its_own_figure_tests_may_fail_before_the_count_is_written():
    output = ("FAILED tests/test_readme_figures.py::test_the_test_count_is_this_suite - AttributeError\n"
              "FAILED tests/test_readme_figures.py::test_a_measured_figure_says_where_when_and_how[test-suite]\n")
    assert failed_elsewhere(output) == []
    assert failed_elsewhere(output + "ERROR tests/test_cli.py::test_x - OSError\n") == ["tests/test_cli.py::test_x"]
