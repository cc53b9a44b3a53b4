"""Geometry of class vectors (float64) and 2-D projections through their libraries."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hseval.core.errors import ConfigError
from hseval.core.sampling import stratified_subset
from hseval.evaluation.projections import project
from hseval.metrics import geometry
from hseval.nn.heads import create_head
from tests.helpers import appendix_a, fashion_tree, random_tree


def test_riemann_children_sit_at_radius_with_the_papers_angles():
    tree = fashion_tree()
    head = create_head("riemann", tree, 32, radius=2.0, radius_decay=0.5)
    vectors, kind = geometry.node_vectors(head)
    assert kind == "learned" and vectors.dtype == np.float64 and vectors.shape == (13, 32)
    table = geometry.parent_child_table(tree, vectors, head.radii().numpy())
    np.testing.assert_allclose(table["delta_norm"], table["radius"], rtol=1e-6)
    assert table.loc[table["depth"] == 1, "angle_to_parent"].isna().all()
    # a hand check: the angle between w_child = w_p + Rδ and w_p from the law of cosines
    coat = tree.index("Coat")
    w, wp = vectors[coat], vectors[tree.parents[coat]]
    expected = np.degrees(np.arccos(w @ wp / np.linalg.norm(w) / np.linalg.norm(wp)))
    assert table.loc[coat, "angle_to_parent"] == pytest.approx(expected)


def test_plain_head_uses_centroids_of_its_class_vectors():
    tree = appendix_a()
    head = create_head("plain", tree, 3)
    with torch.no_grad():
        head.classifier.weight.copy_(torch.tensor([[1.0, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 3]]))
    vectors, kind = geometry.node_vectors(head)
    assert kind == "centroid"
    np.testing.assert_allclose(vectors[tree.index("fruit")], [0.5, 0.5, 0])
    np.testing.assert_allclose(vectors[tree.index("animal")], [0, 0, 2])
    table = geometry.parent_child_table(tree, vectors)
    assert table.loc[tree.index("apple"), "angle_to_parent"] == pytest.approx(45.0)
    assert table.loc[tree.index("dog"), "angle_to_parent"] == pytest.approx(0.0)


def test_hyperbolic_head_has_no_vectors():
    assert geometry.node_vectors(create_head("hyperbolic", fashion_tree(), 8)) is None


def test_pair_angles_label_siblings():
    tree = appendix_a()
    vectors = np.array([[1.0, 0], [0, 1], [-1, 0], [1, 1], [1, 0], [0, 1]])
    pairs, _ = geometry.pair_angles(tree, vectors)
    sib = pairs[(pairs["depth"] == 2) & (pairs["kind"] == "sibling")]
    assert len(sib) == 2 and sorted(sib["angle"].round(6)) == [90.0, 135.0]
    assert len(pairs[(pairs["depth"] == 2) & (pairs["kind"] == "non-sibling")]) == 4
    assert pairs[pairs["depth"] == 1]["kind"].tolist() == ["sibling"]


def test_tree_agreement_is_perfect_for_vectors_built_from_the_tree():
    tree = fashion_tree()
    rng = np.random.default_rng(0)
    directions = rng.normal(size=(tree.num_nodes, 64))
    H = tree.H.toarray().astype(float)
    scale = 4.0 ** (-tree.depth.astype(float))
    leaves = (H * scale[:, None]).T @ directions  # each class = its path's sum, big steps first
    result = geometry.tree_agreement(tree, leaves)
    assert result["cophenetic_correlation"] > 0.8
    assert result["levels"]["1"]["adjusted_rand"] == pytest.approx(1.0)
    shuffled = geometry.tree_agreement(tree, rng.normal(size=(10, 64)))
    assert shuffled["cophenetic_correlation"] < result["cophenetic_correlation"]


def _brute_force_agreement(tree, vectors, leaves):
    """scipy's own cophenetic correlation (``cophenet(Z, Y)``) and sklearn's Rand indices, with tree
    distances counted from the paths of every pair of ``leaves``."""
    from scipy.cluster.hierarchy import cophenet, fcluster, linkage
    from sklearn.metrics import adjusted_rand_score

    paths = [tree.path(int(leaf)) for leaf in leaves]
    distances = [len(paths[a]) + len(paths[b]) - 2 * len(set(paths[a]) & set(paths[b]))
                 for a in range(len(leaves)) for b in range(a + 1, len(leaves))]
    Z = linkage(vectors[leaves], method="average", metric="cosine")
    truth = tree.ancestor_at_depth(leaves, 1)
    found = fcluster(Z, t=len(np.unique(truth)), criterion="maxclust")
    return cophenet(Z, np.asarray(distances, dtype=float))[0], adjusted_rand_score(truth, found)


@pytest.mark.parametrize("limit", [1000, 40], ids=["every class", "a seeded sample of 40 of 90"])
def test_tree_agreement_equals_scipys_on_the_classes_it_clusters(limit):
    tree = random_tree(90, seed=3, max_depth=3)
    vectors = np.random.default_rng(4).normal(size=(tree.num_leaves, 16))
    result = geometry.tree_agreement(tree, vectors, limit=limit)
    leaves = np.arange(tree.num_leaves)
    if limit < tree.num_leaves:
        leaves = np.sort(np.random.default_rng(0).choice(tree.num_leaves, limit, replace=False))
    correlation, adjusted_rand = _brute_force_agreement(tree, vectors, leaves)
    assert result["classes"] == len(leaves) == min(limit, tree.num_leaves)
    assert result["cophenetic_correlation"] == pytest.approx(correlation, abs=1e-12)
    assert result["levels"]["1"]["adjusted_rand"] == pytest.approx(adjusted_rand, abs=1e-12)
    assert geometry.tree_agreement(tree, vectors, limit=limit) == result  # the same sample every time


def test_stratified_subset_keeps_class_proportions():
    labels = np.repeat(np.arange(10), [100, 50, 50, 50, 50, 50, 50, 50, 50, 500])
    idx = stratified_subset(labels, 200, seed=1)
    assert len(idx) == 200 and np.all(np.diff(idx) > 0)
    counts = np.bincount(labels[idx], minlength=10)
    assert counts[9] == pytest.approx(100, abs=2) and counts.min() >= 9
    assert np.array_equal(stratified_subset(labels, 10_000), np.arange(len(labels)))
    assert np.array_equal(idx, stratified_subset(labels, 200, seed=1))


def test_stratified_subset_that_cannot_be_drawn():
    """A sample to look at falls back to a uniform one; a subset a setting asked for is refused
    in one line naming the setting."""
    labels = np.array([0] * 50 + [1] * 50 + [2])  # class 2 has a single sample
    idx = stratified_subset(labels, 20, seed=0)
    assert len(idx) == 20 and np.all(np.diff(idx) > 0)
    assert np.array_equal(stratified_subset(labels, 99, seed=0), stratified_subset(labels, 99, seed=0))
    for size in (2, 20, 99):  # fewer than the classes, a single sample, fewer left out than the classes
        with pytest.raises(ConfigError, match=f"data.train_subset={size}"):
            stratified_subset(labels, size, seed=0, setting="data.train_subset")


def test_pca_projection_matches_sklearn_and_places_class_vectors():
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 6)).astype(np.float32)
    xy, cxy = project(x, "pca", class_vectors=np.eye(6)[:3], seed=0)
    np.testing.assert_allclose(xy, PCA(2, random_state=0).fit_transform(x), rtol=1e-4, atol=1e-4)
    assert cxy.shape == (3, 2)


@pytest.mark.slow  # seconds each: the fast lane keeps units and contracts
def test_tsne_and_umap_run_through_their_libraries():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 1, (40, 8)), rng.normal(8, 1, (40, 8))]).astype(np.float32)
    for method in ("tsne", "umap"):
        xy, cxy = project(x, method, class_vectors=x[:2], seed=0)
        assert xy.shape == (80, 2) and cxy.shape == (2, 2) and np.isfinite(xy).all()
        # the two clusters stay apart
        a, b = xy[:40].mean(0), xy[40:].mean(0)
        assert np.linalg.norm(a - b) > 2 * xy[:40].std(0).mean()
    again, _ = project(x, "tsne", seed=0)
    np.testing.assert_allclose(again, project(x, "tsne", seed=0)[0])


def _brute_pairs(tree, vectors, depth):
    """Every pair of nodes of ``depth`` by kind: (angle, cosine) lists, by a double loop."""
    out = {"sibling": [], "non-sibling": []}
    nodes = list(tree.nodes_at_depth(depth))
    for x, a in enumerate(nodes):
        for b in nodes[x + 1:]:
            cos = vectors[a] @ vectors[b] / np.linalg.norm(vectors[a]) / np.linalg.norm(vectors[b])
            kind = "sibling" if tree.parents[a] == tree.parents[b] else "non-sibling"
            out[kind].append((np.degrees(np.arccos(np.clip(cos, -1, 1))), cos))
    return out


def test_pair_statistics_are_exact_and_sampled_past_the_limit():
    from tests.helpers import random_tree

    tree = random_tree(300, 2, branching=0.15)
    vectors = np.random.default_rng(2).normal(size=(tree.num_nodes, 5))
    table, stats = geometry.pair_angles(tree, vectors, max_pairs=50)
    sampled_table, sampled = geometry.pair_angles(tree, vectors, max_pairs=50, limit=1000, sample=30_000)
    for depth in stats:
        brute = _brute_pairs(tree, vectors, depth)
        for kind, key in (("sibling", "sibling"), ("non-sibling", "non_sibling")):
            pairs = brute[kind]
            for result in (stats, sampled):
                assert result[depth][f"{key}_pairs"] == len(pairs)
                if pairs:  # the mean cosine from sums is exact whatever was measured
                    assert result[depth][f"mean_{key}_cosine"] == pytest.approx(np.mean([c for _, c in pairs]))
            if not pairs:
                continue
            assert stats[depth][f"{key}_pairs_measured"] == len(pairs)
            assert stats[depth][f"mean_{key}_angle"] == pytest.approx(np.mean([a for a, _ in pairs]))
            measured = sampled[depth][f"{key}_pairs_measured"]
            assert measured == (len(pairs) if len(pairs) <= 1000 else 30_000)
            # 30,000 uniform draws: the sample's mean within 5 standard errors of the exact one
            error = 5 * np.std([a for a, _ in pairs]) / np.sqrt(min(measured, len(pairs)))
            assert sampled[depth][f"mean_{key}_angle"] == pytest.approx(np.mean([a for a, _ in pairs]), abs=error)
            for frame in (table, sampled_table):
                rows = frame[(frame["depth"] == depth) & (frame["kind"] == kind)]
                assert len(rows) == min(50, measured)
                same = tree.parents[rows["node_a"]] == tree.parents[rows["node_b"]]
                assert same.all() if kind == "sibling" else not same.any()
    assert sampled == geometry.pair_angles(tree, vectors, max_pairs=50, limit=1000, sample=30_000)[1]  # seeded


def test_coinciding_embeddings_are_projected_to_numbers_or_refused_in_one_line():
    """A prediction file of identical images (the same embedding 30 times) gave t-SNE's PCA start no
    spread to scale by: NaN coordinates, written as empty cells. Every method now gives numbers."""

    x = np.tile(np.random.default_rng(0).normal(size=(1, 16)), (30, 1))
    vectors = np.random.default_rng(1).normal(size=(5, 16))
    for method in ("pca", "tsne"):
        xy, placed = project(x, method, class_vectors=vectors)
        assert xy.shape == (30, 2) and placed.shape == (5, 2)
        assert np.isfinite(xy).all() and np.isfinite(placed).all(), method
