"""Every number of the training configuration has bounds: a huge, negative, NaN or infinite value of
any integer or float setting (and NaN, infinity or a float32 overflow of any head option) is refused
in one line that names the key, before anything is read or written. ``engine.threads=2**70`` used to
reach torch as an internal OverflowError."""

from __future__ import annotations

import re
import types
import typing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from hseval.cli.main import main
from hseval.core.errors import ConfigError
from hseval.nn.heads import HEADS, list_heads
from hseval.train.config import TrainConfig, load_config
from tests.helpers import examples


def _types(kind) -> list:
    """The types an annotation admits (``Annotated`` and ``| None`` unwrapped)."""
    if typing.get_origin(kind) is typing.Annotated:
        return _types(typing.get_args(kind)[0])
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(kind) for t in _types(arg)]
    return [kind]


def _numeric_settings(model: type[BaseModel] = TrainConfig, prefix: str = "") -> list[tuple[str, str]]:
    """(dotted key, "int" | "float" | "list[int]") of every number the configuration holds."""
    out = []
    for name, field in model.model_fields.items():
        for kind in _types(field.annotation):
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                out += _numeric_settings(kind, f"{prefix}{name}.")
            elif kind in (int, float):
                out.append((prefix + name, kind.__name__))
            elif typing.get_origin(kind) is list:
                out += [(prefix + name, f"list[{t.__name__}]") for t in _types(typing.get_args(kind)[0])
                        if t in (int, float)]
    return out


SETTINGS = _numeric_settings()
BAD = {"int": ["1180591620717411303424", "-1", ".nan", ".inf", "-.inf"],
       "float": ["1.0e+300", "-1.0e+300", "-1", ".nan", ".inf", "-.inf"]}
CASES = [(key, value) for key, kind in SETTINGS for value in BAD[kind.removeprefix("list[").rstrip("]")]]


def test_the_settings_found_are_the_configs_numbers():
    keys = dict(SETTINGS)
    assert {"engine.threads", "engine.seed", "data.batch_size", "data.workers", "optim.lr", "optim.momentum",
            "optim.milestones", "model.embedding_dim"} <= set(keys)
    assert keys["optim.milestones"] == "list[int]" and keys["optim.lr"] == "float"
    assert len(SETTINGS) >= 14


@pytest.mark.parametrize(("key", "value"), CASES, ids=[f"{k}={v}" for k, v in CASES])
def test_a_number_out_of_bounds_is_refused_naming_the_key(key, value):
    item = f"[{value}]" if dict(SETTINGS)[key].startswith("list") else value
    with pytest.raises(ConfigError) as caught:
        load_config("paper", [f"{key}={item}"])
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"--set: {key}"), message


HEAD_CASES = [(head, option, value) for head in list_heads() for option in HEADS.options(head)
              for value in (".nan", ".inf", "-.inf", "1.0e+300", "-1.0e+300")]


@pytest.mark.parametrize(("head", "option", "value"), HEAD_CASES, ids=[f"{h}.{o}={v}" for h, o, v in HEAD_CASES])
def test_a_head_option_that_is_not_a_float32_number_is_refused_naming_the_key(head, option, value):
    with pytest.raises(ConfigError, match=rf"^--set: model\.head_options\.{option} must be a finite number"):
        load_config("paper", [f"model.head={head}", f"model.head_options.{option}={value}"])


def test_the_bounds_keep_every_shipped_recipe_and_its_limits():
    from hseval.train.config import list_recipes

    for name in list_recipes():
        load_config(name)
    edge = load_config("paper", ["engine.threads=1024", "engine.seed=4294967295", "optim.momentum=1",
                                 "data.workers=0", "model.embedding_dim=2", "optim.lr=3.0e+38"])
    assert (edge.engine.threads, edge.engine.seed, edge.optim.momentum) == (1024, 2**32 - 1, 1.0)


def test_the_issue_s_thread_count_is_one_line(tmp_path, capsys, fashion_like):
    out = tmp_path / "run"
    assert main(["train", "--data-root", str(fashion_like), "--set", "engine.threads=1180591620717411303424",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "hseval: error: --set: engine.threads must be <= 1024, got 1180591620717411303424"
    assert not out.exists()


# ---------------------------------------------------------------------- numbers as people write them
# within float32 once rounded to 4 digits ("{:+.3e}")
finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-3.4e38, max_value=3.4e38)
WRITTEN = [repr, "{:e}".format, "{:E}".format, "{:.17e}".format, "{:+.3e}".format]
NUMBERS = settings(max_examples=examples(60), deadline=None)


def _as_written(value: float, form: int) -> tuple[float, str]:
    """``value`` written in one of :data:`WRITTEN`'s forms, and the float that text is."""
    text = WRITTEN[form](value)
    return float(text), text


@pytest.mark.parametrize(("text", "value"), [("5e-2", 0.05), ("1e6", 1e6), ("1E-3", 1e-3), ("-2.5e+3", -2500.0),
                                             ("1_000", 1000), ("1_000.5", 1000.5), (".5e1", 5.0), ("1.", 1.0)])
def test_a_number_written_as_python_or_yaml_1_2_writes_it_is_a_number(text, value):
    """The issue's case: PyYAML (YAML 1.1) read 5e-2 as text, and --set optim.lr=5e-2 was refused as
    'must be a number'."""
    config = load_config("paper", [f"model.head_options.alpha={text}"])
    assert config.model.head_options["alpha"] == value and type(config.model.head_options["alpha"]) is type(value)
    assert load_config("paper", ["optim.lr=5e-2"]).optim.lr == 0.05


@pytest.mark.parametrize("text", ["1e6x", "e5", "1e", "1__0.5e3", "nan"])
def test_text_that_is_no_number_stays_text(text):
    assert load_config("paper", [f"model.head_options.alpha={text}"]).model.head_options["alpha"] == text


@pytest.mark.parametrize("text", [".inf", "-.inf", ".nan", "1e400"])
def test_an_infinite_number_is_still_refused_naming_the_setting(text):
    with pytest.raises(ConfigError, match="optim.lr"):
        load_config("paper", [f"optim.lr={text}"])


def test_a_head_option_beyond_its_bound_names_the_bound(tmp_path, capsys):
    assert main(["train", "--head", "hxe", "--set", "model.head_options.alpha=1e6", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'alpha' must be <= 80" in err, err
    assert not (tmp_path / "r").exists()


@NUMBERS
@given(value=finite, form=st.integers(0, len(WRITTEN) - 1))
def test_any_float_as_written_is_that_float_through_set_and_a_recipe(tmp_path_factory, value, form):
    value, text = _as_written(value, form)
    assert load_config("paper", [f"model.head_options.alpha={text}"]).model.head_options["alpha"] == value
    recipe = tmp_path_factory.mktemp("recipe") / "r.yaml"
    recipe.write_text(f"extends: paper\nmodel:\n  head_options:\n    alpha: {text}\n", encoding="utf-8")
    assert load_config(str(recipe)).model.head_options["alpha"] == value


@NUMBERS
@given(value=finite.filter(lambda x: x > 0), form=st.integers(0, len(WRITTEN) - 1))
def test_any_float_as_written_is_that_float_through_a_sweep(value, form):
    from hseval.cli.main import build_parser
    from hseval.cli.train_plan import planned_configs

    value, text = _as_written(value, form)
    args = build_parser().parse_args(["train-all", "--heads", "plain", "--sweep", f"optim.lr={text}", "--out", "x"])
    [(config, _)] = planned_configs(args, note=lambda _: None)
    assert config.optim.lr == value


def test_a_head_option_has_one_finite_threshold_in_a_recipe_and_in_create_head():
    """The settings refused float32's overflow (3.5e38) but the heads' own check let it through to
    float64's: one threshold now, for every float option of every head."""
    from hseval.nn.heads import HEADS, list_heads
    from hseval.nn.heads.base import checked_options
    from hseval.train.checks import check_head_options

    floats = [(h, o) for h in list_heads() for o, kind in HEADS.options(h).items() if "float" in str(kind)]
    assert floats
    for head, option in floats:
        with pytest.raises(ConfigError, match=r"must be .*(<=|at most)"):
            checked_options(head, {option: 3.5e38})
        with pytest.raises(ConfigError):
            check_head_options(load_config("fashion-mnist", [f"model.head={head}",
                                                             f"model.head_options.{option}=3.5e38"]))


@pytest.mark.parametrize("name", ["quick", "small", "paper"])
def test_a_budget_is_its_settings_over_the_recipe(name):
    """``--budget`` gives exactly the settings its registration lists, over any recipe; the README
    table is generated from the same registry."""
    from hseval.cli.main import build_parser
    from hseval.cli.train_plan import planned_configs
    from hseval.train.budgets import BUDGETS
    from hseval.train.config import load_config

    args = build_parser().parse_args(["train-all", "--heads", "plain", "--budget", name, "--out", "x"])
    [(config, _)] = planned_configs(args, note=lambda _: None)
    expected = load_config("fashion-mnist", ["model.head=plain", *BUDGETS.get(name).settings])
    assert (config.data, config.optim) == (expected.data, expected.optim)
    if name == "quick":
        assert (config.data.train_subset, config.optim.epochs) == (2000, 1)


def test_a_setting_of_the_budget_given_again_is_refused():
    from hseval.cli.main import build_parser
    from hseval.cli.train_plan import planned_configs

    args = build_parser().parse_args(["train-all", "--budget", "small", "--set", "data.train_subset=100", "--out", "x"])
    with pytest.raises(ConfigError, match=re.escape("data.train_subset: --budget and --set both set it; give each "
                                                    "setting once")):
        planned_configs(args, note=lambda _: None)


@pytest.mark.parametrize("name", ["quick", "small", "paper"])
def test_a_budget_goes_with_a_validation_split(name, fashion_like):
    """README's recipe (sweep, validation split, select) under any budget: a budget sets how much
    training, never the split the training tests on (a test subset is refused beside a validation
    split when the run's data is made: the quick budget once was)."""
    from hseval.cli.main import build_parser
    from hseval.cli.train_plan import planned_configs
    from hseval.data import load_dataset
    from hseval.train.loader import run_data

    args = build_parser().parse_args(["train-all", "--heads", "plain", "--budget", name, "--set",
                                      "data.val_fraction=0.1", "--data-root", str(fashion_like), "--out", "x"])
    [(config, _)] = planned_configs(args, note=lambda _: None)
    data = run_data(load_dataset("fashion-mnist", str(fashion_like)), config)
    assert data.val is not None and len(data.test) == 200
