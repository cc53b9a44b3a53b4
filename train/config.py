"""Typed training configuration, loaded from YAML recipes with ``key=value`` overrides.

A recipe is a YAML mapping with the sections ``data``, ``model``, ``optim`` and ``engine``; a
recipe may start from another with ``extends: NAME``. Overrides use dotted keys
(``optim.lr=0.05``, ``model.head_options.radius=8``); values are parsed as YAML scalars and
checked against the field's type. The resolved configuration is stored in ``run.json``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import yaml  # its error type; documents are read by hseval.core.overrides.load_yaml
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from hseval.core.arguments import FLOAT32_MAX, Share, within_float32
from hseval.core.errors import ConfigError, problem_text
from hseval.core.overrides import load_yaml, parse_override

__all__ = ["DataConfig", "ModelConfig", "OptimConfig", "EngineConfig", "TrainConfig", "load_config",
           "list_recipes", "default_recipe", "apply_overrides", "flatten_settings"]


def _number_as_text(value: Any) -> Any:
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def _scalar_as_list(value: Any) -> Any:
    return [value] if isinstance(value, (int, float, str)) and not isinstance(value, bool) else value


# Every number has bounds: those of its meaning (a momentum, a seed), else those of what it is used
# as, so that no value reaches torch or numpy to overflow there (2**70 threads, a learning rate that
# is infinite in float32).
COUNT_MAX = 2**31 - 1                # sizes and counts as torch's C ints take them
THREADS_MAX = 1024                   # threads or loader processes; far more crash torch (100,000 threads: SIGSEGV)

Text = Annotated[str, BeforeValidator(_number_as_text)]  # YAML reads "--set engine.device=0" as a number
Positive = Annotated[int, Field(ge=1, le=COUNT_MAX)]
Threads = Annotated[int, Field(ge=1, le=THREADS_MAX)]
Width = Annotated[int, Field(ge=1, le=2**16)]




class _Section(BaseModel):
    """No unknown setting, no coercion (a bool is not a number), no NaN or infinity, every number
    within bounds."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)


class DataConfig(_Section):
    dataset: Text = "fashion-mnist"
    root: Text | None = None
    hierarchy: Text | None = None        # a hierarchy file that replaces the dataset's tree
    train_subset: Positive | None = None  # a stratified random subset of the training split (CPU budgets)
    test_subset: Positive | None = None  # one of the test split, for the tests during training (quicker)
    # a class-stratified share of the training split held out: training tests on it after each epoch
    val_fraction: Share | None = None
    batch_size: Positive = 64
    eval_batch_size: Positive = 512
    workers: int = Field(4, ge=0, le=THREADS_MAX)  # loader processes for datasets read from files
    augment: bool = True                 # the dataset's training augmentation (false: the test's transform)


class ModelConfig(_Section):
    backbone: Text = "resnet18"
    head: Text = "plain"
    embedding_dim: Width | None = None   # a linear bottleneck (2 for the paper's 2-D figure)
    small_stem: bool | None = None       # None: the CIFAR stem below 100 pixels
    # each head takes the ones it knows and checks their meaning; here, that numbers are finite
    head_options: dict[str, Annotated[Any, AfterValidator(within_float32)]] = Field(default_factory=dict)
    init: Text | None = None             # a state dict the backbone starts from (hseval train --init)
    init_prefix: Text | None = None      # stripped from its keys (--prefix)
    init_map: list[str] = Field(default_factory=list)     # BACKBONE_KEY=FILE_KEY (--map)
    init_ignore: list[str] = Field(default_factory=list)  # file keys to drop (--ignore)
    freeze_backbone: bool = False        # linear probing: the backbone's weights and batch-norm statistics fixed


class OptimConfig(_Section):
    lr: float = Field(0.1, gt=0, le=FLOAT32_MAX)
    momentum: float = Field(0.9, ge=0, le=1)
    weight_decay: float = Field(1e-4, ge=0, le=FLOAT32_MAX)
    epochs: Positive = 300
    milestones: Annotated[list[Positive], BeforeValidator(_scalar_as_list)] = Field(default_factory=lambda: [150, 225])
    lr_decay: float = Field(0.1, gt=0, le=FLOAT32_MAX)


class EngineConfig(_Section):
    device: Text = "auto"                # auto | cpu | cuda | cuda:N
    seed: int = Field(0, ge=0, le=2**32 - 1)  # numpy's seeds are 32-bit
    amp: bool = True                     # bf16 autocast on CUDA (heads keep their maths in float32)
    channels_last: bool = True           # convolutions in NHWC: faster training, most on a GPU
    gpu_dataset: bool = True             # keep in-memory datasets on the GPU, augment there
    eval_every: Positive = 1             # evaluate on the test split every N epochs (and at the end)
    threads: Threads | None = None       # torch CPU threads while training (None: as they are)
    progress: bool = True
    tensorboard: bool = False
    compile: bool = False                # torch.compile of the training step (forward, loss, backward)
    cuda_graphs: bool = False            # with compile: replay the step as CUDA graphs (mode "reduce-overhead")
    keep_train_state: bool = True        # a finished run keeps its optimiser state (train_state.pt), to be extended
    self_contained: bool = False         # a frozen --init backbone stored in the run too (else referred to by SHA-256)


class TrainConfig(_Section):
    data: DataConfig = Field(default_factory=DataConfig)
    model: ModelConfig = Field(default_factory=ModelConfig)
    optim: OptimConfig = Field(default_factory=OptimConfig)
    engine: EngineConfig = Field(default_factory=EngineConfig)
    recipe: Text | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str | Callable[[str], str] = "config") -> TrainConfig:
        """``data`` (nested sections, or dotted keys such as ``optim.lr``) as a checked config;
        ``source`` names where it came from in an error (a function: of the setting that is wrong)."""
        nested: dict[str, Any] = {}
        for key, value in flatten_settings(data):
            for part in reversed(key.split(".")):
                value = {part: value}
            nested = _merge(nested, value)
        try:
            config = cls.model_validate(nested)
        except ValidationError as exc:
            problem = exc.errors(include_url=False)[0]
            field, message = problem_text(problem)
            source = source(field) if callable(source) else source
            if problem["type"] == "extra_forbidden":
                raise ConfigError(f"{source}: unknown setting {field!r}; known settings: "
                                  f"{', '.join(k for k, _ in flatten_settings(cls().model_dump()))}") from None
            raise ConfigError(f"{source}: {field} {message}, got {problem['input']!r}") from None
        config.validate()
        return config

    def validate(self) -> None:
        """The checks that involve more than one setting, or a value's form."""
        if self.engine.cuda_graphs and not self.engine.compile:
            raise ConfigError("engine.cuda_graphs=true needs engine.compile=true (the graphs are recorded by "
                              "torch.compile)")
        device = self.engine.device
        if not (device in ("auto", "cpu") or device.startswith("cuda")):
            raise ConfigError(f"engine.device must be auto, cpu or cuda[:N], got {device!r}")
        given = [k for k in ("init_prefix", "init_map", "init_ignore") if getattr(self.model, k)]
        if given and not self.model.init:
            raise ConfigError(f"model.{given[0]} applies to the file of model.init (--init FILE), which is not given")


def flatten_settings(data: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted key, value) of a nested settings mapping; ``model.head_options`` stays one value."""
    if not isinstance(data, dict):
        raise ConfigError(f"{prefix or 'config'} must be a mapping, got {type(data).__name__}")
    out = []
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and dotted != "model.head_options":
            out.extend(flatten_settings(value, dotted + "."))
        else:
            out.append((dotted, value))
    return out


def apply_overrides(config: TrainConfig, overrides: list[str], *, given_by: Mapping[str, str] | None = None
                    ) -> TrainConfig:
    """``config`` with ``key=value`` strings (values parsed as YAML scalars) applied, checked.
    ``given_by``: the option that gave a key (``--sweep``, ``--seeds``, a flag), which an error
    about it names; ``--set`` where none is given."""
    settings = config.model_dump()
    for item in overrides:
        key, value = parse_override(item)
        settings = _merge(settings, {key: value})
    options = dict(given_by or {})

    def source(field: str) -> str:
        keys = [key for key in options if field == key or field.startswith(key + ".")]
        return options[max(keys, key=len)] if keys else "--set"

    return TrainConfig.from_dict(settings, source=source)


def _recipe_dir() -> Path:
    return Path(str(resources.files("hseval.train") / "recipes"))


def list_recipes() -> list[str]:
    return sorted(p.stem for p in _recipe_dir().glob("*.yaml"))


def _read_recipe(name_or_path: str, seen: tuple[str, ...] = ()) -> dict[str, Any]:
    path = Path(name_or_path)
    if not path.suffix:
        path = _recipe_dir() / f"{name_or_path}.yaml"
    if not path.is_file():
        raise ConfigError(f"unknown recipe {name_or_path!r}; choose one of {', '.join(list_recipes())} or give a "
                          "YAML file")
    try:
        data = load_yaml(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f", line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{path}{line}: not valid YAML") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); a recipe is a YAML file") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to be a recipe") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a recipe must be a YAML mapping")
    parent = data.pop("extends", None)
    if parent is not None:
        if parent in seen:
            raise ConfigError(f"{path}: 'extends' makes a loop through {parent!r}")
        base = _read_recipe(str(parent), (*seen, str(parent)))
        data = _merge(base, data)
    return data


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def default_recipe(dataset: str, backbone: str | None) -> str:
    """``<dataset>-<backbone>`` when shipped, else the dataset's own, else the paper's setting."""
    recipes = list_recipes()
    for name in (f"{dataset}-{backbone}", dataset):
        if name in recipes:
            return name
    return "paper"


def load_config(recipe: str, overrides: list[str] | None = None, *, given_by: Mapping[str, str] | None = None
                ) -> TrainConfig:
    """The recipe (a shipped name or a YAML path) with ``overrides`` applied, validated
    (``given_by`` as :func:`apply_overrides`')."""
    config = TrainConfig.from_dict(_read_recipe(recipe), source=f"recipe {recipe}")
    config.recipe = recipe
    return apply_overrides(config, list(overrides or []), given_by=given_by)
