"""2-D projections of sample embeddings and class vectors: PCA (scikit-learn), t-SNE (openTSNE,
measured faster than scikit-learn's on 10k×128 in ``bench/evaluate.py``) and UMAP (umap-learn).

Class vectors live in the space of the features (logits are φᵀw), but at another scale: each is
rescaled to the samples' mean norm, then placed with the fitted projection's own ``transform``.
Seeds are fixed, so a projection is reproducible.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from sklearn.decomposition import PCA

from hseval.core.errors import ConfigError
from hseval.core.extras import check_installed, require
from hseval.core.perf import spare_cores
from hseval.core.registry import Registry

__all__ = ["PROJECTIONS", "project", "check_available"]

Projected = tuple[np.ndarray, np.ndarray | None]  # the samples' (N, 2) coordinates and the class vectors' or None


def _scaled(class_vectors: np.ndarray | None, embeddings: np.ndarray) -> np.ndarray | None:
    if class_vectors is None or len(class_vectors) == 0:
        return None
    norms = np.linalg.norm(class_vectors, axis=1, keepdims=True)
    target = np.linalg.norm(embeddings, axis=1).mean()
    return class_vectors / np.where(norms > 0, norms, 1.0) * target


def _pca(x: np.ndarray, extra: np.ndarray | None, seed: int, threads: int | None) -> Projected:
    pca = PCA(n_components=2, random_state=seed).fit(x)
    return pca.transform(x), None if extra is None else pca.transform(extra)


def _tsne(x: np.ndarray, extra: np.ndarray | None, seed: int, threads: int | None) -> Projected:
    TSNE = require(*_NEEDS["tsne"]).TSNE  # imported when used: numba-compiled, optional

    perplexity = float(min(30.0, max(2.0, (len(x) - 1) / 3)))
    # openTSNE starts from the PCA of x scaled by its spread: points that all coincide have none
    start = "pca" if np.ptp(x, axis=0).max() > 0 else "random"
    embedding = TSNE(n_components=2, perplexity=perplexity, random_state=seed, n_jobs=threads or spare_cores(),
                     initialization=start, verbose=False).fit(x)
    placed = None
    if extra is not None:
        placed = np.asarray(embedding.transform(extra, perplexity=min(perplexity, 5.0)))
    return np.asarray(embedding), placed


def _umap(x: np.ndarray, extra: np.ndarray | None, seed: int, threads: int | None) -> Projected:
    umap = require(*_NEEDS["umap"])  # imported when used: compiles for a minute, optional

    with warnings.catch_warnings():  # "n_jobs overridden by setting random_state": reproducibility wins
        warnings.simplefilter("ignore", UserWarning)
        reducer = umap.UMAP(n_components=2, n_neighbors=min(15, len(x) - 1), random_state=seed)
        xy = reducer.fit_transform(x)
        placed = None if extra is None else reducer.transform(extra)
    return xy, placed


PROJECTIONS: Registry[Callable[[np.ndarray, np.ndarray | None, int], tuple[np.ndarray, np.ndarray | None]]] = \
    Registry("projection")
"""``(embeddings, class_vectors or None, seed) -> (xy, placed class vectors or None)``."""
for _name, _method in (("pca", _pca), ("tsne", _tsne), ("umap", _umap)):
    PROJECTIONS.add(_name, _method)
_NEEDS = {"tsne": ("openTSNE", "t-SNE"), "umap": ("umap", "UMAP")}


def check_available(method: str) -> None:
    """Refuse, before any work, an unknown projection or one whose optional package is missing."""
    PROJECTIONS.get(method)
    if method in _NEEDS:
        module, purpose = _NEEDS[method]
        check_installed(module, purpose=purpose)


def project(embeddings: np.ndarray, method: str, *, class_vectors: np.ndarray | None = None,
            seed: int = 0, threads: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """(N, 2) coordinates of ``embeddings`` (N, d) and (K, 2) of ``class_vectors`` (K, d) or None;
    ``threads``: the CPU threads a method may use (t-SNE's; None: the CPUs not busy now)."""
    method_fn = PROJECTIONS.get(method)
    x = np.asarray(embeddings, dtype=np.float64)  # float64: squares of any float32 feature stay finite
    if len(x) < 4:
        raise ConfigError(f"{method} needs at least 4 points, got {len(x)}")
    extra = _scaled(None if class_vectors is None else np.asarray(class_vectors, dtype=np.float64), x)
    with warnings.catch_warnings():  # a degenerate input's own warnings: the check below says it in one line
        warnings.simplefilter("ignore", RuntimeWarning)
        xy, placed = method_fn(x, extra, seed, threads)
    xy, placed = np.asarray(xy, dtype=np.float64), None if placed is None else np.asarray(placed, dtype=np.float64)
    if not np.isfinite(xy).all() or (placed is not None and not np.isfinite(placed).all()):
        raise ConfigError(f"{method} gave coordinates that are not numbers for these {len(x)} embeddings (do they all "
                          "coincide?); evaluate with another --projections, or none")
    return xy, placed
