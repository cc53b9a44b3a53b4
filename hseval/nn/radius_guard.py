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
a large scale later says nothing about the radius. "Too small" is judged at every reading.
The fix it prints is the radius that puts the scale at ``log(999·(K − 1))``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["ScaleCheck", "check_metrics", "check_scale", "scale_range", "takes_radius"]

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
    at_start: bool = True  # before the first step; later only "too small" is judged

    @property
    def low(self) -> float:
        return scale_range(self.classes)[0]

    @property
    def high(self) -> float:
        return scale_range(self.classes)[1]

    @property
    def verdict(self) -> str | None:
        """"too small", "too large" (judged before training only: a trained backbone grows its
        features as it grows confident) or None (in range)."""
        if self.scale < self.low:
            return "too small"
        return "too large" if self.at_start and self.scale > self.high else None

    @property
    def suggested_radius(self) -> float:
        target = math.log(999 * (max(self.classes, 2) - 1))
        value = self.radius * target / self.scale
        return float(f"{value:.2g}")

    def message(self, who: str) -> str:
        """The one-line warning: the numbers, then the fix."""
        return (f"{who}: logit scale {self.scale:.1f} (feature norm {self.feature_norm:.2f} × class-vector norm "
                f"{self.class_norm:.2f}) is {self.verdict} for {self.classes} classes (range {self.low:.1f}–"
                f"{self.high:.1f}); retrain with --set model.head_options.radius={self.suggested_radius:g} "
                f"(now {self.radius:g})")


def takes_radius(head: str) -> bool:
    """Whether ``head`` has the ``radius`` option (the sphere heads)."""
    from hseval.nn.heads import head_options, list_heads  # torch: kept out of 'hseval report'

    return head in list_heads() and "radius" in head_options(head)


def check_scale(*, head: str, feature_norm: float, class_norm: float, classes: int,
                radius: float | None, at_start: bool = True) -> ScaleCheck | None:
    """The guard's reading for one run, or None when it does not apply (not a sphere head, or a
    number is missing or not finite)."""
    return _reading(feature_norm, class_norm, classes, radius, at_start) if takes_radius(head) else None


def _reading(feature_norm: Any, class_norm: Any, classes: int, radius: Any, at_start: bool) -> ScaleCheck | None:
    numbers = (feature_norm, class_norm, radius)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
               for v in numbers):
        return None
    return ScaleCheck(feature_norm * class_norm, feature_norm, class_norm, classes, float(radius), at_start)


def check_metrics(metrics: dict) -> list[tuple[str, ScaleCheck]]:
    """The guard's readings from a run's ``metrics.json`` (no torch: ``hseval report`` reads it): "before
    training" (the norms the engine kept in the first epoch's history) and "after training" (the
    evaluated feature and class-vector norms), each with the radius the head was built with
    (``radius``: none for a head without one)."""
    leaves = (metrics.get("hierarchy") or {}).get("num_leaves")
    if metrics.get("radius") is None or not isinstance(leaves, int):
        return []
    first = (metrics.get("history") or [{}])[0] or {}
    pairs = {"before training": (first.get("initial_feature_norm"), first.get("initial_class_norm")),
             "after training": ((metrics.get("feature_norm") or {}).get("mean"),
                                (metrics.get("class_vector_norm") or {}).get("mean"))}
    readings = [(when, _reading(feature, norm, leaves, metrics["radius"], when == "before training"))
                for when, (feature, norm) in pairs.items()]
    return [(when, check) for when, check in readings if check is not None]
