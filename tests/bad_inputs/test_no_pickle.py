"""No code path loads a pickle from a user's file.

1. An audit of the source (``hseval/``, ``train/``, ``app/``, by syntax tree): no ``pickle.load``,
   ``pickle.loads`` or ``Unpickler`` outside the restricted unpickler of ``hseval/data/pickles.py``;
   ``torch.load`` only with ``weights_only=True``; ``np.load`` only with ``allow_pickle=False``; no
   ``pd.read_pickle``, ``joblib``/``dill``/``cloudpickle``/``shelve``/``marshal`` loads; ``yaml.load``
   only with ``SafeLoader``; no ``eval``/``exec``.
2. Every loader of a user file, given a planted pickle whose unpickling would create a marker
   file (``os.system("touch ...")`` and ``open(..., "w")``): a clear hseval error, no marker.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import pickle
import re
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from hseval.core.errors import DataError, RunFormatError
from hseval.io import evaluation_format as eval_format
from tests.bad_inputs.builders import MARKER_NAME, Planted, PlantedSystem, planted_pickle, sealed
from tests.helpers import reseal

ROOT = Path(__file__).parents[2]
PACKAGES = ("hseval", "train", "app")
RESTRICTED_UNPICKLER = "hseval/data/pickles.py"
FORBIDDEN = {"pd.read_pickle", "pandas.read_pickle", "joblib.load", "dill.load", "dill.loads", "cloudpickle.load",
             "cloudpickle.loads", "shelve.open", "marshal.load", "marshal.loads", "yaml.unsafe_load",
             "yaml.full_load", "yaml.unsafe_load_all", "yaml.full_load_all", "eval", "exec", "__import__"}


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    return "?"


def keyword(call: ast.Call, name: str):
    for kw in call.keywords:
        if kw.arg == name:
            return ast.literal_eval(kw.value) if isinstance(kw.value, ast.Constant) else dotted(kw.value)
    return None


def audit(source: str, where: str) -> list[str]:
    """Every unsafe load in ``source`` as 'where:line: call'."""
    problems = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and where != RESTRICTED_UNPICKLER and \
                any(dotted(base).endswith("Unpickler") for base in node.bases):
            problems.append(f"{where}:{node.lineno}: subclass of {dotted(node.bases[0])}")
        if isinstance(node, ast.ImportFrom) and node.module in ("pickle", "dill", "cloudpickle", "joblib") and \
                where != RESTRICTED_UNPICKLER:
            problems.append(f"{where}:{node.lineno}: from {node.module} import ...")
        if not isinstance(node, ast.Call):
            continue
        name = dotted(node.func)
        bad = None
        if name in FORBIDDEN:
            bad = name
        elif name in ("pickle.load", "pickle.loads", "pickle.Unpickler", "pickle.Unpickler.load") or \
                name.endswith("Unpickler"):
            bad = name if where != RESTRICTED_UNPICKLER else None
        elif name == "torch.load" and keyword(node, "weights_only") is not True:
            bad = "torch.load without weights_only=True"
        elif name in ("np.load", "numpy.load") and keyword(node, "allow_pickle") is not False:
            bad = f"{name} without allow_pickle=False"
        elif name in ("yaml.load", "yaml.load_all") and keyword(node, "Loader") not in ("yaml.SafeLoader",
                                                                                         "yaml.CSafeLoader"):
            bad = f"{name} without SafeLoader"
        if bad:
            problems.append(f"{where}:{node.lineno}: {bad}")
    return problems


def sources() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def test_no_unsafe_load_in_the_code():
    problems = [p for path in sources() for p in audit(path.read_text(encoding="utf-8"),
                                                       str(path.relative_to(ROOT)))]
    assert len(sources()) > 50
    assert problems == []


def test_the_only_unpickler_is_the_restricted_one():
    text = (ROOT / RESTRICTED_UNPICKLER).read_text(encoding="utf-8")
    assert "def find_class" in text and "ALLOWED[(module, name)]" in text
    users = [str(p.relative_to(ROOT)) for p in sources() if "import pickle" in p.read_text(encoding="utf-8")]
    assert users == [RESTRICTED_UNPICKLER]


@pytest.mark.parametrize(("snippet", "found"), [
    ("import pickle\npickle.load(open(p, 'rb'))", "pickle.load"),
    ("import pickle\npickle.loads(b)", "pickle.loads"),
    ("torch.load(p)", "torch.load without weights_only=True"),
    ("torch.load(p, weights_only=False)", "torch.load without weights_only=True"),
    ("np.load(p)", "np.load without allow_pickle=False"),
    ("np.load(p, allow_pickle=True)", "np.load without allow_pickle=False"),
    ("pd.read_pickle(p)", "pd.read_pickle"),
    ("joblib.load(p)", "joblib.load"),
    ("yaml.load(text)", "yaml.load without SafeLoader"),
    ("yaml.load(text, Loader=yaml.Loader)", "yaml.load without SafeLoader"),
    ("eval(text)", "eval"),
    ("exec(text)", "exec"),
    ("class U(pickle.Unpickler): pass\nU(f).load()", "subclass of pickle.Unpickler"),
])
def test_the_audit_finds_each_unsafe_load(snippet, found):
    problems = audit(snippet, "x.py")
    assert problems and any(p.endswith(": " + found) or found in p for p in problems), problems


@pytest.mark.parametrize("snippet", ["torch.load(p, weights_only=True)", "np.load(p, allow_pickle=False)",
                                     "yaml.load(t, Loader=yaml.SafeLoader)", "yaml.safe_load(t)", "model.eval()"])
def test_the_audit_accepts_the_safe_forms(snippet):
    assert audit(snippet, "x.py") == []


# ------------------------------------------------------------------ planted pickles
@pytest.fixture
def marker(tmp_path) -> Path:
    path = tmp_path / MARKER_NAME
    yield path
    assert not path.exists(), "a planted pickle ran code"


def test_the_payload_really_runs_under_plain_pickle(tmp_path):
    """The control: ``pickle.loads`` of the payload creates the marker (so its absence below means
    the loaders did not unpickle it)."""
    target = tmp_path / MARKER_NAME
    pickle.loads(planted_pickle(target))
    assert target.exists()


def test_load_run_refuses_a_pickle_in_model_safetensors(good, tmp_path, marker):
    from hseval.io.run_format import load_run

    run = Path(shutil.copytree(good.run, tmp_path / "run"))
    (run / "model.safetensors").write_bytes(planted_pickle(marker))
    with pytest.raises(RunFormatError, match=r"does not match the checksum"):
        load_run(run)
    meta = json.loads((run / "run.json").read_text())
    meta["model_sha256"] = hashlib.sha256((run / "model.safetensors").read_bytes()).hexdigest()
    (run / "run.json").write_text(json.dumps(sealed(meta)))
    with pytest.raises(RunFormatError, match=r"model.safetensors: not a valid safetensors file"):
        load_run(run)


@pytest.mark.parametrize("how", ["torch.save", "pickle.dumps"])
def test_resume_refuses_a_pickle_in_train_state(good, tmp_path, marker, how):
    from hseval.io.run_format import STATE_FILE, load_train_state

    run = Path(shutil.copytree(good.run, tmp_path / "run"))
    if how == "torch.save":
        torch.save({"epoch": 1, "history": [], "rng": Planted(marker), "x": PlantedSystem(marker)}, run / STATE_FILE)
    else:
        (run / STATE_FILE).write_bytes(planted_pickle(marker))
    with pytest.raises(RunFormatError, match=r"train_state.pt: cannot be read as a training state \(UnpicklingError"):
        load_train_state(run)


@pytest.mark.parametrize("member", ["train", "test", "meta"])
def test_the_cifar_loader_refuses_a_planted_pickle(tmp_path, marker, member):
    from hseval.data import load_dataset
    from tests.fake_datasets import write_cifar100

    folder = write_cifar100(tmp_path / "data", per_class=(1, 1))
    (folder / member).write_bytes(planted_pickle(marker))
    with pytest.raises(DataError, match=rf"cifar-100-python/{member}: refused to load: the pickle asks for "
                                        r"posix\.system, which the CIFAR format never uses"):
        load_dataset("cifar100", tmp_path / "data")


def object_npz(marker: Path) -> bytes:
    """A real .npz whose arrays are object arrays: loading them needs pickle."""
    buffer = io.BytesIO()
    members = [m for m in eval_format.ARRAYS[eval_format.PREDICTIONS] if m != "targets"]  # every one: all are read
    np.savez(buffer, targets=np.array([PlantedSystem(marker)], dtype=object),
             **{member: np.array([Planted(marker)], dtype=object) for member in members})
    return buffer.getvalue()


@pytest.mark.parametrize("how", ["a pickle named .npz", "object arrays in a .npz", "a zip of pickles"])
def test_evaluation_files_replaced_by_pickles_are_refused(good, tmp_path, marker, how, capsys):
    from hseval.cli.main import main
    from hseval.io.results import load_evaluation

    folder = Path(shutil.copytree(good.evaluation, tmp_path / "eval"))
    if how == "a pickle named .npz":
        data = planted_pickle(marker)
    elif how == "object arrays in a .npz":
        data = object_npz(marker)
    else:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for member in eval_format.ARRAYS[eval_format.PREDICTIONS]:  # every member, so that the loader reads them
                archive.writestr(f"{member}.npy", planted_pickle(marker))
        data = buffer.getvalue()
    for name in ("predictions.npz", "embeddings.npz"):
        (folder / "run" / name).write_bytes(data)
    reseal(folder / "run")  # past the checksums, to the loader itself
    evaluation = load_evaluation(folder)
    assert not evaluation.runs and len(evaluation.problems) == 1
    assert re.search(r"run/predictions.npz: (not a readable .npz archive|'targets' must be a 1-d array of integers)",
                     evaluation.problems[0]), evaluation.problems
    assert main(["report", str(folder)]) == 2
    assert "no readable evaluated run" in capsys.readouterr().err
    assert not marker.exists()


def test_the_dashboard_with_planted_pickles_shows_an_error(good, tmp_path, marker, monkeypatch):
    from streamlit.testing.v1 import AppTest

    folder = Path(shutil.copytree(good.evaluation, tmp_path / "eval"))
    for name in ("predictions.npz", "embeddings.npz"):
        (folder / "run" / name).write_bytes(object_npz(marker))
    reseal(folder / "run")  # past the checksums, to the loader itself
    monkeypatch.setenv("HSEVAL_EVAL_DIR", str(folder))
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=60).run()
    at.switch_page("views/confusion.py").run()
    assert not at.exception, [e.message for e in at.exception]
    assert any(re.search(r"predictions.npz: (not a readable .npz archive|'targets' must be)", e.value)
               for e in at.error), [e.value for e in at.error]
    assert not marker.exists()
