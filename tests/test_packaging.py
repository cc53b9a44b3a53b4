"""What gets installed: every package under ``hseval``, nothing with a generic top-level name, and
commands that work from a folder holding a user's own ``train.py`` and ``app.py``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from hseval.tree.builders.wordnet import DEBIAN_WORDNET

ROOT = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
INSTALLED_AS = {"hseval": "hseval", "train": "hseval.train", "app": "hseval.app"}


def test_every_package_folder_is_installed_under_hseval():
    folders = {".".join((INSTALLED_AS[top], *init.parent.relative_to(ROOT / top).parts))
               for top in INSTALLED_AS for init in (ROOT / top).rglob("__init__.py")}
    assert set(SETUPTOOLS["packages"]) == folders
    assert {name.split(".")[0] for name in SETUPTOOLS["packages"]} == {"hseval"}
    assert SETUPTOOLS["package-dir"] == {"hseval.train": "train", "hseval.app": "app"}


HOSTILE = "import pathlib; pathlib.Path({marker!r}).write_text('ran'); raise SystemExit(97)\n"


@pytest.fixture
def hostile_folder(tmp_path) -> Path:
    """A user's project: its own ``train.py`` and ``app.py`` that leave a mark and exit 97 if run."""
    for name in ("train", "app"):
        (tmp_path / f"{name}.py").write_text(HOSTILE.format(marker=str(tmp_path / f"{name}-ran")))
    return tmp_path


@pytest.mark.slow  # a subprocess per case: the fast lane keeps units and contracts
@pytest.mark.parametrize("argv", [
    ["-m", "hseval", "--version"],
    ["-m", "hseval", "train", "--help"],
    ["-m", "hseval.train", "train-all", "--help"],  # what torchrun runs
    ["-m", "hseval", "data", "list"],
    ["-c", "from hseval.cli.dashboard import app_entry; print(app_entry())"],
    ["-c", "from hseval.train.config import list_recipes; print(len(list_recipes()))"],
])
def test_a_users_train_py_and_app_py_never_shadow_hseval(hostile_folder, argv):
    done = subprocess.run([sys.executable, *argv], cwd=hostile_folder, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not list(hostile_folder.glob("*-ran")), f"{argv} ran the user's own file"
    if "app_entry" in argv[-1]:
        assert Path(done.stdout.strip()).parent.name == "app" and hostile_folder not in Path(done.stdout).parents


@pytest.mark.slow  # seconds each: the fast lane keeps units and contracts
def test_the_recipes_are_found_from_a_users_folder(hostile_folder):
    """A command that reads a shipped recipe, from a folder with its own ``train.py``: refused for
    the bad value it names, not for a missing recipe or the user's file."""
    done = subprocess.run([sys.executable, "-m", "hseval", "train", "--recipe", "fashion-mnist", "--set",
                           "optim.epochs=0", "--out", "run"], cwd=hostile_folder, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "optim.epochs" in done.stderr, done.stderr
    assert not list(hostile_folder.glob("*-ran"))


BARE = """
import importlib.abc, sys
tried = set()
class Missing(importlib.abc.MetaPathFinder):  # what a bare 'pip install hseval' leaves out
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {missing!r}:
            tried.add(name.split(".")[0])
            raise ModuleNotFoundError(f"No module named {{name!r}}")
sys.meta_path.insert(0, Missing())
from hseval.cli.main import main
code = main(sys.argv[1:])
print("tried to import:", sorted(tried))
raise SystemExit(code)
"""
EXTRA_MODULES = {"streamlit", "umap", "openTSNE", "nltk", "numba", "pynndescent", "tensorboard"}


def _bare(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BARE.format(missing=EXTRA_MODULES), *argv], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def test_a_bare_install_trains_evaluates_and_reports(tmp_path, fashion_like):
    """Without the extras: training, evaluation with PCA and the report work; t-SNE, UMAP and the
    dashboard are refused in one line that names the extra to install."""
    steps = [("train", "--data-root", str(fashion_like), "--head", "riemann", "--quiet", "--set", "optim.epochs=1",
              "--set", "data.train_subset=64", "--set", "data.batch_size=32", "--out", "run"),
             ("evaluate", "run", "--data-root", str(fashion_like), "--projections", "pca", "--quiet", "--out", "eval"),
             ("report", "eval")]
    for argv in steps:
        done = _bare(*argv, cwd=tmp_path)
        # a command that needs no extra never reaches for one (not even to fall back quietly)
        assert done.returncode == 0 and "tried to import: []" in done.stdout, (argv, done.stdout, done.stderr)
    refused = [(("evaluate", "run", "--projections", "tsne", "--out", "eval2"), "projections"),
               (("evaluate", "run", "--projections", "umap", "--out", "eval2"), "projections"),
               (("dashboard", "eval"), "dashboard")]
    if DEBIAN_WORDNET.is_dir():  # WordNet's files are there; nltk, which reads them, is not
        refused.append((("hierarchy", "build", "tiny-imagenet", "--out", "tiny.txt"), "wordnet"))
    for argv, extra in refused:
        done = _bare(*argv, cwd=tmp_path)
        assert done.returncode == 2 and f"pip install 'hseval[{extra}]'" in done.stderr, (argv, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "eval2").exists()
