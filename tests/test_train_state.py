"""``train_state.pt`` is a typed record (:class:`hseval.io.run_format.TrainState`): a state whose
``history`` or other entry has the wrong type is refused in one line that names the file and the
entry, before anything resumes (it used to reach the writer as an internal AttributeError)."""

from __future__ import annotations

import copy
import shutil

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hseval.cli.main import main
from hseval.core.errors import RunFormatError
from hseval.io.run_format import STATE_FILE, load_train_state
from tests.helpers import examples, interrupted_after_last_epoch

SETTINGS = ["--quiet", "--set", "optim.milestones=[5]", "--set", "data.train_subset=64", "--set", "data.batch_size=32",
            "--set", "engine.threads=1"]


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory, fashion_like):
    """A run of two epochs interrupted after the first: its training state (with the weights, as
    after each epoch: a finished run's state names its model.safetensors instead) and no run.json."""
    run = tmp_path_factory.mktemp("state") / "run"
    assert main(["train", "--data-root", str(fashion_like), *SETTINGS, "--set", "optim.epochs=1", "--out",
                 str(run)]) == 0
    return interrupted_after_last_epoch(run)


def _argv(fashion_like, run) -> list[str]:
    return ["train", "--data-root", str(fashion_like), *SETTINGS, "--set", "optim.epochs=2", "--out", str(run),
            "--resume"]


DAMAGE = {"history entry a string": lambda s: s["history"].__setitem__(0, "x"),
          "history entry a number": lambda s: s["history"].__setitem__(0, 5),
          "history entry null": lambda s: s["history"].__setitem__(0, None),
          "history entry without epoch": lambda s: s["history"].__setitem__(0, {"a": 1}),
          "history epoch a string": lambda s: s["history"][0].__setitem__("epoch", "x"),
          "history a string": lambda s: s.__setitem__("history", "x"),
          "history empty": lambda s: s.__setitem__("history", []),
          "history behind the epoch": lambda s: s.__setitem__("epoch", 2),
          "epoch zero": lambda s: s.__setitem__("epoch", 0),
          "config a list": lambda s: s.__setitem__("config", [1]),
          "model a number": lambda s: s.__setitem__("model", 5),
          "no optimizers": lambda s: s.pop("optimizers")}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_training_state_is_one_line_before_resuming(interrupted, fashion_like, tmp_path, capsys, damage):
    run = shutil.copytree(interrupted, tmp_path / "run")
    state = torch.load(run / STATE_FILE, weights_only=True)
    DAMAGE[damage](state)
    torch.save(state, run / STATE_FILE)
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    capsys.readouterr()
    assert main(_argv(fashion_like, run)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{run / STATE_FILE}: " in err and "internal error" not in err, err
    assert err.endswith("remove it to restart training from the beginning"), err
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before


def test_the_intact_state_resumes(interrupted, fashion_like, tmp_path):
    run = shutil.copytree(interrupted, tmp_path / "run")
    assert main(_argv(fashion_like, run)) == 0
    assert load_train_state(run)["epoch"] == 2


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=6)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.sampled_from(["epoch", "history", "history.0", "history.0.epoch", "history.0.test_acc",
                              "history.0.test_superclass_acc", "config", "rng"]), value=JSON)
def test_any_value_anywhere_is_read_or_refused_in_one_line(interrupted, tmp_path, where, value):
    state = torch.load(interrupted / STATE_FILE, weights_only=True)
    target, *path = where.split(".")
    holder, key = state, target
    for part in path:
        holder, key = holder[key], int(part) if part.isdigit() else part
    holder[key] = copy.deepcopy(value)
    torch.save(state, tmp_path / STATE_FILE)
    try:
        loaded = load_train_state(tmp_path)
    except RunFormatError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(tmp_path / STATE_FILE)), str(exc)
        return
    assert loaded["history"][-1]["epoch"] == loaded["epoch"] >= 1
