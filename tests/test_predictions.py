"""Models trained elsewhere: ``hseval evaluate --predictions``.

End to end, a bare ``nn.Sequential`` that hseval did not build is trained on the small
Fashion-MNIST-like set, its outputs saved as .npz, .safetensors and .csv, evaluated next to hseval's
own runs, reported and opened in the dashboard, with each unavailable metric shown with its reason.
The reader is checked against the streaming metrics, and by hypothesis: any damage to a good file
is one line (``DataError``), never a traceback and never a silent change."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hseval.cli.main import main
from hseval.core.errors import DataError
from hseval.io.prediction_format import read_class_list, read_predictions
from hseval.io.results import load_evaluation
from hseval.metrics import HierarchicalMetrics, statistics
from hseval.tree import write_hierarchy
from tests.conftest import EVALUATED_RUNS
from tests.helpers import examples, fashion_tree, read_rows, unbalanced


def _sequential_outputs(fashion_like: Path) -> dict[str, np.ndarray]:
    """Train a plain two-layer network for a few steps with plain PyTorch; its test outputs."""
    from hseval.data import load_dataset

    data = load_dataset("fashion-mnist", str(fashion_like))
    torch.manual_seed(0)
    features = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 16), torch.nn.ReLU())
    classifier = torch.nn.Linear(16, 10)
    superclass = torch.nn.Linear(16, 3)  # the model's own level-1 scores
    tree = fashion_tree()
    level1 = torch.as_tensor(tree.ancestor_at_depth(np.arange(10), 1))
    position = {int(n): i for i, n in enumerate(tree.nodes_at_depth(1))}
    level1 = torch.tensor([position[int(n)] for n in level1])
    params = [*features.parameters(), *classifier.parameters(), *superclass.parameters()]
    optimizer = torch.optim.Adam(params, lr=3e-3)
    x = data.train.images.float() / 255
    y = torch.as_tensor(data.train.labels)
    for _ in range(60):
        z = features(x)
        loss = torch.nn.functional.cross_entropy(classifier(z), y) + \
            torch.nn.functional.cross_entropy(superclass(z), level1[y])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        z = features(data.test.images.float() / 255)
        return {"targets": data.test.labels.astype(np.int64), "logits": classifier(z).numpy(),
                "level_scores_1": superclass(z).numpy(), "embeddings": z.numpy(),
                "class_weights": classifier.weight.numpy()}


@pytest.fixture(scope="module")
def outputs(fashion_like, tmp_path_factory) -> tuple[Path, dict[str, np.ndarray]]:
    folder = tmp_path_factory.mktemp("foreign")
    arrays = _sequential_outputs(fashion_like)
    np.savez(folder / "mlp.npz", **arrays)
    write_hierarchy(fashion_tree(), folder / "tree.txt")
    return folder, arrays


def test_a_foreign_model_is_evaluated_reported_and_shown_beside_hseval_runs(outputs, evaluated, tmp_path,
                                                                            monkeypatch, capsys):
    from safetensors.numpy import save_file
    from streamlit.testing.v1 import AppTest

    folder, arrays = outputs
    tree = fashion_tree()
    out = tmp_path / "eval"
    shutil.copytree(evaluated, out)
    save_file({k: np.ascontiguousarray(v) for k, v in arrays.items() if k in ("targets", "logits")},
              str(tmp_path / "scores.safetensors"))
    pred = arrays["logits"].argmax(1)
    (tmp_path / "labels.csv").write_text("target,pred\n" + "".join(
        f"{tree.leaf_names[t]},{tree.leaf_names[p]}\n" for t, p in zip(arrays["targets"], pred)))
    common = ["--hierarchy", str(folder / "tree.txt"), "--dataset", "fashion-mnist", "--out", str(out)]
    assert main(["evaluate", "--predictions", str(folder / "mlp.npz"), "--head", "mlp", *common]) == 0
    assert main(["evaluate", "--predictions", str(tmp_path / "scores.safetensors"), "--name", "mlp-scores",
                 *common]) == 0
    assert main(["evaluate", "--predictions", str(tmp_path / "labels.csv"), "--name", "mlp-labels", *common]) == 0
    assert main(["report", str(out)]) == 0
    capsys.readouterr()

    evaluation = load_evaluation(out, strict=True)
    names = {r.name for r in evaluation.runs}
    assert names == {"mlp", "mlp-scores", "mlp-labels", *EVALUATED_RUNS}  # beside the hseval runs
    full, scores, labels = evaluation.run("mlp"), evaluation.run("mlp-scores"), evaluation.run("mlp-labels")
    reference = HierarchicalMetrics(tree, topk=(1, 5, 20))
    reference.update(arrays["logits"], arrays["targets"], {1: arrays["level_scores_1"]})
    expected = statistics.json_levels(reference.compute())  # metrics.json keys levels as JSON does
    for key in ("top1", "top5", "superclass_acc", "superclass_acc_from_levels", "mistake_severity", "ece",
                "hierarchical_f1"):
        got = full.metrics[key]  # JSON keeps an undefined value (NaN) as null
        assert (np.nan if got is None else got) == pytest.approx(expected[key], rel=1e-12, nan_ok=True), key
    assert full.metrics["geometry"]["node_vectors"] == "centroid" and len(full.geometry) == tree.num_nodes
    assert set(full.projections["kind"]) == {"sample", "class_vector"}
    beyond = {"top20", "avg_hdist@20", "best_hdist@20"}  # 10 classes: no top-20, said why
    assert beyond <= set(full.unavailable)
    assert all("no mistakes" in why for key, why in full.unavailable.items() if key not in beyond)  # values only
    assert scores.metrics["top1"] == full.metrics["top1"] and "projections" in scores.unavailable
    assert labels.metrics["top1"] == full.metrics["top1"] and "top5" not in labels.metrics
    assert labels.unavailable["top5"] == "the predictions give one class per sample, no scores"
    assert labels.unavailable["crm"] == "the predictions give one class per sample, no scores to re-rank"
    assert 0 <= full.metrics["crm"]["top1"] <= 1 and scores.metrics["crm"] == full.metrics["crm"]
    hseval_plain = evaluation.run("plain")
    assert "head 'plain' has no super-class scores" in hseval_plain.unavailable["superclass_acc_from_levels"]

    report = (out / "report.md").read_text()
    assert "| mlp-labels | external | " in report and "n/a" in report
    assert "the predictions file has no 'embeddings' (N, d)" in report
    assert "no scores" in (out / "report.html").read_text()

    monkeypatch.setenv("HSEVAL_EVAL_DIR", str(out))
    at = AppTest.from_file(str(Path(__file__).parents[1] / "app" / "main.py"), default_timeout=60).run()
    assert not at.exception, [e.message for e in at.exception]
    shown = {name for element in at.dataframe if "run" in element.value.columns
             for name in element.value["run"].tolist()}
    assert {"mlp", "mlp-labels", "plain"} <= shown
    reasons = next(e.value for e in at.dataframe if "reason" in e.value.columns)
    assert "the predictions give one class per sample, no scores" in set(reasons["reason"])
    for page in ("hierarchy", "geometry", "embeddings", "confusion", "compare"):
        at.switch_page(f"views/{page}.py").run()
        assert not at.exception, (page, [e.message for e in at.exception])


def test_re_evaluating_replaces_and_another_source_keeps_its_name(outputs, tmp_path):
    folder, arrays = outputs
    out = tmp_path / "eval"
    args = ["--hierarchy", str(folder / "tree.txt"), "--out", str(out), "--projections", "none"]
    assert main(["evaluate", "--predictions", str(folder / "mlp.npz"), *args]) == 0
    assert main(["evaluate", "--predictions", str(folder / "mlp.npz"), *args]) == 0
    other = tmp_path / "mlp.npz"
    np.savez(other, targets=arrays["targets"], logits=-arrays["logits"])
    assert main(["evaluate", "--predictions", str(other), *args]) == 2  # the name 'mlp' is taken by another file
    assert [e["run"] for e in json.loads((out / "index.json").read_text())["runs"]] == ["mlp"]


def test_classes_in_another_order_are_permuted_into_the_tree(outputs, tmp_path):
    _, arrays = outputs
    tree = fashion_tree()
    order = np.random.default_rng(0).permutation(10)  # model class i is tree leaf order[i]
    (tmp_path / "classes.txt").write_text("".join(f"{tree.leaf_names[i]}\n" for i in order))
    inverse = np.argsort(order)
    np.savez(tmp_path / "p.npz", targets=inverse[arrays["targets"]], logits=arrays["logits"][:, order],
             class_weights=arrays["class_weights"][order])
    got = read_predictions(tmp_path / "p.npz", tree, classes=read_class_list(tmp_path / "classes.txt", tree))
    np.testing.assert_array_equal(got.targets, arrays["targets"])
    np.testing.assert_allclose(got.scores, arrays["logits"])
    np.testing.assert_allclose(got.class_weights, arrays["class_weights"])


def test_csv_scores_names_and_indices_read_alike(tmp_path):
    tree = fashion_tree()
    rng = np.random.default_rng(1)
    targets = rng.integers(0, 10, 20)
    probs = rng.dirichlet(np.ones(10), 20)
    header = "target," + ",".join(f"prob_{i}" for i in range(10)) + "\n"
    rows = ["{},{}\n".format(t, ",".join(repr(float(p)) for p in row)) for t, row in zip(targets, probs)]
    (tmp_path / "idx.csv").write_text(header + "".join(rows))
    (tmp_path / "names.csv").write_text(header + "".join(f"{tree.leaf_names[t]}{r[r.index(','):]}"
                                                         for t, r in zip(targets, rows)))
    a, b = read_predictions(tmp_path / "idx.csv", tree), read_predictions(tmp_path / "names.csv", tree)
    assert a.kind == b.kind == "probs"  # the columns say so
    np.testing.assert_array_equal(a.targets, targets)
    np.testing.assert_array_equal(b.targets, targets)
    np.testing.assert_allclose(a.scores, probs)
    (tmp_path / "typo.csv").write_text("target,pred\nSneaker,Bag\nSneakr,Bag\n")
    with pytest.raises(DataError, match=r"typo.csv, line 3, column 'target': 'Sneakr' is not a class of the "
                                        r"hierarchy \(did you mean 'Sneaker'\?\)"):
        read_predictions(tmp_path / "typo.csv", tree)


# ---------------------------------------------------------------------- damage, by hypothesis
def _good(n: int = 12) -> dict[str, np.ndarray]:
    tree = fashion_tree()
    rng = np.random.default_rng(0)
    return {"targets": rng.integers(0, 10, n), "logits": rng.normal(size=(n, 10)),
            "level_scores_1": rng.normal(size=(n, len(tree.nodes_at_depth(1)))),
            "embeddings": rng.normal(size=(n, 4)), "class_weights": rng.normal(size=(10, 4))}


DAMAGE = st.sampled_from(["drop", "rename", "transpose", "truncate", "nan", "float_targets", "big_target",
                          "negative_target", "object", "scalar", "extra_column", "bool"])


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(member=st.sampled_from(sorted(_good())), damage=DAMAGE)
def test_any_damage_to_a_good_file_is_one_line_or_a_correct_read(tmp_path, member, damage):
    tree = fashion_tree()
    arrays = _good()
    value = arrays[member]
    if damage == "drop":
        del arrays[member]
    elif damage == "rename":
        arrays[member + "s"] = arrays.pop(member)
    elif damage == "transpose":
        arrays[member] = np.atleast_2d(value).T
    elif damage == "truncate":
        arrays[member] = value[:-1]
    elif damage == "nan":
        arrays[member] = np.where(np.arange(value.size).reshape(value.shape) == 3, np.nan, value.astype(float))
    elif damage == "float_targets":
        arrays[member] = value.astype(float) + 0.5
    elif damage == "big_target":
        arrays[member] = value + 10
    elif damage == "negative_target":
        arrays[member] = value - 20
    elif damage == "object":
        arrays[member] = value.astype(object)
    elif damage == "scalar":
        arrays[member] = np.float64(1.0)
    elif damage == "extra_column":
        arrays[member] = np.concatenate([np.atleast_2d(value.T).T, np.atleast_2d(value.T).T[:, :1]], axis=1)
    elif damage == "bool":
        arrays[member] = value > 0
    path = tmp_path / f"{member}-{damage}.npz"
    try:
        np.savez(path, **arrays)
    except ValueError:
        return
    try:
        got = read_predictions(path, tree)
        scores = read_rows(got)
    except DataError as exc:
        message = str(exc)
        assert "\n" not in message and message.startswith(str(path)), message
        return
    # accepted: a file that is still valid (an optional member dropped, other valid numbers), read exactly
    np.testing.assert_array_equal(got.targets, arrays["targets"])
    np.testing.assert_array_equal(scores, arrays["logits"])
    assert got.members == [m for m in ("targets", "logits", "level_scores_1", "embeddings", "class_weights")
                           if m in arrays]


FEATURE_VALUES = {"zero": lambda row: 0.0 * row, "tiny": lambda row: np.full_like(row, 1e-300),
                  "subnormal": lambda row: np.full_like(row, 5e-324),
                  "float32 max": lambda row: np.where(row >= 0, 1.0, -1.0) * float(np.finfo(np.float32).max),
                  "large": lambda row: row * 1e30, "negated": lambda row: -row,
                  "beyond float32": lambda row: row * 1e300}
"""What a row of an array of features may be set to: values the reader accepts (none of them a
NaN) or refuses in one line ("beyond float32")."""


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(member=st.sampled_from(["embeddings", "class_weights"]), value=st.sampled_from(sorted(FEATURE_VALUES)),
       rows=st.lists(st.integers(0, 9), min_size=1, max_size=10, unique=True))
def test_features_the_reader_accepts_are_evaluated_and_read_back(tmp_path, member, value, rows):
    """The kind of a zero class vector that was read, evaluated, and then refused on reading its
    own evaluation back (its pair angles were NaN, written as empty cells): whatever values of the
    embeddings or class vectors the reader accepts, evaluate writes an evaluation that reads back,
    with no pair angle left empty; the values it refuses are one line, before anything is written."""
    folder = Path(tempfile.mkdtemp(dir=tmp_path))  # one per example: the test's tmp_path is shared
    arrays = _good(n=40)
    arrays[member] = arrays[member].copy()
    for row in rows:
        arrays[member][row] = FEATURE_VALUES[value](arrays[member][row])
    np.savez(folder / "model.npz", **arrays)
    write_hierarchy(fashion_tree(), folder / "tree.txt")
    out = folder / "eval"
    code = main(["evaluate", "--predictions", str(folder / "model.npz"), "--hierarchy", str(folder / "tree.txt"),
                 "--projections", "pca", "--out", str(out)])
    if value == "beyond float32":
        assert code == 2 and not out.exists()
        return
    assert code == 0
    evaluation = load_evaluation(out).runs[0]  # every file read back, checked
    assert np.isfinite(evaluation.pair_angles["angle"].to_numpy(float)).all()
    assert np.isfinite(evaluation.embeddings()["embeddings"]).all()


def _good_csv(scores: bool) -> str:
    tree = fashion_tree()
    rng = np.random.default_rng(2)
    if not scores:
        return "target,pred\n" + "".join(f"{tree.leaf_names[a]},{tree.leaf_names[b]}\n"
                                         for a, b in rng.integers(0, 10, (8, 2)))
    header = "target," + ",".join(f"logit_{i}" for i in range(10)) + "\n"
    return header + "".join(f"{t}," + ",".join(f"{v:.3f}" for v in rng.normal(size=10)) + "\n"
                            for t in rng.integers(0, 10, 8))


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scores=st.booleans(), position=st.floats(0, 1), edit=st.sampled_from(["delete", "insert", "duplicate_line",
                                                                             "drop_header", "truncate"]),
       char=st.sampled_from([",", "\n", "\r", '"', "x", "-", "1", "\x00", "é", " ", "\t"]))
def test_any_edit_of_a_csv_is_one_line_or_a_consistent_read(tmp_path, scores, position, edit, char):
    text = _good_csv(scores)
    at = int(position * len(text))
    if edit == "delete":
        text = text[:at] + text[at + 1:]
    elif edit == "insert":
        text = text[:at] + char + text[at:]
    elif edit == "duplicate_line":
        lines = text.splitlines(keepends=True)
        k = 1 + int(position * (len(lines) - 2))
        text = "".join(lines[: k + 1] + lines[k:])
    elif edit == "drop_header":
        text = text.split("\n", 1)[1]
    else:
        text = text[:at]
    path = tmp_path / "p.csv"
    path.write_bytes(text.encode("utf-8"))
    tree = fashion_tree()
    try:
        got = read_predictions(path, tree)
    except DataError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(path)), str(exc)
        return
    n = len(got.targets)
    assert n >= 1 and got.targets.min() >= 0 and got.targets.max() < 10
    if got.kind == "labels":
        assert len(got.predictions) == n and got.predictions.max() < 10
    else:
        assert got.scores.shape == (n, 10) and np.isfinite(got.scores).all()


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(position=st.floats(0, 1), value=st.integers(0, 255), cut=st.booleans())
def test_damaged_safetensors_is_one_line_or_a_consistent_read(tmp_path, position, value, cut):
    from safetensors.numpy import save

    good = _good()
    data = bytearray(save({"targets": good["targets"], "logits": good["logits"]}))
    at = int(position * (len(data) - 1))
    if cut:
        data = data[:at]
    else:
        data[at] = value
    path = tmp_path / "p.safetensors"
    path.write_bytes(bytes(data))
    try:
        got = read_predictions(path, fashion_tree())
        scores = read_rows(got)
    except DataError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(path)), str(exc)
        return
    assert scores.shape == (len(got.targets), 10) and np.isfinite(scores).all()


# ---------------------------------------------------------------------- every combination of members
def _combinations() -> list[tuple[str, ...]]:
    """Every set of members a prediction file may hold: logits or probabilities, with or without
    the model's own level scores, embeddings, and class or node weights (the README's list)."""
    out = []
    for scores in ("logits", "probs"):
        for levels in ((), ("level_scores_1",)):
            for embeddings in ((), ("embeddings",)):
                for weights in ((), ("class_weights",), ("node_weights",)):
                    out.append((scores, *levels, *embeddings, *weights))
    return out


@pytest.mark.slow  # seconds each: the fast lane keeps units and contracts
def test_every_documented_combination_is_evaluated_reported_and_exported(tmp_path, capsys):
    """None is refused by evaluate's own checks (``targets`` + ``logits`` + ``class_weights``
    without embeddings once was); the report and the export take the folder they make."""
    tree = fashion_tree()
    write_hierarchy(tree, tmp_path / "tree.json")
    rng = np.random.default_rng(0)
    n, dim = 30, 6
    logits = rng.normal(size=(n, 10))
    arrays = {"targets": np.arange(n) % 10, "logits": logits,
              "probs": np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True),
              "level_scores_1": rng.normal(size=(n, len(tree.nodes_at_depth(1)))),
              "embeddings": rng.normal(size=(n, dim)), "class_weights": rng.normal(size=(10, dim)),
              "node_weights": rng.normal(size=(tree.num_nodes, dim))}
    out = tmp_path / "ev"
    for k, members in enumerate(_combinations()):
        np.savez(tmp_path / f"c{k}.npz", targets=arrays["targets"], **{m: arrays[m] for m in members})
        capsys.readouterr()
        code = main(["evaluate", "--predictions", str(tmp_path / f"c{k}.npz"), "--hierarchy",
                     str(tmp_path / "tree.json"), "--out", str(out), "--projections", "none"])
        assert code == 0, (members, capsys.readouterr().err)
    assert len(load_evaluation(out).runs) == len(_combinations()) == 24
    assert main(["report", str(out)]) == 0
    assert main(["export", str(out), str(tmp_path / "tb"), "--to", "tensorboard"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 12 and all("left out of the export: it holds no sampled embeddings" in e for e in err), err


GENERIC = "not computed by this evaluation"


def _shown_cells(out: Path) -> list[str]:
    """Every cell of every table of the report and of the dashboard's Overview of ``out``."""
    from hseval.reporting.summary import level_table, mark_unavailable, summary_table

    runs = load_evaluation(out, strict=True).runs
    frames = [mark_unavailable(summary_table(runs), runs), mark_unavailable(level_table(runs), runs)]
    return [str(v) for frame in frames for v in frame.to_numpy().ravel()]


def test_every_metric_the_report_shows_says_why_it_is_missing(tmp_path):
    """For every metric the report and the Overview show, an evaluation where it is not a number
    says why, where it was decided, never the generic line: top-5 of 5 classes, no mistakes (also
    CRM's), no sample at a level, predicted classes only, probabilities, no embeddings, equal class
    vectors, a tree whose classes are all equally far apart."""
    from hseval.tree.hierarchy import Hierarchy

    tree = unbalanced()  # 5 classes at depths 1, 2 and 4: levels 1-3
    write_hierarchy(tree, tmp_path / "tree.txt")
    z = tree.leaf_names.index("z")  # the class at depth 1: no sample reaches levels 2 and 3
    targets = np.full(12, z)
    logits = np.zeros((12, 5))
    logits[:, z] = 9.0  # every sample right
    levels = {f"level_scores_{k}": np.random.default_rng(k).normal(size=(12, tree.nodes_per_depth[k - 1]))
              for k in range(1, tree.max_depth)}
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "right.npz", targets=targets, logits=logits, embeddings=rng.normal(size=(12, 4)),
             class_weights=rng.normal(size=(5, 4)), **levels)
    probs = rng.dirichlet(np.ones(5), 12)
    weights = np.tile(rng.normal(size=4), (5, 1))  # every class the same vector: a dendrogram of one height
    np.savez(tmp_path / "probs.npz", targets=rng.integers(0, 5, 12), probs=probs, class_weights=weights)
    (tmp_path / "labels.csv").write_text("target,pred\n" + "".join(f"{t},{(t + i) % 5}\n"
                                                                    for i, t in enumerate(rng.integers(0, 5, 12))))
    flat = Hierarchy([f"c{i}" for i in range(6)], [-1] * 6, 6)
    write_hierarchy(flat, tmp_path / "flat.txt")
    np.savez(tmp_path / "flat.npz", targets=np.arange(12) % 6, logits=rng.normal(size=(12, 6)),
             class_weights=rng.normal(size=(6, 4)))
    for name, tree_file, out in (("right.npz", "tree.txt", "eval"), ("probs.npz", "tree.txt", "eval"),
                                 ("labels.csv", "tree.txt", "eval"), ("flat.npz", "flat.txt", "flat")):
        assert main(["evaluate", "--predictions", str(tmp_path / name), "--hierarchy", str(tmp_path / tree_file),
                     "--out", str(tmp_path / out), "--projections", "none"]) == 0
    for out in ("eval", "flat"):
        assert main(["report", str(tmp_path / out)]) == 0
        text = "\n".join([(tmp_path / out / "report.md").read_text(), *_shown_cells(tmp_path / out)])
        assert GENERIC not in text and "n/a — " in text
    text = (tmp_path / "eval" / "report.md").read_text()
    for reason in ("top-5 needs more than 5 classes", "every sample is right", "no sample's class lies at level 2",
                   "no tree agreement: the class vectors' dendrogram", "no scores", "gives probabilities, not logits",
                   "has no 'embeddings'"):
        assert reason in text, reason
    assert "equally far apart in the tree" in (tmp_path / "flat" / "report.md").read_text()
