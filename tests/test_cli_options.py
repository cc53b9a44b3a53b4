"""Every option a command takes is one it uses: an option the chosen mode does not use is refused
in one line (an option ignored in silence is a value the user believes was used), and every piece
of advice a command prints names an option that command has."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

import numpy as np
import pytest

from hseval.cli import evaluate as evaluate_cli
from hseval.cli.main import build_parser, main
from hseval.train.config import TrainConfig, flatten_settings

ROOT = Path(__file__).parents[1]
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _leaf_parsers(parser: argparse.ArgumentParser, prog: str = "hseval"):
    """(command, parser) of every command that runs something (no sub-commands below it)."""
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not actions:
        yield prog, parser
        return
    for name, sub in actions[0].choices.items():
        yield from _leaf_parsers(sub, f"{prog} {name}")


COMMANDS = dict(_leaf_parsers(build_parser()))


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings}


def _given(parser: argparse.ArgumentParser, dest: str) -> list[str]:
    """The option of ``dest`` on a command line, with a value its type accepts."""
    action = next(a for a in parser._actions if a.dest == dest)
    if action.nargs == 0:
        return [action.option_strings[0]]
    value = action.choices[0] if action.choices else "1" if action.type is not None else "somewhere"
    return [action.option_strings[0], str(value)]


# ---------------------------------------------------------------------- options a mode does not use
EVALUATE = COMMANDS["hseval evaluate"]
SHARED = {"runs", "out", "projections", "max_points", "predictions", "model", "help", "func", "memory_advice",
          "rules"}
MODES = {"run folders": ["RUN"], "--predictions": ["--predictions", "p.npz", "--hierarchy", "tree.txt"],
         "--model": ["--model", "torchvision:resnet18", "--weights", "w.pt", "--dataset", "image-folder"]}
ALL_MODES = {d for options in evaluate_cli.MODES.values() for d in options}
UNUSED = [(mode, dest) for mode in MODES for dest in sorted(ALL_MODES - set(evaluate_cli.MODES[mode]))]


def test_every_option_of_evaluate_belongs_to_a_mode_or_to_all():
    from hseval.cli.data import CLI_OPTIONS

    dests = {a.dest for a in EVALUATE._actions} | set(EVALUATE._defaults)
    assert dests == ALL_MODES | SHARED, dests ^ (ALL_MODES | SHARED)
    assert set(CLI_OPTIONS) <= set(evaluate_cli.MODEL_OPTIONS)  # every dataset option reaches --model's loader


@pytest.mark.parametrize(("mode", "dest"), UNUSED, ids=[f"{m}:{d}" for m, d in UNUSED])
def test_an_option_the_mode_does_not_use_is_refused(tmp_path, capsys, monkeypatch, mode, dest):
    monkeypatch.chdir(tmp_path)
    given = _given(EVALUATE, dest)
    assert main(["evaluate", *MODES[mode], *given, "--out", "ev"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"hseval: error: {given[0]} applies only "), err
    assert not (tmp_path / "ev").exists()


def test_the_run_options_given_with_predictions_are_refused_not_ignored(tmp_path, capsys):
    """The issue's case: --split train --data-root X --device cuda:7 with --predictions exited 0 and
    recorded split 'test'."""
    tree = tmp_path / "tree.txt"
    tree.write_text("a/x\na/y\nb/z\n")
    np.savez(tmp_path / "p.npz", targets=np.array([0, 1, 2]), logits=np.eye(3) * 4)
    argv = ["evaluate", "--predictions", str(tmp_path / "p.npz"), "--hierarchy", str(tree), "--projections", "none",
            "--out", str(tmp_path / "ev")]
    extra = ["--split", "train", "--data-root", "X", "--device", "cuda:7"]
    assert main([*argv, *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(r"--(split|data-root|device) applies only to run folders", err)
    assert not (tmp_path / "ev").exists()
    assert main(argv) == 0  # the same command without them


# ---------------------------------------------------------------------- advice names the command's options
def _settable(key: str) -> bool:
    keys = {k for k, _ in flatten_settings(TrainConfig().model_dump())}
    return key in keys or key.startswith("model.head_options.")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_out_of_memory_advice_names_options_of_the_command(command):
    parser = COMMANDS[command]
    advice = parser._defaults.get("memory_advice") or ""
    assert set(OPTION.findall(advice)) <= _options(parser), (command, advice)
    for key in re.findall(r"--set ([\w.]+)=", advice):
        assert _settable(key), (command, key)


def test_evaluate_out_of_memory_is_one_line_naming_its_own_option(monkeypatch, capsys, tmp_path):
    """evaluate used to be told to '--set data.eval_batch_size=...', an option it does not have."""
    import torch

    import hseval.evaluation.runs

    for error in (MemoryError(), torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")):
        def fail(*args, error=error, **kwargs):
            raise error

        monkeypatch.setattr(hseval.evaluation.runs, "evaluate_runs", fail)
        assert main(["evaluate", "RUN", "--out", str(tmp_path / "ev")]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "out of memory" in err and "--batch-size" in err, err
        assert "--set" not in err


def _command_strings() -> dict[str, list[str]]:
    """The text of every string in each ``cmd_*`` function of hseval/cli, by function name."""
    out: dict[str, list[str]] = {}
    for path in (ROOT / "hseval" / "cli").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("cmd_"):
                out[node.name] = [n.value for n in ast.walk(node)
                                  if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return out


def test_every_option_a_command_names_in_its_messages_is_its_own():
    """Each option named in the strings of a command's function ('pass --force', '--hierarchy
    applies only ...') is an option of every command that runs that function; a 'hseval X ...'
    example in a message is another command's, checked against that one (and '--logdir', which no
    hseval command has, another program's)."""
    strings = _command_strings()
    ours = set().union(*map(_options, COMMANDS.values()))
    checked = 0
    for command, parser in COMMANDS.items():
        func = parser._defaults.get("func")
        if func is None:
            continue
        for text in strings.get(func.__name__, []):
            for example in re.findall(r"hseval ([a-z-]+(?: [a-z-]+)?)([^'\"]*)", text):
                words = example[0].split()
                name = next((c for c in (f"hseval {' '.join(words)}", f"hseval {words[0]}") if c in COMMANDS), None)
                if name is not None:
                    assert set(OPTION.findall(example[1])) <= _options(COMMANDS[name]), (name, text)
            own = set(OPTION.findall(re.sub(r"hseval [a-z-]+[^'\"]*", "", text))) & ours
            assert own <= _options(parser), (command, text)
            checked += len(own)
    assert checked >= 10  # the scan finds the options the commands do name
