"""Every registry, walked the way timm's tests walk ``list_models()``: each name resolves, its
options are the keyword-only parameters it declares, unknown names and options get the same
one-line error, and each thing does its job on small inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hseval.core.errors import ConfigError, HsevalError
from hseval.core.registry import Registry
from hseval.data.base import DATASETS
from hseval.evaluation.projections import PROJECTIONS, project
from hseval.nn.backbones import BACKBONES, create_backbone
from hseval.nn.heads import create_head
from hseval.nn.heads.base import HEADS
from hseval.tree.builders import BUILDERS
from hseval.tree.hierarchy import Hierarchy
from tests.fake_datasets import builder_inputs
from tests.helpers import by_weight, fashion_tree

REGISTRIES = {"head": HEADS, "backbone": BACKBONES, "dataset": DATASETS, "built-in hierarchy": BUILDERS,
              "projection": PROJECTIONS}


@pytest.mark.parametrize("kind", REGISTRIES)
def test_every_registry_names_resolves_and_refuses_alike(kind):
    registry = REGISTRIES[kind]
    assert registry.kind == kind and registry.names() and len(set(registry.names())) == len(registry.names())
    for name in registry:
        assert registry.get(name) is not None and isinstance(registry.options(name), dict)
    with pytest.raises(ConfigError, match=r"; choose one of " + ", ".join(registry.names())) as refused:
        registry.get("no-such-thing")
    assert "\n" not in str(refused.value) and "'no-such-thing'" in str(refused.value)


def test_a_registry_refuses_a_second_thing_under_one_name():
    registry = Registry("widget")
    registry.register("a")(len)
    with pytest.raises(ValueError, match="widget 'a' is registered twice"):
        registry.register("a")(len)


@pytest.mark.parametrize("name", HEADS.names())
def test_every_head_scores_every_class_with_its_default_options(name):
    tree = fashion_tree()
    head = create_head(name, tree, in_features=8)
    z = torch.randn(4, 8)
    logits = head(z)
    loss, _ = head.loss(z, torch.arange(4))
    assert logits.shape == (4, tree.num_leaves) and torch.isfinite(loss)


@pytest.mark.parametrize("name", [by_weight(name, backbone=name) for name in BACKBONES.names()])
def test_every_backbone_gives_its_features(name):
    backbone = create_backbone(name, in_channels=1, image_size=28).eval()
    with torch.no_grad():
        assert backbone(torch.randn(2, 1, 28, 28)).shape == (2, backbone.out_features)


@pytest.mark.parametrize("name", DATASETS.names())
def test_every_dataset_refuses_a_missing_folder_in_one_line(name, tmp_path):
    options = {"download": False} if "download" in DATASETS.options(name) else {}
    with pytest.raises(HsevalError) as refused:
        DATASETS.get(name)(tmp_path / "absent", **options)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("name", [n for n in BUILDERS.names()
                                  if "wordnet" not in BUILDERS.options(n)])  # WordNet's trees: their own tests
def test_every_builder_gives_a_tree_over_its_datasets_classes(name):
    tree = BUILDERS.get(name)(*builder_inputs(name))
    assert isinstance(tree, Hierarchy) and tree.num_leaves >= 10 and name in DATASETS


@pytest.mark.parametrize("name", [n for n in PROJECTIONS.names() if n != "umap"])  # umap compiles for a minute
def test_every_projection_places_points_and_class_vectors(name):
    rng = np.random.default_rng(0)
    xy, placed = project(rng.normal(size=(40, 6)), name, class_vectors=rng.normal(size=(3, 6)))
    assert xy.shape == (40, 2) and np.isfinite(xy).all()
    assert placed is None or placed.shape == (3, 2)


def test_the_names_known_without_torch_are_the_registrys():
    from hseval.core.dataset_names import LOADABLE
    from hseval.data import DATASETS

    assert LOADABLE == set(DATASETS.names())
