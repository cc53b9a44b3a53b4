"""The contract every head implements, and the registry that chooses heads by name."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from pydantic import AfterValidator, BaseModel, ValidationError, create_model
from torch import nn

from hseval.core.arguments import CONFIG, Positive, checked, within_float32
from hseval.core.errors import ConfigError, problem_text
from hseval.core.registry import Registry, refuse_unknown_options
from hseval.tree.hierarchy import Hierarchy

__all__ = ["Head", "GROUPS", "PAPER", "register_head", "list_heads", "create_head", "checked_options", "HEADS"]

HEADS: Registry[type[Head]] = Registry("head")
PAPER = "Scieur & Kim, Connecting Sphere Manifolds Hierarchically for Regularization, ICML 2021"
GROUPS = ("paper", "peers")
"""The groups of heads: the paper's heads (its table, ablations and comparison) and the
hierarchy-aware methods of other papers that users compare it with; ``all`` is both."""


class Head(nn.Module):
    """A last layer over features ``z`` (B, d) for the classes of ``hierarchy``.

    Contract (nothing outside a head checks which head it is):

    - ``forward(z)`` -> (B, |L|) leaf logits;
    - ``loss(z, target)`` -> (loss, leaf logits) for training (cross-entropy unless a head adds
      terms of its own);
    - ``level_logits(z)`` -> {depth: (B, #nodes at depth)} super-class logits for depth
      1..max_depth-1 where the head has its own (the parent δ columns, or extra heads), else None;
    - ``class_weights()`` -> (d, |L|) class vectors W where the head has them, else None: the
      logits of a linear head are ``z @ W``; NBDT decides on ``z @ W``, Barz & Denzler's cosines
      are ``z @ W`` over the norm of the embedded features;
    - ``node_weights()`` -> (d, |P|) vectors w_p of every non-root node for the Δ-heads, else None;
    - ``radii()`` -> (|P|,) the radius R_p of each node where the head has one, else None;
    - ``config()`` -> the keyword arguments that rebuild the head (plain JSON types);
    - ``check_tree(hierarchy)`` (a class method) -> refuses, with a ConfigError naming the head and
      why, a tree the head cannot be trained on; called before the head is built.

    Each head also says what it is in one line (``description``, its docstring's first line), where
    it comes from (``citation``) and which of :data:`GROUPS` it belongs to (``group``).
    """

    name: ClassVar[str] = ""
    scores: ClassVar[str] = "logits"
    """What ``forward`` gives: "logits", whose softmax is a distribution over the classes, or another
    kind of score (Barz & Denzler's cosines), whose softmax is no probability."""
    description: ClassVar[str] = ""
    citation: ClassVar[str] = ""
    group: ClassVar[str] = "paper"

    def __init__(self, hierarchy: Hierarchy, in_features: int) -> None:
        super().__init__()
        self.hierarchy = hierarchy
        self.in_features = in_features

    @classmethod
    def about(cls) -> dict[str, str]:
        """What the head is, for the people who read its results (metrics.json's ``method``)."""
        return {"description": cls.description, "citation": cls.citation, "group": cls.group}

    @classmethod
    def check_tree(cls, hierarchy: Hierarchy) -> None:
        """Every tree is fine unless a head says otherwise."""

    def loss(self, z: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self(z)
        return F.cross_entropy(logits, target), logits

    def level_logits(self, z: torch.Tensor) -> dict[int, torch.Tensor] | None:
        return None

    def class_weights(self) -> torch.Tensor | None:
        return None

    def node_weights(self) -> torch.Tensor | None:
        return None

    def radii(self) -> torch.Tensor | None:
        return None

    def config(self) -> dict[str, Any]:
        return {}

    def extra_repr(self) -> str:
        return f"classes={self.hierarchy.num_leaves}, nodes={self.hierarchy.num_nodes}, in_features={self.in_features}"


def full_precision(z: torch.Tensor) -> torch.Tensor:
    """``z`` in float32 when it is half precision (autocast), else unchanged (float32/float64)."""
    return z.float() if z.dtype in (torch.float16, torch.bfloat16) else z


def columns_cross_entropy(scores: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of ``scores`` laid out (classes, B), as heads that sum over the tree's
    rows compute them (no transposed copy)."""
    return (torch.logsumexp(scores, dim=0) - scores.gather(0, target[None, :])[0]).mean()


def level_positions(hierarchy: Hierarchy) -> np.ndarray:
    """(|L|, max_depth): position of each class's ancestor within its depth, -100 when none."""
    table = hierarchy.ancestor_table[: hierarchy.num_leaves]
    position = np.full(hierarchy.num_nodes, -100, dtype=np.int64)
    for depth in range(1, hierarchy.max_depth + 1):
        nodes = hierarchy.nodes_at_depth(depth)
        position[nodes] = np.arange(len(nodes))
    return np.where(table >= 0, position[np.maximum(table, 0)], -100)


def register_head(name: str, *, group: str = "paper", citation: str = "") -> Callable[[type[Head]], type[Head]]:
    """Class decorator: make a head available to :func:`create_head` under ``name``, in ``group``
    (one of :data:`GROUPS`), described by its docstring's first line and cited by ``citation``."""
    if group not in GROUPS:
        raise ValueError(f"head {name!r}: group must be one of {', '.join(GROUPS)}, got {group!r}")

    def decorate(cls: type[Head]) -> type[Head]:
        cls.name, cls.group, cls.citation = name, group, citation
        cls.description = (cls.__doc__ or "").strip().splitlines()[0].replace("``", "")  # read as text, not reST
        return HEADS.add(name, cls)

    return decorate


def list_heads(group: str = "all") -> list[str]:
    """Names of the registered heads of ``group`` (one of :data:`GROUPS`, or "all"), in
    registration order."""
    if group != "all" and group not in GROUPS:
        raise ConfigError(f"unknown group of heads {group!r}; choose one of {', '.join((*GROUPS, 'all'))}")
    return [name for name in HEADS.names() if group == "all" or HEADS.get(name).group == group]


@functools.cache
def _options_model(name: str) -> type[BaseModel]:
    """A model of head ``name``'s options, typed (and bounded) as its ``__init__`` annotates them
    (strict: a number for a float, never a bool or a string; finite)."""
    fields: dict[str, Any] = {key: (Annotated[kind, AfterValidator(within_float32)], None)
                              for key, kind in HEADS.options(name).items()}
    return create_model(f"{name} options", __config__=CONFIG, **fields)


def checked_options(name: str, config: dict[str, Any]) -> dict[str, Any]:
    """``config``, head ``name``'s options, checked once, where they enter (:func:`create_head`,
    a training's configuration): known to the head, of its types, within its bounds; a one-line
    :class:`ConfigError` otherwise. The head trusts them."""
    refuse_unknown_options(f"head {name!r}", config, HEADS.options(name))
    try:
        return _options_model(name).model_validate(config).model_dump(exclude_unset=True)
    except ValidationError as exc:
        problem = exc.errors(include_url=False)[0]
        key, message = problem_text(problem)
        raise ConfigError(f"head {name!r}: option {key!r} {message}, got {problem['input']!r}") from None


@checked
def create_head(name: str, hierarchy: Hierarchy, in_features: Positive, **config: Any) -> Head:
    """Build head ``name``; unknown options, and options of the wrong type or out of the head's
    bounds, are refused with a one-line :class:`ConfigError` (:func:`checked_options`).

    Parameters
    ----------
    name : str
        A registered head, one of :func:`list_heads`.
    hierarchy : Hierarchy
        The tree whose leaves are the classes.
    in_features : int
        Size d of the features ``z`` (B, d) the head receives; positive.
    **config
        The head's own options, ``HEADS.options(name)``; a number is accepted for a float.

    Returns
    -------
    Head
        The new head, a ``torch.nn.Module`` whose ``forward(z)`` gives (B, |L|) leaf logits.

    Raises
    ------
    ConfigError
        (a ValueError) If ``name`` is not a registered head, or an option is unknown, of the
        wrong type or out of bounds.
    TypeError, ValueError
        If ``hierarchy`` is no Hierarchy or ``in_features`` no positive integer.

    Examples
    --------
    >>> import torch
    >>> from hseval.nn.heads import HEADS, create_head
    >>> from hseval.tree.hierarchy import Hierarchy
    >>> tree = Hierarchy.from_paths([["animal", "cat"], ["animal", "dog"], ["car"]])
    >>> head = create_head("plain", tree, in_features=8)
    >>> head(torch.randn(2, 8)).shape  # one logit per class
    torch.Size([2, 3])
    >>> sorted(HEADS.options("riemann"))
    ['radius', 'radius_decay']
    >>> create_head("riemann", tree, in_features=8, radius="large")
    Traceback (most recent call last):
        ...
    hseval.core.errors.ConfigError: head 'riemann': option 'radius' must be a number, got 'large'
    """
    cls = HEADS.get(name)
    options = checked_options(name, config)
    cls.check_tree(hierarchy)
    return cls(hierarchy, in_features, **options)
