"""The command line: hierarchy stats/convert/show, one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hseval.cli.main import main
from hseval.tree import read_hierarchy
from tests.helpers import FIXTURES

FASHION = str(Path(__file__).parents[1] / "hseval" / "tree" / "builders" / "data" / "fashion_mnist.txt")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_stats_json_has_exactly_the_documented_keys(capsys):
    code, out, _ = run(capsys, "hierarchy", "stats", FASHION, "--json")
    assert code == 0
    assert json.loads(out) == {"num_leaves": 10, "num_nodes": 13, "max_depth": 3, "nodes_per_depth": [3, 6, 4]}


def test_stats_text(capsys):
    code, out, _ = run(capsys, "hierarchy", "stats", str(FIXTURES / "hierarchies" / "imagenet_isa.txt"))
    assert code == 0 and "num_leaves: 1000" in out and "num_nodes: 1371" in out


def test_convert_and_show(capsys, tmp_path):
    out_file = tmp_path / "fm.json"
    code, out, _ = run(capsys, "hierarchy", "convert", FASHION, str(out_file), "--to", "nbdt")
    assert code == 0 and "13 nodes" in out
    assert read_hierarchy(out_file).stats()["num_nodes"] == 13
    code, out, _ = run(capsys, "hierarchy", "show", str(out_file))
    assert code == 0
    assert out.splitlines()[0] == "root" and "│   └── tops  (4 classes)" in out and "└── Ankle boot" in out


def test_convert_can_merge_chains(capsys, tmp_path):
    src = tmp_path / "chain.txt"
    src.write_text("a/b/x\na/b/y\nz\n")
    code, _, _ = run(capsys, "hierarchy", "convert", str(src), str(tmp_path / "out.txt"), "--to", "pairs",
                     "--merge-chains")
    assert code == 0 and read_hierarchy(tmp_path / "out.txt").num_nodes == 4


@pytest.mark.parametrize(("argv", "message"), [
    (["nope"], r"^hseval: error: argument COMMAND: invalid choice: 'nope'"),
    (["hierarchy", "stats"], r"^hseval: error: the following arguments are required: file"),
    (["hierarchy", "stats", "missing.txt"], r"^hseval: error: missing.txt: no such file$"),
    (["hierarchy", "stats", FASHION, "--format", "xml"], r"^hseval: error: argument --format: invalid choice"),
    (["hierarchy", "show", FASHION, "--max-depth", "-1"], r"argument --max-depth: expected a positive integer"),
    (["hierarchy", "convert", FASHION, "x.txt", "--to", "isa"], r"contains whitespace; use --to pairs"),
])
def test_user_errors_are_one_line_exit_2(capsys, argv, message):
    import re

    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and re.search(message, err.strip())


def test_help_builds_every_parser_without_a_heavy_package():
    heavy = {"torch", "torchvision", "geoopt", "sklearn", "pandas", "plotly", "safetensors", "PIL", "yaml", "streamlit"}
    code = ("import sys; from hseval.cli.main import build_parser; build_parser().format_help(); "
            "print(*sorted({m.split('.')[0] for m in sys.modules}), sep='\\n')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not heavy & set(done.stdout.split())


def test_only_the_commands_that_run_a_model_tune_the_allocator(monkeypatch, capsys, tmp_path):
    calls = []
    monkeypatch.setattr("hseval.cli.main.tune_malloc", lambda: calls.append(True))
    assert main(["hierarchy", "stats", FASHION]) == 0 and not calls
    assert main(["evaluate", "--out", str(tmp_path / "eval")]) == 2 and calls == [True]  # no run: refused after it


def test_console_script_entry_point_runs(tmp_path):
    result = subprocess.run([sys.executable, "-m", "hseval", "hierarchy", "stats", "nothing.txt"],
                            capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == "hseval: error: nothing.txt: no such file"
    assert "Traceback" not in result.stderr


def test_an_unexpected_error_is_one_line_with_a_log_and_exit_1(tmp_path, monkeypatch, capsys):
    """A bug shows one line that says so and names the log holding the traceback; never a bare traceback."""
    from hseval.cli import hierarchy

    def boom(args):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setenv("HSEVAL_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setattr(hierarchy, "cmd_stats", boom)
    tree = tmp_path / "t.txt"
    tree.write_text("a/x\n")
    assert main(["hierarchy", "stats", str(tree)]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hseval: internal error (ZeroDivisionError: division by zero); "
                                                   "this is a bug in hseval, the traceback is in "), lines
    log = Path(lines[0].split("the traceback is in ", 1)[1].split("; please report it")[0])
    assert log.parent == tmp_path / "logs"
    text = log.read_text()
    assert "command: hseval hierarchy stats" in text and "Traceback" in text and "ZeroDivisionError" in text


def test_an_os_error_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    import errno
    import os

    from hseval.cli import hierarchy

    def full(args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "x.txt"))

    monkeypatch.setattr(hierarchy, "cmd_stats", full)
    assert main(["hierarchy", "stats", "whatever"]) == 2
    assert capsys.readouterr().err.strip() == (f"hseval: error: {tmp_path / 'x.txt'}: No space left on device; free "
                                               "some space and run the command again (finished files are kept)")


def test_a_device_this_machine_lacks_is_refused_before_any_work(tmp_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    assert main(["evaluate", str(tmp_path / "nothing"), "--out", str(tmp_path / "e"), "--device", "cuda"]) == 2
    assert capsys.readouterr().err.strip() == ("hseval: error: --device=cuda but this machine has no CUDA device; use "
                                               "--device=cpu or auto")
    assert main(["evaluate", str(tmp_path / "nothing"), "--out", str(tmp_path / "e"), "--device", "gpu0"]) == 2
    assert "--device='gpu0' is not a device; use auto, cpu, cuda or cuda:N" in capsys.readouterr().err
    assert not (tmp_path / "e").exists()
