"""Faults while a folder is replaced: ``kill -9`` at random points of a re-export and of an
``import --force`` over an imported run. After each kill the folder is the previous one, whole
(every file its marker records, with the recorded SHA-256 where it records one), or the new one;
the next command succeeds and leaves no staging folder behind."""

from __future__ import annotations

import random
import shutil
import time
from pathlib import Path

import pytest

from hseval.cli.main import main
from hseval.core.fileio import sha256
from hseval.io import folders as ownership
from hseval.io.run_format import load_run
from tests.bad_inputs.cases import fashion_tree_file, foreign_cnn
from tests.bad_inputs.test_faults import KILL_SEED, hseval_process, kill_9, seconds_to_run

KILLS = 3


def whole(folder: Path) -> bool:
    """Whether ``folder`` holds exactly what its marker records (and each hash recorded matches)."""
    marker = ownership.read_marker(folder)
    files = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and
             p.name not in (ownership.MARKER, ownership.LOCK)}
    return files == set(marker.files) and all(h is None or sha256(folder / f) == h for f, h in marker.files.items())


def commands(good, tmp: Path) -> dict[str, tuple[Path, list[str]]]:
    """The folder each command replaces, and the command."""
    evaluation = Path(shutil.copytree(good.evaluation, tmp / "eval"))
    checkpoint, tree = foreign_cnn(tmp, good), fashion_tree_file(tmp / "tree.json")
    return {"export": (tmp / "tb", ["export", str(evaluation), "--to", "tensorboard", str(tmp / "tb")]),
            "import --force": (tmp / "run", ["import", str(checkpoint), "--backbone", "small-cnn", "--head", "plain",
                                             "--hierarchy", str(tree), "--dataset", "fashion-mnist", "--force",
                                             "--out", str(tmp / "run")])}


@pytest.mark.parametrize("command", ["export", "import --force"])
def test_kill_9_while_a_folder_is_replaced_keeps_the_old_or_the_new_folder(command, good, tmp_path, capsys):
    folder, argv = commands(good, tmp_path)[command]
    assert main(argv) == 0
    assert whole(folder)
    duration = seconds_to_run(*argv)
    rng = random.Random(KILL_SEED + 3)
    for _ in range(KILLS):
        victim = hseval_process(*argv)
        time.sleep(rng.uniform(0.3, 1.0) * duration)
        kill_9(victim)
        ownership.recover(tmp_path, folder.name)  # a kill between the two renames: what the next writer does first
        assert whole(folder), sorted(p.name for p in folder.iterdir())
        if command == "import --force":
            load_run(folder)
    assert main(argv) == 0  # the next writer puts right what the killed ones left
    assert whole(folder) and sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
