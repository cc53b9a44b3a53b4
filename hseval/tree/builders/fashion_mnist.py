"""The embedded default's tree: Fashion-MNIST's 10 classes under clothing/tops and footwear."""

from __future__ import annotations

from importlib import resources

from hseval.tree.formats import read_hierarchy
from hseval.tree.hierarchy import Hierarchy

FASHION_MNIST_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
                         "Bag", "Ankle boot")


def fashion_mnist_hierarchy() -> Hierarchy:
    """clothing → {tops → {T-shirt/top, Pullover, Coat, Shirt}, Trouser, Dress},
    footwear → {Sandal, Sneaker, Ankle boot}, Bag: |L| = 10, |P| = 13, max depth 3."""
    with resources.as_file(resources.files("hseval.tree.builders") / "data" / "fashion_mnist.txt") as path:
        return read_hierarchy(path, format="paths", classes=FASHION_MNIST_CLASSES)
