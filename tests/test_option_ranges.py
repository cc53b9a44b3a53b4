"""Every numeric option of ``train-all`` (its launchers' ``--slurm-*``) is range-checked where it
enters, by its argparse type: a value no one could mean (negative, zero for a count, nan, infinity,
more digits than a C int holds) is one line naming the option, and a value taken reaches the sbatch
script as a number Slurm reads (``--slurm-mem -4`` used to print ``--mem=-4GB``, ``nan`` too)."""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hseval.cli.main import UsageError, build_parser, main
from tests.helpers import examples

pytest.importorskip("submitit")

PROPERTY = settings(max_examples=examples(200), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
HOSTILE = ["-4", "-1", "0", "-0", "0.0", "nan", "-nan", "NaN", "inf", "-inf", "Infinity", "1e400", "1e-400", "1e309",
           "9" * 5000, "-" + "9" * 5000, "2147483648", "4294967296", "1e6", "1000001", "0x10", "1_000", "", " ", "abc",
           "1.5", "0.0001", "1e-300"]
values = st.one_of(st.sampled_from(HOSTILE), st.integers(-2**70, 2**70).map(str),
                   st.floats(allow_nan=True, allow_infinity=True).map(repr), st.text(max_size=8))


def _train_all() -> argparse.ArgumentParser:
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return commands.choices["train-all"]


NUMERIC = [action for action in _train_all()._actions if action.type is not None]
BASE = ["train-all", "--heads", "plain", "--launcher", "slurm", "--dry-run", "--out", "runs"]


def test_every_numeric_option_declares_finite_bounds_and_zero_only_where_it_means_something():
    assert {a.option_strings[0] for a in NUMERIC} >= {"--slurm-gpus-per-run", "--slurm-cpus-per-run", "--slurm-time",
                                                      "--slurm-mem", "--slurm-parallel"}
    for action in NUMERIC:
        low, high = action.type.bounds
        assert math.isfinite(low) and math.isfinite(high) and 0 <= low < high <= 2**32, action.dest
    # 0 GPUs: a CPU job; no other count, time or memory can be 0
    assert [a.dest for a in NUMERIC if a.type.bounds[0] <= 0] == ["slurm_gpus_per_run"]


def _sbatch_numbers(args: argparse.Namespace) -> dict[str, str]:
    from hseval.cli.train import _slurm_settings
    from hseval.train.slurm import sbatch_script

    script = sbatch_script(3, _slurm_settings(args), Path("/runs/jobs/%j"))
    return dict(re.findall(r"^#SBATCH --(gpus-per-node|cpus-per-task|time|mem|array)=(.*)$", script, re.M))


@pytest.mark.parametrize("option", [a.option_strings[0] for a in NUMERIC])
@PROPERTY
@given(text=values)
def test_a_value_is_refused_naming_the_option_or_reaches_sbatch_as_a_number_slurm_reads(option, text):
    action = next(a for a in NUMERIC if a.option_strings[0] == option)
    low, high = action.type.bounds
    try:
        args = build_parser().parse_args([*BASE, f"{option}={text}"])
    except UsageError as exc:
        message = str(exc)
        assert "\n" not in message and message.startswith(f"argument {option}: expected ")
        assert len(message) < 250, message
        return
    value = getattr(args, action.dest)
    assert math.isfinite(value) and low <= value <= high, (text, value)
    assert float(text) == value  # what was typed, not a neighbour of it
    for key, number in _sbatch_numbers(args).items():
        if key == "array":
            number = number.partition("%")[2] or "1"  # the array's %N
        assert re.fullmatch(r"[1-9][0-9]{0,9}(GB|MB)?", number), (key, number)


@pytest.mark.parametrize(("argv", "option"), [
    (["--slurm-mem", "-4"], "--slurm-mem"), (["--slurm-mem", "nan"], "--slurm-mem"),
    (["--slurm-time", "0"], "--slurm-time"), (["--slurm-cpus-per-run", "inf"], "--slurm-cpus-per-run"),
    (["--slurm-parallel", "9" * 400], "--slurm-parallel"), (["--slurm-gpus-per-run", "-1"], "--slurm-gpus-per-run"),
])
def test_the_dry_run_prints_no_script_for_a_value_out_of_range(tmp_path, capsys, argv, option):
    out = tmp_path / "runs"
    assert main([*BASE[:-1], str(out), *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and not out.exists()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"hseval: error: argument {option}: expected "), lines


def test_memory_reaches_sbatch_in_units_slurm_reads():
    from hseval.train.slurm import SlurmSettings

    assert [SlurmSettings(mem_gb=gb).mem() for gb in (32, 0.5, 0.001, 1e6, 1.3)] == \
        ["32GB", "512MB", "1MB", "1000000GB", "1331MB"]


# ---------------------------------------------------------------------- every numeric option of every command
def _leaf_parsers(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not actions:
        yield words, parser
        return
    for name, sub in actions[0].choices.items():
        yield from _leaf_parsers(sub, (*words, name))


COMMANDS = dict(_leaf_parsers(build_parser()))
TYPED = [(words, action) for words, parser in COMMANDS.items() for action in parser._actions
         if action.type is not None and action.option_strings]


def _stopping_early(words: tuple[str, ...], tmp_path: Path) -> list[str]:
    """``words`` with every required argument given a path that does not exist (or its first
    choice): the command stops after checking its arguments, training nothing."""
    argv = list(words)
    for action in COMMANDS[words]._actions:
        if action.required or (not action.option_strings and action.nargs not in ("*", "?")):
            value = action.choices[0] if action.choices else str(tmp_path / f"no-{action.dest}")
            argv += [action.option_strings[0], value] if action.option_strings else [value]
    return argv


def _beyond(low: float, high: float, integer: bool) -> list[str]:
    below = low - 1 if integer else low / 2 if low > 0 else low - 1
    return [str(below), str(high + 1 if integer else high * 2), str(10**30), "-1", "nan", "inf", "-inf", "1e400"]


def test_every_numeric_option_of_every_command_declares_its_bounds():
    """A typed option's bounds are read from the type its value is stored or checked as
    (:func:`hseval.cli.bounded`), and each command line's number has them."""
    assert {a.option_strings[0] for _, a in TYPED} >= {"--max-points", "--subset", "--batch-size", "--workers",
                                                       "--loader-workers", "--in-channels", "--port", "--seed"}
    for words, action in TYPED:
        low, high = action.type.bounds
        assert math.isfinite(low) and math.isfinite(high) and low < high, (words, action.dest)


def test_bounds_come_from_where_the_value_is_stored():
    from hseval.core.arguments import Seed, Size, Threads, bounds
    from hseval.io.records import Positive

    evaluate = {a.dest: a.type.bounds for a in COMMANDS[("evaluate",)]._actions if a.type is not None}
    assert evaluate["max_points"] == evaluate["subset"] == bounds(Positive)  # the marker's inputs record them
    assert evaluate["workers"] == evaluate["loader_workers"] == bounds(Threads)
    imported = {a.dest: a.type.bounds for a in COMMANDS[("import",)]._actions if a.type is not None}
    assert set(imported.values()) == {bounds(Size)}  # create_backbone's checked signature
    assert {a.type.bounds for w, a in TYPED if a.dest == "seed"} == {bounds(Seed)}


@pytest.mark.parametrize(("words", "option"), [(w, a.option_strings[0]) for w, a in TYPED],
                         ids=[f"{' '.join(w)} {a.option_strings[0]}" for w, a in TYPED])
def test_beyond_the_bounds_one_line_at_them_no_internal_error(tmp_path, capsys, monkeypatch, words, option):
    """The issue's case: --max-points 10**30 was taken, then refused by the evaluation's marker as an
    internal error. Beyond an option's bounds: exit 2, one line naming it; at them: never exit 1."""
    monkeypatch.chdir(tmp_path)
    action = next(a for a in COMMANDS[words]._actions if a.option_strings[:1] == [option])
    low, high = action.type.bounds
    integer = isinstance(low, int) and isinstance(high, int)
    base = _stopping_early(words, tmp_path)
    if words == ("train-all",):
        base = [*BASE[:-1], str(tmp_path / "runs")]
    for text in _beyond(low, high, integer):
        assert main([*base, f"{option}={text}"]) == 2, text
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and f"argument {option}: " in lines[0], (text, lines)
    for value in (low, high):
        code = main([*base, f"{option}={value!r}"])
        err = capsys.readouterr().err.strip()
        assert code in (0, 2) and "internal error" not in err, (value, err)
        assert code == 0 or len(err.splitlines()) == 1, err


@pytest.mark.parametrize(("argv", "option"), [(["evaluate", "RUN", "--max-points", str(10**30)], "--max-points"),
                                              (["evaluate", "RUN", "--subset", str(2**53)], "--subset")])
def test_a_count_the_evaluation_record_cannot_hold_is_refused_by_the_library_too(tmp_path, argv, option):
    from hseval.core.errors import ConfigError
    from hseval.evaluation.runs import evaluate_runs

    with pytest.raises(ConfigError, match=option):
        evaluate_runs([str(tmp_path / "RUN")], tmp_path / "ev", **{option[2:].replace("-", "_"): int(argv[-1])})
