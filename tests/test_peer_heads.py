"""The peers (HXE, soft labels, Barz & Denzler, NBDT) against numbers computed with their authors'
code (``tests/fixtures/peers/README.md`` says how), and against brute force on trees their code
cannot take (classes at different depths). Float64 throughout."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import hseval
from hseval.cli.main import main
from hseval.cli.train_plan import plan_runs
from hseval.core.errors import ConfigError
from hseval.evaluation.stages import probability_metrics
from hseval.io.results import load_evaluation
from hseval.metrics import hierarchical_distance
from hseval.metrics.geometry import node_vectors
from hseval.nn.heads import create_head, list_heads
from hseval.nn.heads.barz_denzler import class_embeddings
from hseval.nn.heads.lca import TargetBuckets, bucket_sizes, top_chain
from hseval.tree.hierarchy import Hierarchy
from tests.fake_datasets import write_image
from tests.helpers import fashion_tree, random_tree, unbalanced

FIXTURES = Path(__file__).parent / "fixtures"
MBM = json.loads((FIXTURES / "peers" / "making_better_mistakes.json").read_text())
NBDT = json.loads((FIXTURES / "peers" / "nbdt.json").read_text())
BD = json.loads((FIXTURES / "peers" / "barz_denzler.json").read_text())
BD_TREES = json.loads((FIXTURES / "peers" / "barz_denzler_trees.json").read_text())
# the uniform-depth tree of the reference cases (nltk: (root (A (A1 x0 x1) (A2 x2 x3 x4)) (B (B1 x5 x6) (B2 x7)) ...))
EDGES = [("root", "A"), ("root", "B"), ("root", "C"), ("A", "A1"), ("A", "A2"), ("B", "B1"), ("B", "B2"), ("C", "C1"),
         ("A1", "x0"), ("A1", "x1"), ("A2", "x2"), ("A2", "x3"), ("A2", "x4"), ("B1", "x5"), ("B1", "x6"), ("B2", "x7"),
         ("C1", "x8"), ("C1", "x9")]


def reference_tree() -> Hierarchy:
    return Hierarchy.from_edges(EDGES, classes=MBM["classes"])


def on_logits(name: str, tree: Hierarchy, **options):
    """Head ``name`` whose linear layer is the identity, in float64: its input is the logits."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # the head's constants too
    try:
        head = create_head(name, tree, tree.num_leaves, **options)
    finally:
        torch.set_default_dtype(default)
    with torch.no_grad():
        head.classifier.weight.copy_(torch.eye(tree.num_leaves, dtype=torch.float64))
    return head


def loss_and_grad(head, logits, target):
    x = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
    loss, _ = head.loss(x, torch.tensor(target))
    loss.backward()
    return loss.item(), x.grad


@pytest.mark.parametrize("alpha", [0.1, 0.5])
def test_hxe_equals_making_better_mistakes(alpha):
    """Their edge weights are divided by Z, the sum of exp(−α·depth) over every node and the root;
    hseval's are not (see hseval.nn.heads.hxe): its loss and gradient are Z times theirs."""
    ref, tree = MBM[f"hxe_alpha{alpha:g}"], reference_tree()
    z = 1 + np.exp(-alpha * tree.depth).sum()
    loss, grad = loss_and_grad(on_logits("hxe", tree, alpha=alpha), MBM["logits"], MBM["targets"])
    assert loss == pytest.approx(ref["loss"] * z, abs=1e-6)
    torch.testing.assert_close(grad, torch.tensor(ref["grad"], dtype=torch.float64) * z, atol=1e-6, rtol=0)


def test_hxe_with_alpha_zero_is_the_cross_entropy():
    tree = random_tree(30, seed=1)
    logits = torch.randn(8, tree.num_leaves, dtype=torch.float64)
    target = torch.randint(0, tree.num_leaves, (8,))
    loss, _ = on_logits("hxe", tree, alpha=0.0).loss(logits, target)
    assert loss.item() == pytest.approx(F.cross_entropy(logits, target).item(), abs=1e-12)


@pytest.mark.parametrize("beta", [4.0, 10.0])
def test_soft_labels_equal_making_better_mistakes(beta):
    """Their loss is nn.KLDivLoss() ('mean': over batch and classes) of their soft targets; hseval's
    is the batch mean of the cross-entropy: |L| times theirs plus the targets' entropy, and |L|
    times their gradient."""
    ref, classes = MBM[f"soft_beta{beta:g}"], len(MBM["classes"])
    head = on_logits("soft-labels", reference_tree(), beta=beta)
    targets = torch.tensor(ref["targets"], dtype=torch.float64)
    ours = head.table[MBM["targets"]]  # by bucket: back to one probability per class
    buckets = head.buckets(torch.tensor(MBM["targets"]))
    torch.testing.assert_close(ours.gather(1, buckets), targets, atol=1e-12, rtol=0)
    loss, grad = loss_and_grad(head, MBM["logits"], MBM["targets"])
    entropy = -(targets * targets.log()).sum(1).mean().item()
    assert loss == pytest.approx(ref["kl_mean"] * classes + entropy, abs=1e-6)
    torch.testing.assert_close(grad, torch.tensor(ref["grad"], dtype=torch.float64) * classes, atol=1e-6, rtol=0)


def _hxe_by_paths(tree: Hierarchy, logits: torch.Tensor, target: torch.Tensor, alpha: float) -> torch.Tensor:
    """HXE summed edge by edge along each class's own path (brute force, any depths)."""
    p = logits.softmax(1)
    losses = []
    for row, y in zip(p, target.tolist()):
        total, above = 0.0, 1.0
        for node in tree.path(y):
            mass = row[torch.as_tensor(tree.subtree_leaves(node))].sum()
            total = total - np.exp(-alpha * tree.depth[node]) * torch.log(mass / above)
            above = mass
        losses.append(total)
    return torch.stack(losses).mean()


@pytest.mark.parametrize("tree", [fashion_tree(), unbalanced(), random_tree(40, seed=3)], ids=["fashion", "unbalanced",
                                                                                                "random"])
def test_hxe_on_uneven_trees_is_the_sum_over_each_class_path(tree):
    assert len(set(tree.depth[: tree.num_leaves].tolist())) > 1  # classes at several depths
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(16, tree.num_leaves, generator=g, dtype=torch.float64) * 3
    target = torch.randint(0, tree.num_leaves, (16,), generator=g)
    head = on_logits("hxe", tree, alpha=0.3)
    x = logits.clone().requires_grad_(True)
    loss, _ = head.loss(x, target)
    loss.backward()
    y = logits.clone().requires_grad_(True)
    brute = _hxe_by_paths(tree, y, target, 0.3)
    brute.backward()
    assert loss.item() == pytest.approx(brute.item(), abs=1e-12)
    torch.testing.assert_close(x.grad, y.grad, atol=1e-12, rtol=0)


def test_hxe_keeps_far_subtrees_finite():
    """A target 1,000 below the best class: its probability underflows in any softmax, its loss
    does not."""
    tree = fashion_tree()
    head = on_logits("hxe", tree, alpha=0.1).float()
    x = torch.zeros(1, tree.num_leaves)
    x[0, 0] = 1000.0
    x.requires_grad_(True)
    loss, _ = head.loss(x, torch.tensor([tree.num_leaves - 1]))
    loss.backward()
    assert torch.isfinite(loss) and loss.item() > 10 and torch.isfinite(x.grad).all()


@pytest.mark.parametrize("tree", [fashion_tree(), unbalanced(), random_tree(60, seed=5)], ids=["fashion", "unbalanced",
                                                                                                "random"])
def test_soft_labels_match_the_distance_matrix(tree):
    """Any depths: the soft target of every class pair is softmax(−β·d/max d) over the dense
    distance matrix of hseval.metrics.hierarchical_distance."""
    classes = np.arange(tree.num_leaves)
    d = hierarchical_distance(classes[:, None], classes[None, :], tree).astype(np.float64)
    dense = torch.softmax(torch.tensor(-4.0 * d / d.max()), dim=1)
    head = on_logits("soft-labels", tree, beta=4.0)
    target = torch.as_tensor(classes)
    buckets = head.buckets(target)
    torch.testing.assert_close(head.table[target].gather(1, buckets), dense, atol=1e-12, rtol=0)
    logits = torch.randn(tree.num_leaves, tree.num_leaves, dtype=torch.float64, requires_grad=True)
    loss, _ = head.loss(logits, target)
    expected = -(dense * logits.log_softmax(1)).sum(1).mean()
    assert loss.item() == pytest.approx(expected.item(), abs=1e-12)


def test_buckets_are_where_each_class_meets_the_target_path():
    tree = random_tree(80, seed=2)
    classes = np.arange(tree.num_leaves)
    depth = tree.depth[classes][:, None]
    meet = np.where(classes[:, None] == classes[None, :], depth, tree.lca_depth(classes[:, None], classes[None, :]))
    expected = depth - meet
    buckets = TargetBuckets(tree)(torch.as_tensor(classes)).numpy()
    np.testing.assert_array_equal(buckets, expected)
    sizes = bucket_sizes(tree)
    for u in range(tree.max_depth + 1):
        np.testing.assert_array_equal(sizes[:, u], (buckets == u).sum(1))


def test_top_chain_counts_the_nodes_every_class_shares():
    assert top_chain(fashion_tree()) == 0
    chain = Hierarchy.from_paths([["all", "life", "cat"], ["all", "life", "dog"], ["all", "rock"]])
    assert top_chain(chain) == 1
    classes = np.arange(chain.num_leaves)
    d = hierarchical_distance(classes[:, None], classes[None, :], chain)
    assert d.max() == chain.max_depth - top_chain(chain)


def lcs_height_similarity(tree: Hierarchy) -> np.ndarray:
    """(|L|, |L|) Barz & Denzler's class similarity by brute force: 1 − h(LCA)/h(root), h a node's
    longest way down to a class, read off every class's path."""
    height = {-1: tree.max_depth}
    for c in range(tree.num_leaves):
        path = tree.path(c)
        for k, node in enumerate(path):
            height[node] = max(height.get(node, 0), len(path) - 1 - k)
    classes = np.arange(tree.num_leaves)
    lca = tree.lca(classes[:, None].repeat(tree.num_leaves, 1), classes[None, :].repeat(tree.num_leaves, 0))
    return 1 - np.vectorize(height.__getitem__)(lca) / tree.max_depth


def head_gram(tree: Hierarchy) -> torch.Tensor:
    """The Gram matrix of the head's class embeddings: with the map the identity, its class vectors
    Mᵀφ(c) are the embeddings φ(c) themselves, built by the head's path sums."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # its scale too
    try:
        head = create_head("barz-denzler", tree, tree.num_nodes)
    finally:
        torch.set_default_dtype(default)
    with torch.no_grad():
        head.map.weight.copy_(torch.eye(tree.num_nodes, dtype=torch.float64))
    vectors = head.class_weights()  # (|P|, |L|)
    return vectors.t() @ vectors


def test_barz_denzler_gram_equals_their_embedding():
    tree = Hierarchy.from_edges(EDGES, classes=BD["classes_small"])
    emb = class_embeddings(tree)
    np.testing.assert_allclose(emb @ emb.T, np.array(BD["gram_small"]), atol=1e-12, rtol=0)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize("name", sorted(BD_TREES))
def test_barz_denzler_gram_equals_their_code_on_uneven_trees_and_top_chains(name):
    """Their ``compute_class_embedding.py --method unitsphere`` (1 − lcs_height) on classes at several
    depths and under a single-child chain at the top, where 1 − (H − depth(LCA))/max d is not theirs."""
    ref = BD_TREES[name]
    tree = Hierarchy.from_edges([tuple(edge) for edge in ref["edges"]], classes=ref["classes"])
    if name == "fashion_mnist":
        assert tree == fashion_tree()
    gram = np.array(ref["gram"])
    np.testing.assert_allclose(gram, np.array(ref["similarity"]), atol=1e-12, rtol=0)
    emb = class_embeddings(tree)
    np.testing.assert_allclose(emb @ emb.T, gram, atol=1e-12, rtol=0)
    np.testing.assert_allclose(head_gram(tree).numpy(), gram, atol=1e-12, rtol=0)


def test_barz_denzler_top_chain_is_shared_by_every_pair():
    """Issue: under a chain at the top every cross pair had similarity 0; theirs is the chain's share."""
    sim = np.array(BD_TREES["top_chain"]["similarity"])  # classes x, y (under a), z; the root's one child: all
    np.testing.assert_allclose(sim, [[1, 2 / 3, 1 / 3], [2 / 3, 1, 1 / 3], [1 / 3, 1 / 3, 1]], atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_barz_denzler_gram_is_the_lcs_height_similarity_on_random_trees(seed):
    tree = random_tree(30, seed, max_depth=5)
    np.testing.assert_allclose(head_gram(tree).numpy(), lcs_height_similarity(tree), atol=1e-12, rtol=0)


def test_barz_denzler_gram_equals_making_better_mistakes_inaturalist19_embeddings():
    """Their shipped embeddings (1,010 classes, 1,010 dimensions), compared through the Gram matrix
    (hseval's embedding is another basis of the same space)."""
    tree = hseval.read_hierarchy(FIXTURES / "hierarchies" / "inaturalist19_isa.txt")
    ref = BD["inaturalist19"]
    assert tree.num_leaves == ref["classes"] and ref["norm_min"] == pytest.approx(1, abs=1e-12)
    emb = class_embeddings(tree)
    for i, j, value in ref["gram_pairs"]:
        assert emb[i] @ emb[j] == pytest.approx(value, abs=1e-12)
    np.testing.assert_allclose(emb @ emb.T, lcs_height_similarity(tree), atol=1e-12, rtol=0)


@pytest.mark.parametrize("tree", [fashion_tree(), unbalanced(),
                                  Hierarchy.from_paths([["all", "a", "x"], ["all", "a", "y"], ["all", "z"]])],
                         ids=["fashion", "unbalanced", "top-chain"])
def test_barz_denzler_scores_are_cosines_to_the_fixed_embeddings(tree):
    head = create_head("barz-denzler", tree, 8).double()
    emb = torch.as_tensor(class_embeddings(tree))  # (|L|, |P|): a coordinate per node
    assert head.map.out_features == tree.num_nodes
    z = torch.randn(5, 8, dtype=torch.float64)
    mapped = head.map(z)
    expected = F.cosine_similarity(mapped[:, None, :], emb[None, :, :], dim=2)
    torch.testing.assert_close(head(z), expected)
    norms = torch.linalg.vector_norm(mapped, dim=1, keepdim=True)
    torch.testing.assert_close(z @ head.class_weights(), expected * norms)  # class vectors Mᵀφ(c)
    target = torch.tensor([0, 1, 2, 0, 1])
    loss, _ = head.loss(z, target)
    xent = F.cross_entropy(head.map(z)[:, : tree.num_leaves], target)  # hseval's class coordinates, not MBM's basis
    assert loss.item() == pytest.approx((1 - expected[torch.arange(5), target]).mean().item() + 0.1 * xent.item())


def _nbdt_reference():
    tree = hseval.read_hierarchy(FIXTURES / "hierarchies" / "CIFAR10_graph-induced-ResNet18.json")
    assert list(tree.leaf_names) == NBDT["wnids_leaves"]  # the logits' columns are NBDT's classes in this order
    return tree, torch.tensor(NBDT["logits"], dtype=torch.float64), torch.tensor(NBDT["targets"])


def test_nbdt_soft_inference_equals_soft_nbdt():
    tree, logits, _ = _nbdt_reference()
    head = on_logits("nbdt", tree)
    torch.testing.assert_close(head(logits).exp(), torch.tensor(NBDT["probs"], dtype=torch.float64), atol=1e-12,
                               rtol=0)


@pytest.mark.parametrize("weight", [1.0, 10.0])
def test_nbdt_loss_equals_soft_tree_sup_loss(weight):
    tree, logits, target = _nbdt_reference()
    loss, grad = loss_and_grad(on_logits("nbdt", tree, tree_weight=weight), logits.tolist(), target.tolist())
    assert loss == pytest.approx(NBDT[f"loss_tsw{weight:g}"], abs=1e-9)
    torch.testing.assert_close(grad, torch.tensor(NBDT[f"grad_tsw{weight:g}"], dtype=torch.float64), atol=1e-9, rtol=0)


@pytest.mark.parametrize("tree", [fashion_tree(), unbalanced(), random_tree(50, seed=4)], ids=["fashion", "unbalanced",
                                                                                                "random"])
def test_nbdt_path_probabilities_by_brute_force(tree):
    """Any tree: a node's probability is the product of the softmax decisions over the mean class
    logits of its ancestors' children; the classes' sum to 1, and so does every level's."""
    head = on_logits("nbdt", tree)
    logits = torch.randn(3, tree.num_leaves, dtype=torch.float64) * 2

    def mean_logit(node):
        return logits[:, torch.as_tensor(tree.subtree_leaves(node))].mean(1)

    expected = torch.ones(3, tree.num_nodes, dtype=torch.float64)
    for node in range(tree.num_nodes):
        for step in tree.path(node):
            parent = tree.parents[step]
            siblings = tree.children[parent]
            scores = torch.stack([mean_logit(s) for s in siblings], dim=1)
            expected[:, node] *= scores.softmax(1)[:, siblings.index(step)]
    torch.testing.assert_close(head(logits).exp(), expected[:, : tree.num_leaves])
    for depth, level in head.level_logits(logits).items():
        torch.testing.assert_close(level.exp(), expected[:, tree.nodes_at_depth(depth)])
    nodes, kind = node_vectors(head)  # NBDT's inner-node vectors: the mean of the class vectors below
    assert kind == "centroid"
    for node in range(tree.num_nodes):
        np.testing.assert_allclose(nodes[node], head.class_weights()[:, tree.subtree_leaves(node)].mean(1).numpy())


@pytest.mark.parametrize(("name", "options", "message"), [
    ("hxe", {"alpha": -0.1}, r"head 'hxe': option 'alpha' must be >= 0, got -0.1"),
    ("hxe", {"alpha": 80.5}, r"head 'hxe': option 'alpha' must be <= 80, got 80.5"),
    ("hxe", {"alpha": float("nan")}, r"head 'hxe': option 'alpha' must be a finite number"),
    ("soft-labels", {"beta": 0.0}, r"head 'soft-labels': option 'beta' must be > 0"),
    ("soft-labels", {"beta": float("inf")}, r"head 'soft-labels': option 'beta' must be a finite number"),
    ("barz-denzler", {"xent_weight": -1.0}, r"head 'barz-denzler': option 'xent_weight' must be >= 0"),
    ("nbdt", {"tree_weight": float("inf")}, r"head 'nbdt': option 'tree_weight' must be a finite number"),
])
def test_peer_options_out_of_range(name, options, message):
    with pytest.raises(ConfigError, match=message):
        create_head(name, fashion_tree(), 8, **options)


@pytest.mark.parametrize("name", ["soft-labels", "barz-denzler"])
def test_a_tree_of_one_class_is_refused_naming_the_method(name):
    with pytest.raises(ConfigError, match=rf"head '{name}' needs a tree of two classes or more"):
        create_head(name, Hierarchy(["only", "group"], [1, -1], 1), 8)


# ---------------------------------------------------------------------- on the command line
def _plan(heads: str) -> list[str]:
    return [head for head, _, _ in plan_runs(argparse.Namespace(heads=heads, seeds=None, sweep=[]))]


def test_heads_take_groups_and_names():
    assert _plan("peers") == ["hxe", "soft-labels", "barz-denzler", "nbdt"]
    assert _plan("paper") == list_heads("paper") and len(_plan("paper")) == 8
    assert _plan("all") == list_heads() and len(_plan("all")) == 12
    assert _plan("paper,nbdt") == [*list_heads("paper"), "nbdt"]
    with pytest.raises(ConfigError, match="two runs would be written to 'hxe'"):
        _plan("peers,hxe")
    with pytest.raises(ConfigError, match="unknown head 'peer'; choose one of plain"):
        _plan("peer")


@pytest.mark.parametrize(("head", "option", "message"), [
    ("hxe", "alpha=-0.5", "head 'hxe': option 'alpha' must be >= 0, got -0.5"),
    ("soft-labels", "beta=0", "head 'soft-labels': option 'beta' must be > 0, got 0"),
    ("nbdt", "tree_weight=-1", "head 'nbdt': option 'tree_weight' must be >= 0, got -1"),
    ("barz-denzler", "xent_weight=.nan", "model.head_options.xent_weight must be a finite number"),
])
def test_an_option_out_of_range_is_one_line_before_anything_is_written(fashion_like, tmp_path, capsys, head, option,
                                                                       message):
    code = main(["train", "--head", head, "--data-root", str(fashion_like), "--set", f"model.head_options.{option}",
                 "--quiet", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("head", ["soft-labels", "barz-denzler"])
def test_a_tree_a_peer_cannot_use_is_refused_before_training(tmp_path, capsys, head):
    data = tmp_path / "data"
    for split in ("train", "test"):
        for k in range(2):
            write_image(data / split / "tabby" / f"{k}.jpg")
    (tmp_path / "one.txt").write_text("animal/cat/tabby\n")
    code = main(["train", "--head", head, "--dataset", "image-folder", "--data-root", str(data), "--hierarchy",
                 str(tmp_path / "one.txt"), "--backbone", "small-cnn", "--set", "data.batch_size=2", "--quiet",
                 "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and f"head '{head}' needs a tree of two classes or more" in err
    assert not (tmp_path / "run").exists()


def test_barz_denzler_scores_are_no_probabilities_in_its_evaluation(evaluated):
    runs = {run.head: run for run in load_evaluation(evaluated).runs}
    cosine, nbdt = runs["barz-denzler"], runs["nbdt"]
    for key in probability_metrics():
        assert key not in cosine.metrics and "cosine similarities, whose softmax is no probability" in \
            cosine.unavailable[key]
    assert cosine.metrics["method"]["citation"].startswith("Barz & Denzler")
    # NBDT's own super-class scores are its path probabilities: "own scores" at every level
    assert set(nbdt.metrics["superclass_acc_from_levels"]) == {"1", "2"} and "ece" in nbdt.metrics


@pytest.mark.parametrize("name", list_heads("peers"))
def test_peer_losses_pass_gradcheck_in_float64(name):
    tree = unbalanced()
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        head = create_head(name, tree, 6)
    finally:
        torch.set_default_dtype(default)
    z = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    target = torch.tensor([0, 1, 2, 4])
    assert torch.autograd.gradcheck(lambda x: head.loss(x, target)[0], (z,))


@pytest.mark.parametrize("name", list_heads("peers"))
def test_peer_losses_stay_float32_under_bf16_autocast(name):
    head = create_head(name, fashion_tree(), 16)
    z = torch.randn(8, 16, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss, logits = head.loss(z.bfloat16(), torch.arange(8))
    loss.backward()
    assert loss.dtype == torch.float32 and torch.isfinite(loss) and torch.isfinite(z.grad).all()
    assert logits.shape == (8, 10)


def test_buckets_count_past_255_levels():
    """A chain 300 levels deep (uint8 counts would wrap): a class meets its sibling at depth 300."""
    names, parents = ["x", "y"], [2, 2]
    for k in range(300):
        names.append(f"n{k}")
        parents.append(len(names) if k < 299 else -1)
    tree = Hierarchy(names, parents, 2)
    buckets = TargetBuckets(tree)(torch.tensor([0, 1]))
    assert tree.max_depth == 301 and buckets.tolist() == [[0, 1], [1, 0]]
