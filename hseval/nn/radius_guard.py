"""The radius guard: is a radius-constrained head's logit scale in the range its features allow?

A head whose class vectors live on spheres of radius R0, R0·decay, ... cannot scale its logits
itself; the logit a sample can reach is about ``scale = ‖z‖ · ‖w‖`` (mean feature norm times mean
class-vector norm). Against K classes:

- **too small** when ``2·scale < log(9·(K − 1))``: even the best geometry (own class at +scale, every
  other at −scale) cannot put 90 % on the right class (the bound of NormFace, Wang et al. 2017), so
  the loss cannot fall and the head underfits;
- **too large** when ``scale > 5 · log(999·(K − 1))``: five times the scale at which 99.9 % is
  already reachable. The softmax then saturates from the first steps, and the ranking of the
  other classes carries no signal. Measured at initialisation on Fashion-MNIST (10 classes, range
  2.2–45): the small CNN's features have norm 4.8, so R0 = 8 starts at 21 (the demo's recipe);
  ResNet-18's have norm 18.9, so the same R0 starts at 85 — where the issue saw riemann at 0.687
  against plain 0.854 — and R0 = 1 at 10.6 (riemann 0.932, the paper's recipe).

"Too large" is judged before the first step only: by the end of an epoch the backbone has already
shrunk its features to fit a too-large radius (R0 = 100 on the small CNN: feature norm 4.8 → 0.5
in one epoch, test accuracy 0.42 against 0.61 at R0 = 8), and a trained backbone grows its
features as it grows confident (the small CNN on an easy set: norm 35, scale 160, with R0 = 8), so
a large scale later says nothing about the radius by itself. With the held-out loss beside it, it
does: a scale above the range whose loss is worse than a uniform guess's ``log K`` is a run whose
logits blew up, **diverged** (ResNet-18 with the small CNN's R0 = 8: feature norm 52,385 and test
loss 160,945 after one epoch), judged at every reading after the start: after each tested epoch
(from the history) and after training. "Too small" is judged at every reading.
The fix it prints is the radius that puts the scale at ``log(999·(K − 1))``; for a diverged run,
whose scale says nothing of the radius it started from, a lower learning rate or the radius the
reading before training gives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["ScaleCheck", "check_metrics", "check_scale", "held_loss", "scale_range", "takes_radius"]

HIGH_FACTOR = 5.0


def scale_range(classes: int) -> tuple[float, float]:
    """(lowest, highest) logit scale the guard accepts for ``classes`` classes."""
    k = max(classes, 2)
    return math.log(9 * (k - 1)) / 2, HIGH_FACTOR * math.log(999 * (k - 1))


@dataclass(frozen=True)
class ScaleCheck:
    scale: float
    feature_norm: float
    class_norm: float
    classes: int
    radius: float
    at_start: bool = True  # before the first step; later "too small", and "diverged" with a loss
    loss: float | None = None  # the held-out loss at this reading (after the start)

    @property
    def low(self) -> float:
        return scale_range(self.classes)[0]

    @property
    def high(self) -> float:
        return scale_range(self.classes)[1]

    @property
    def uniform_loss(self) -> float:
        """The cross-entropy of a uniform guess over the classes, ``log K``."""
        return math.log(max(self.classes, 2))

    @property
    def verdict(self) -> str | None:
        """"too small", "too large" (judged before training only: a trained backbone grows its
        features as it grows confident), "diverged" (after the start: above the range with a
        held-out loss worse than a uniform guess's) or None (in range)."""
        if self.scale < self.low:
            return "too small"
        if self.scale <= self.high:
            return None
        if self.at_start:
            return "too large"
        return "diverged" if self.loss is not None and self.loss > self.uniform_loss else None

    @property
    def suggested_radius(self) -> float:
        target = math.log(999 * (max(self.classes, 2) - 1))
        value = self.radius * target / self.scale
        return float(f"{value:.2g}")

    @property
    def loss_text(self) -> str:
        """The held-out loss as the guard's lines show it ("160,945", "7.96"; "" without one)."""
        if self.loss is None:
            return ""
        return f"{self.loss:,.0f}" if self.loss >= 100 else f"{self.loss:.3g}"

    @property
    def fix(self) -> str:
        """What to retrain with."""
        if self.verdict == "diverged":
            return (f"retrain with a lower optim.lr, or the radius the reading before training gives "
                    f"(--set model.head_options.radius=R0, now {self.radius:g})")
        return f"retrain with --set model.head_options.radius={self.suggested_radius:g} (now {self.radius:g})"

    def message(self, who: str) -> str:
        """The one-line warning: the numbers, then the fix."""
        scale = (f"logit scale {self.scale:,.1f} (feature norm {self.feature_norm:,.2f} × class-vector norm "
                 f"{self.class_norm:,.2f})")
        if self.verdict == "diverged":
            return (f"{who}: diverged: held-out loss {self.loss_text} is worse than a uniform guess's "
                    f"{self.uniform_loss:.2f} with {scale} above the {self.high:.1f} that {self.classes} classes "
                    f"need at most; {self.fix}")
        return (f"{who}: {scale} is {self.verdict} for {self.classes} classes (range {self.low:.1f}–"
                f"{self.high:.1f}); {self.fix}")


def takes_radius(head: str) -> bool:
    """Whether ``head`` has the ``radius`` option (the sphere heads)."""
    from hseval.nn.heads import HEADS, list_heads  # torch: kept out of 'hseval report'

    return head in list_heads() and "radius" in HEADS.options(head)


def check_scale(*, head: str, feature_norm: float, class_norm: float, classes: int,
                radius: float | None, at_start: bool = True, loss: float | None = None) -> ScaleCheck | None:
    """The guard's reading for one run, or None when it does not apply (not a sphere head, or a
    number is missing or not finite); ``loss``: the held-out loss at a reading after the start."""
    return _reading(feature_norm, class_norm, classes, radius, at_start, loss) if takes_radius(head) else None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _reading(feature_norm: Any, class_norm: Any, classes: int, radius: Any, at_start: bool,
             loss: Any = None) -> ScaleCheck | None:
    if not all(_number(v) and v > 0 for v in (feature_norm, class_norm, radius)):
        return None
    return ScaleCheck(feature_norm * class_norm, feature_norm, class_norm, classes, float(radius), at_start,
                      float(loss) if _number(loss) else None)


def held_loss(record: dict) -> float | None:
    """The held-out loss of a history record: the validation split's where it was tested on, else the test split's."""
    return next((record[key] for key in ("val_loss", "test_loss") if record.get(key) is not None), None)


def check_metrics(metrics: dict) -> list[tuple[str, ScaleCheck]]:
    """The guard's readings from a run's ``metrics.json`` (no torch: ``hseval report`` reads it),
    each with the radius the head was built with (``radius``: none for a head without one):
    "before training" (the norms the engine kept in the first epoch's history), "after epoch k" for
    the first tested epoch of the history whose reading has a verdict (its test features' norm and
    held-out loss, with the evaluated class-vector norm) and "after training" (the evaluated
    feature and class-vector norms and cross-entropy)."""
    leaves = (metrics.get("hierarchy") or {}).get("num_leaves")
    if metrics.get("radius") is None or not isinstance(leaves, int):
        return []
    radius, history = metrics["radius"], metrics.get("history") or [{}]
    class_norm = (metrics.get("class_vector_norm") or {}).get("mean")
    first = history[0] or {}
    readings = [("before training", _reading(first.get("initial_feature_norm"), first.get("initial_class_norm"),
                                             leaves, radius, True))]
    epochs = ((f"after epoch {h.get('epoch')}", _reading(h.get("feature_norm"), class_norm, leaves, radius, False,
                                                          held_loss(h))) for h in history if h)
    readings.append(next(((when, check) for when, check in epochs if check is not None and check.verdict),
                         ("", None)))
    readings.append(("after training", _reading((metrics.get("feature_norm") or {}).get("mean"), class_norm, leaves,
                                                radius, False, metrics.get("cross_entropy"))))
    return [(when, check) for when, check in readings if check is not None]
