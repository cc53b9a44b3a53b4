"""What ``train-all`` prints is in hseval's format and true to what happened: a note of the plan is
one ``hseval: warning:`` line on stderr (not "note: ..." on stdout), shown once the command starts
working; every value of a sweep is checked as ``--set`` checks it, before any work and whatever the
heads, and its error names --sweep; the last line says what was trained and what was kept; a
recipe's loader processes are fitted to the machine (said once), and no library warning reaches the
terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hseval.cli.main import main
from hseval.core.errors import ConfigError, HsevalWarning, warnings_as_lines
from hseval.core.perf import available_cores
from hseval.nn.heads import HEADS, list_heads
from tests.helpers import examples, image_folder

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--quiet", "--backbone", "small-cnn", "--set", "optim.epochs=1", "--set", "data.train_subset=64", "--set",
        "data.batch_size=32", "--set", "data.test_subset=50", "--set", "engine.threads=1"]
OPTIONS = sorted({(head, option) for head in list_heads() for option in HEADS.options(head)})
VALUES = ["abc", ".nan", ".inf", "-.inf", "-1", "0", "-0.5", "true", "[1]", "{a: 1}", "1e400", "0.5", "2", "100",
          "1e39"]


def _refused_by_set(head: str, option: str, value: str) -> bool:
    """The oracle: whether ``--set model.head_options.OPTION=VALUE`` is refused for ``head`` (the
    recipe's settings, then the head built with them, as training checks them)."""
    from hseval.train.checks import check_head_options
    from hseval.train.config import load_config

    try:
        check_head_options(load_config("fashion-mnist", [f"model.head={head}",
                                                         f"model.head_options.{option}={value}"]))
    except ConfigError:
        return True
    return False


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pick=st.sampled_from(OPTIONS), value=st.one_of(st.sampled_from(VALUES), st.floats().map(repr)),
       alone=st.booleans())
def test_every_sweep_value_is_checked_as_set_checks_it_whatever_the_heads(tmp_path, capsys, pick, value, alone):
    """On a head that takes the option, or on one that does not (then every head that takes it
    checks the value): refused before any work iff ``--set`` refuses it, in one line naming --sweep
    and not --set; a value it takes goes on to the data (here: none)."""
    head, option = pick
    heads = head if alone else next(h for h in list_heads() if option not in HEADS.options(h))
    out = tmp_path / "runs"
    capsys.readouterr()
    code = main(["train-all", "--heads", heads, "--sweep", f"model.head_options.{option}={value}",
                 "--data-root", str(tmp_path / "no-data"), "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and not out.exists(), err  # refused, or the data is missing
    takers = [head] if alone else [h for h in list_heads() if option in HEADS.options(h)]
    refused = any(_refused_by_set(h, option, value) for h in takers)
    assert ("--sweep" in err[0]) == refused and "--set" not in err[0], (value, err)


def test_each_value_of_a_sweep_is_checked_not_only_the_first(tmp_path, capsys):
    assert main(["train-all", "--heads", "plain", "--sweep", "model.head_options.radius_decay=0.5,abc", "--out",
                 str(tmp_path / "runs")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "hseval: error: head 'manifold': option 'radius_decay' must be a number, got 'abc' (given by --sweep "
        "model.head_options.radius_decay)"]


def test_a_sweep_of_an_option_no_head_has_is_refused(tmp_path, capsys):
    assert main(["train-all", "--heads", "plain", "--sweep", "model.head_options.radious=1,2", "--out",
                 str(tmp_path / "runs")]) == 2
    assert "--sweep model.head_options.radious: 'radious' is not an option of any head" in capsys.readouterr().err


def test_a_bad_sweep_value_of_another_setting_names_the_sweep(tmp_path, capsys):
    assert main(["train-all", "--heads", "plain", "--sweep", "optim.lr=0.1,abc", "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.strip() == "hseval: error: --sweep: optim.lr must be a number, got 'abc'"


def test_notes_on_stderr_and_a_summary_true_to_what_happened(fashion_like, tmp_path, capsys):
    argv = ["train-all", "--data-root", str(fashion_like), *TINY, "--heads", "plain", "--sweep",
            "model.head_options.radius_decay=0.5,0.9", "--out", str(tmp_path / "runs")]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == ["hseval: warning: --sweep model.head_options.radius_decay does not apply to "
                                         "plain (it has no option 'radius_decay'); training it once"]
    assert "note:" not in captured.out and captured.out.splitlines()[-1].startswith("trained 1 run under ")
    assert main([*argv, "--resume"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("trained 0 runs, kept 1 finished under ") and "wrote" not in last


def test_loader_processes_fit_the_machine_and_no_library_warning_is_printed(tmp_path):
    """The paper's ``data.workers=8`` on a machine of fewer CPUs: lowered to what this process may
    use, recorded, said once; torch's DataLoader warned at every loader (16 multi-line warnings on
    two cores). A subprocess: the real front door and the real terminal streams."""
    root, tree = image_folder(tmp_path)
    asked = max(8, available_cores() + 1)
    argv = ["train-all", "--dataset", "image-folder", "--data-root", str(root), "--hierarchy", str(tree), "--quiet",
            "--backbone", "small-cnn", "--heads", "plain,hierarchy", "--set", "optim.epochs=2", "--set",
            "data.batch_size=2", "--set", f"data.workers={asked}", "--out", str(tmp_path / "runs")]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"} | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "hseval", *argv], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    share = available_cores()
    assert done.stderr.splitlines() == [f"hseval: warning: data.workers={asked} lowered to {share}: {share} CPU(s) "
                                        "here (a lower data.workers is kept as given)"], done.stderr[-3000:]
    for head in ("plain", "hierarchy"):
        recorded = json.loads((tmp_path / "runs" / head / "run.json").read_text())["training"]["data"]["workers"]
        assert recorded == share


def test_warnings_as_lines_shows_hseval_warnings_once_and_no_library_warning(capsys, monkeypatch):
    monkeypatch.setattr(sys, "warnoptions", [])
    with warnings_as_lines():
        for _ in range(3):
            warnings.warn("a library speaking", UserWarning, stacklevel=1)
            warnings.warn("the radius is off", HsevalWarning, stacklevel=1)
    assert capsys.readouterr().err == "hseval: warning: the radius is off\n"
    monkeypatch.setattr(sys, "warnoptions", ["default"])  # python -W default: the user asked to see them
    with warnings_as_lines(), pytest.warns(UserWarning):
        warnings.warn("a library speaking", UserWarning, stacklevel=1)


@pytest.mark.parametrize(("head", "option"), [(h, o) for h in list_heads()
                                              for o in sorted({o for x in list_heads() for o in HEADS.options(x)})
                                              if o not in HEADS.options(h)][::7])
def test_a_head_option_the_head_does_not_take_is_refused_by_train(tmp_path, capsys, head, option):
    """The issue's case (nbdt given alpha trained, recorded alpha and built without it), for every
    head and option it lacks (a sample): one line naming the head's options, nothing written."""
    assert main(["train", "--head", head, "--set", f"model.head_options.{option}=1", *TINY,
                 "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"hseval: error: model.head_options.{option}: head {head!r} has no option {option!r} (its "
                          "options: ") and len(err.splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_train_all_keeps_an_option_for_the_heads_that_take_it_and_records_what_each_used(fashion_like, tmp_path,
                                                                                          capsys):
    from hseval.train.checks import head_options_for
    from hseval.train.config import load_config

    argv = ["train-all", "--heads", "plain,hxe", "--set", "model.head_options.alpha=0.5", "--set",
            f"data.root={fashion_like}", *TINY, "--out", str(tmp_path / "runs")]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert err.count("model.head_options.alpha applies to hxe; plain takes no such option and trains without it") == 1
    recorded = {h: json.loads((tmp_path / "runs" / h / "run.json").read_text())["training"]["model"]["head_options"]
                for h in ("plain", "hxe")}
    assert recorded == {"plain": {}, "hxe": {"alpha": 0.5}}
    assert main(["train-all", "--heads", "plain,nbdt", "--set", "model.head_options.alpha=0.5", *TINY, "--out",
                 str(tmp_path / "none")]) == 2
    assert "none of the heads trained here (plain, nbdt) takes it (hxe does)" in capsys.readouterr().err
    # the library records what the head used too: a recipe's options for other heads are not the run's
    config = load_config("fashion-mnist", ["model.head=nbdt", "model.head_options.alpha=0.5"])
    used, left = head_options_for(config)
    assert set(used.model.head_options) <= set(HEADS.options("nbdt")) and "alpha" in left
