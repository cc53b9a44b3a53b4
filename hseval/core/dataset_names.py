"""The names of the datasets hseval can load, known without importing their loaders (which import
torch): the dashboard asks it before loading a run's images, so that a page of a prediction file's
evaluation (a dataset hseval cannot load) stays free of torch. ``tests/test_registry.py`` checks
that it equals the names of :data:`hseval.data.DATASETS`."""

from __future__ import annotations

__all__ = ["LOADABLE"]

LOADABLE = frozenset({"cifar100", "cub200", "fashion-mnist", "image-folder", "imagenet", "inaturalist",
                      "stanford-cars", "stanford-dogs", "tiered-imagenet-h", "tiny-imagenet"})
