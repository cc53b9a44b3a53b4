"""Typed training configuration, loaded from YAML recipes with ``key=value`` overrides.

A recipe is a YAML mapping with the sections ``data``, ``model``, ``optim`` and ``engine``; a
recipe may start from another with ``extends: NAME``. Overrides use dotted keys
(``optim.lr=0.05``, ``model.head_options.radius=8``); values are parsed as YAML scalars and
checked against the field's type. The resolved configuration is stored in ``run.json``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from hseval.core.errors import ConfigError

__all__ = ["DataConfig", "ModelConfig", "OptimConfig", "EngineConfig", "TrainConfig", "load_config",
           "list_recipes", "default_recipe", "apply_overrides", "flatten_settings"]


@dataclass
class DataConfig:
    dataset: str = "fashion-mnist"
    root: str | None = None
    hierarchy: str | None = None        # a hierarchy file that replaces the dataset's tree
    train_subset: int | None = None     # a stratified random subset of the training split (CPU budgets)
    batch_size: int = 64
    eval_batch_size: int = 512
    workers: int = 4                    # loader processes for datasets read from files


@dataclass
class ModelConfig:
    backbone: str = "resnet18"
    head: str = "plain"
    embedding_dim: int | None = None    # a linear bottleneck (2 for the paper's 2-D figure)
    small_stem: bool | None = None      # None: the CIFAR stem below 100 pixels
    head_options: dict[str, Any] = field(default_factory=dict)  # each head takes the ones it knows


@dataclass
class OptimConfig:
    lr: float = 0.1
    momentum: float = 0.9
    weight_decay: float = 1e-4
    epochs: int = 300
    milestones: list[int] = field(default_factory=lambda: [150, 225])
    lr_decay: float = 0.1


@dataclass
class EngineConfig:
    device: str = "auto"                # auto | cpu | cuda | cuda:N
    seed: int = 0
    amp: bool = True                    # bf16 autocast on CUDA (heads keep their maths in float32)
    channels_last: bool = True          # on CUDA
    gpu_dataset: bool = True            # keep in-memory datasets on the GPU, augment there
    eval_every: int = 1                 # evaluate on the test split every N epochs (and at the end)
    threads: int | None = None          # torch CPU threads (None: torch's default)
    tune_malloc: bool = True            # CPU: keep big blocks in glibc's heap (no page faults per step)
    progress: bool = True
    tensorboard: bool = False
    compile: bool = False               # torch.compile of the training step (forward, loss, backward)
    cuda_graphs: bool = False           # with compile: replay the step as CUDA graphs (mode "reduce-overhead")


@dataclass
class TrainConfig:
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    engine: EngineConfig = field(default_factory=EngineConfig)
    recipe: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "config") -> TrainConfig:
        config = cls()
        for key, value in flatten_settings(data):
            _set(config, key, value, source=source)
        config.validate()
        return config

    def validate(self) -> None:
        checks = [
            (self.data.batch_size >= 1, f"data.batch_size must be >= 1, got {self.data.batch_size}"),
            (self.data.eval_batch_size >= 1, f"data.eval_batch_size must be >= 1, got {self.data.eval_batch_size}"),
            (self.data.workers >= 0, f"data.workers must be >= 0, got {self.data.workers}"),
            (self.data.train_subset is None or self.data.train_subset >= 1,
             f"data.train_subset must be >= 1, got {self.data.train_subset}"),
            (self.optim.lr > 0, f"optim.lr must be > 0, got {self.optim.lr}"),
            (self.optim.momentum >= 0, f"optim.momentum must be >= 0, got {self.optim.momentum}"),
            (self.optim.weight_decay >= 0, f"optim.weight_decay must be >= 0, got {self.optim.weight_decay}"),
            (self.optim.epochs >= 1, f"optim.epochs must be >= 1, got {self.optim.epochs}"),
            (all(m >= 1 for m in self.optim.milestones), f"optim.milestones must be >= 1: {self.optim.milestones}"),
            (self.engine.eval_every >= 1, f"engine.eval_every must be >= 1, got {self.engine.eval_every}"),
            (self.engine.threads is None or self.engine.threads >= 1,
             f"engine.threads must be >= 1, got {self.engine.threads}"),
            (self.engine.compile or not self.engine.cuda_graphs,
             "engine.cuda_graphs=true needs engine.compile=true (the graphs are recorded by torch.compile)"),
            (self.engine.device == "auto" or self.engine.device == "cpu" or self.engine.device.startswith("cuda"),
             f"engine.device must be auto, cpu or cuda[:N], got {self.engine.device!r}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)


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


def _known_keys(obj: Any, prefix: str = "") -> list[str]:
    keys = []
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            keys.extend(_known_keys(value, f"{prefix}{f.name}."))
        else:
            keys.append(prefix + f.name)
    return keys


def _coerce(value: Any, annotation: Any, key: str, source: str) -> Any:
    """Check ``value`` against a field type (str, int, float, bool, list[int], dict, X | None)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(annotation)
        if value is None and type(None) in options:
            return None
        for option in options:
            if option is type(None):
                continue
            try:
                return _coerce(value, option, key, source)
            except ConfigError:
                continue
        raise ConfigError(f"{source}: {key} cannot be {value!r}")
    if origin is list:
        (item,) = typing.get_args(annotation)
        if isinstance(value, (int, float, str)) and not isinstance(value, bool):
            value = [value]
        if not isinstance(value, list):
            raise ConfigError(f"{source}: {key} must be a list, got {value!r}")
        return [_coerce(v, item, key, source) for v in value]
    if origin is dict or annotation is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{source}: {key} must be a mapping, got {value!r}")
        return dict(value)
    if annotation is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{source}: {key} must be true or false, got {value!r}")
    if annotation is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ConfigError(f"{source}: {key} must be an integer, got {value!r}")
    if annotation is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise ConfigError(f"{source}: {key} must be a number, got {value!r}")
    if annotation is str:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
        raise ConfigError(f"{source}: {key} must be a string, got {value!r}")
    return value


def _set(config: TrainConfig, key: str, value: Any, *, source: str) -> None:
    parts = key.split(".")
    if parts[:2] == ["model", "head_options"] and len(parts) == 3:
        config.model.head_options[parts[2]] = value
        return
    target: Any = config
    for part in parts[:-1]:
        target = getattr(target, part, None)
        if not dataclasses.is_dataclass(target):
            break
    names = {f.name: f for f in dataclasses.fields(target)} if dataclasses.is_dataclass(target) else {}
    if parts[-1] not in names or dataclasses.is_dataclass(getattr(target, parts[-1])):
        raise ConfigError(f"{source}: unknown setting {key!r}; known settings: {', '.join(_known_keys(config))}")
    hints = typing.get_type_hints(type(target))
    setattr(target, parts[-1], _coerce(value, hints[parts[-1]], key, source))


def apply_overrides(config: TrainConfig, overrides: list[str]) -> TrainConfig:
    """Apply ``key=value`` strings (values parsed as YAML scalars) and validate."""
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects key=value, got {item!r}")
        try:
            value = yaml.safe_load(text) if text.strip() else None
        except (yaml.YAMLError, RecursionError):
            value = text
        _set(config, key.strip(), value, source="--set")
    config.validate()
    return config


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
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
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


def load_config(recipe: str, overrides: list[str] | None = None) -> TrainConfig:
    """The recipe (a shipped name or a YAML path) with ``overrides`` applied, validated."""
    config = TrainConfig.from_dict(_read_recipe(recipe), source=f"recipe {recipe}")
    config.recipe = recipe
    return apply_overrides(config, list(overrides or []))
