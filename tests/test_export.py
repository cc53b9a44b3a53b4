"""``hseval export EVAL_DIR --to tensorboard OUT``, read back with TensorBoard's own readers: the
projector config parsed by protobuf into ``ProjectorConfig``, the tensors by the projector plugin's
TSV reader; the metadata checked row by row against the run's tree.

Most tests export a small evaluation written through :func:`hseval.evaluation.writer.write_evaluation`
(the writer ``hseval evaluate`` uses, every file checked on the way), which takes milliseconds and
lets a test choose odd names and empty embeddings; one exports the real pipeline's ``evaluated``.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hseval.cli.main import main
from hseval.core.errors import HsevalWarning
from hseval.evaluation.stages import EvaluationContent, ScoreAccumulator
from hseval.evaluation.writer import evaluation_folder, write_evaluation
from hseval.io import evaluation_format as eval_format
from hseval.io import folders as ownership
from hseval.io.results import load_evaluation
from hseval.reporting.tensorboard import metadata_rows, pbtxt_string, tsv_cell
from hseval.tree.hierarchy import Hierarchy
from tests.conftest import EVALUATED_RUNS

tensorboard = pytest.importorskip("tensorboard", reason="reading the export back needs TensorBoard "
                                                        "(pip install -e '.[dev]')")
from google.protobuf import text_format  # noqa: E402  (tensorboard's dependency)
from tensorboard.plugins.projector import projector_plugin  # noqa: E402
from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig  # noqa: E402

ODD = Hierarchy.from_paths([("fruit \"ripe\"", "apple\\pie"), ("fruit \"ripe\"", "# orange"),
                            ("animäl 🐈", "cat's", "tabby,  striped"), ("animäl 🐈", "dog"), ("-lone",)])
"""Quotes, a backslash, '#', a comma, double spaces, non-ASCII, a leaf at depth 1 and one at depth 3."""


def write_evaluated_run(folder: Path, tree: Hierarchy, *, samples: int = 12, dim: int = 5,
                        vectors: bool = True, seed: int = 0) -> Path:
    """One evaluated run with random embeddings, written and sealed as ``hseval evaluate`` does."""
    rng = np.random.default_rng(seed)
    L, P = tree.num_leaves, tree.num_nodes
    targets = (np.arange(samples) % L).astype(np.int64)
    topk = np.stack([(targets + k) % L for k in range(min(3, L))], axis=1) if samples else np.zeros((0, 1), np.int64)
    topk[::3, 0] = (topk[::3, 0] + 1) % L  # some mistakes
    support = np.bincount(targets, minlength=L)
    correct = np.bincount(targets[topk[:, 0] == targets], minlength=L)
    per_node = pd.DataFrame({
        "node": np.arange(P), "name": list(tree.node_names), "depth": tree.depth,
        "parent": [([*tree.node_names, tree.root_name])[p] for p in tree.parents],
        "is_leaf": np.arange(P) < L,  # super-classes: no support of their own (enough for the checks)
        "support": [*support, *[0] * (P - L)], "correct": [*correct, *[0] * (P - L)]})
    with np.errstate(invalid="ignore", divide="ignore"):
        per_node["accuracy"] = np.where(per_node["support"] > 0, per_node["correct"] / per_node["support"], np.nan)
    geometry = pd.DataFrame(columns=[c.name for c in eval_format.TABLES[eval_format.GEOMETRY].columns])
    pairs = pd.DataFrame(columns=[c.name for c in eval_format.TABLES[eval_format.PAIRS].columns])
    projections = pd.DataFrame(columns=["method", "kind", "x", "y", "label",
                                        *(f"level{d}" for d in range(1, tree.max_depth)), "correct", "index"])
    emb = rng.normal(size=(samples, dim)).astype(np.float32)
    node_vectors = rng.normal(size=(P, dim)).astype(np.float32) if vectors and dim else np.zeros((0, 0), np.float32)
    metrics = {"top1": float((topk[:, 0] == targets).mean()) if samples else 0.0, "head": "riemann",
               "dataset": "toy", "samples": samples, "hierarchy": tree.to_dict()}
    content = EvaluationContent(folder.name, "elsewhere", {}, tree, metrics={**metrics, "unavailable": {}}, tables={
        eval_format.PER_NODE: per_node, eval_format.GEOMETRY: geometry, eval_format.PAIRS: pairs,
        eval_format.PROJECTIONS: projections}, arrays={
        eval_format.EMBEDDINGS: {"embeddings": emb, "labels": targets, "predictions": topk[:, 0],
                                 "indices": np.arange(samples), "node_vectors": node_vectors},
        eval_format.PREDICTIONS: {"targets": targets, "topk": topk,
                                  "levels": np.full((samples, tree.max_depth - 1), -1, np.int64),
                                  "indices": np.arange(samples), "confidence": np.zeros(0), "nll": np.zeros(0)}})
    scores = ScoreAccumulator(tree, softmax=None, rules=["leaf"])  # the classes' decisions, as evaluate has them
    if samples:
        scores.update_labels(topk[:, 0], targets)
    scores.decisions.write(content, probabilities="given", labels_only=scores.crm_skipped)
    with evaluation_folder(folder.parent, inputs=[], names=[folder.name]) as root:
        write_evaluation(root, content)
    return folder


def read_export(out: Path) -> dict[str, tuple[np.ndarray, list[list[str]]]]:
    """Per embedding of ``projector_config.pbtxt``: (tensors, metadata rows), read as TensorBoard does."""
    config = text_format.Parse((out / "projector_config.pbtxt").read_text(encoding="utf-8"), ProjectorConfig())
    found = {}
    for embedding in config.embeddings:
        for path in (embedding.tensor_path, embedding.metadata_path):
            assert not Path(path).is_absolute() and (out / path).is_file(), path
        tensors = projector_plugin._read_tensor_tsv_file(str(out / embedding.tensor_path))
        lines = (out / embedding.metadata_path).read_text(encoding="utf-8").split("\n")
        assert lines[-1] == ""
        found[embedding.tensor_name] = (tensors, [line.split("\t") for line in lines[:-1]])
    return found


def check_run(tensors: np.ndarray, rows: list[list[str]], run) -> None:
    """Tensors and metadata of one exported run against its ``RunResult``."""
    arrays, tree = run.embeddings(), run.hierarchy
    emb, vectors = arrays["embeddings"], arrays["node_vectors"]
    n, k = len(emb), tree.max_depth - 1
    with_vectors = vectors.size > 0
    assert tensors.dtype == np.float32
    assert tensors.shape == (n + (tree.num_nodes if with_vectors else 0), emb.shape[1])
    np.testing.assert_array_equal(tensors[:n], emb.astype(np.float32))
    if with_vectors:
        np.testing.assert_array_equal(tensors[n:], vectors.astype(np.float32))
    header, body = rows[0], rows[1:]
    assert header == ["kind", "class", *(f"level {d}" for d in range(1, k + 1)), "correct"]
    assert len(body) == len(tensors) and all(len(r) == len(header) for r in body)
    for i, row in enumerate(body):
        node = int(arrays["labels"][i]) if i < n else i - n
        path = tree.path_names(node)
        assert row[0] == ("sample" if i < n else "class_vector")
        assert row[1] == tree.node_names[node]
        assert row[2:2 + k] == [path[d] if d < len(path) else "" for d in range(k)]
        expected = str(bool(arrays["predictions"][i] == arrays["labels"][i])) if i < n else ""
        assert row[-1] == expected


def export(eval_dir: Path, out: Path, capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["export", str(eval_dir), "--to", "tensorboard", str(out)])
    return code, capsys.readouterr().err


# ---------------------------------------------------------------------- the real pipeline
def test_export_of_a_real_evaluation_reads_back_in_tensorboard(evaluated, tmp_path, capsys):
    out = tmp_path / "tb"
    code, err = export(evaluated, out, capsys)
    assert code == 0, err
    found = read_export(out)
    evaluation = load_evaluation(evaluated)
    assert sorted(found) == sorted(r.name for r in evaluation.runs) == EVALUATED_RUNS
    for run in evaluation.runs:
        check_run(*found[run.name], run)
    assert found["riemann"][0].shape == (200 + 13, 128)  # the riemann head's class vectors are points too
    assert ownership.kind_of(out) == "export"


# ---------------------------------------------------------------------- small evaluations
@pytest.fixture
def odd_eval(tmp_path) -> Path:
    """Two runs of the odd tree (one with class vectors, one without); the second run's folder
    name holds a quote, a backslash, a tab, a line feed and non-ASCII."""
    root = tmp_path / "eval"
    write_evaluated_run(root / "with vectors", ODD, seed=1)
    write_evaluated_run(root / "no \"vectors\" \\ \t\n é", ODD, vectors=False, samples=7, dim=3, seed=2)
    return root


def test_odd_names_read_back_exactly(odd_eval, tmp_path, capsys):
    out = tmp_path / "tb"
    code, err = export(odd_eval, out, capsys)
    assert code == 0, err
    found = read_export(out)
    evaluation = load_evaluation(odd_eval)
    assert sorted(found) == sorted(r.name for r in evaluation.runs)  # the pbtxt escapes read back as written
    for run in evaluation.runs:
        check_run(*found[run.name], run)
    assert found["with vectors"][0].shape == (12 + ODD.num_nodes, 5)
    assert found["no \"vectors\" \\ \t\n é"][0].shape == (7, 3)
    assert (out / "projector_config.pbtxt").read_bytes().isascii()
    rows = found["with vectors"][1]
    assert rows[0] == ["kind", "class", "level 1", "level 2", "correct"]  # the odd tree is 3 deep
    lone = next(r for r in rows if r[1] == "-lone")
    assert lone[2:4] == ["-lone", ""]  # a class at depth 1: no ancestor at depth 2


def test_cells_and_strings_are_escaped():
    assert tsv_cell("a\tb\nc\rd") == "a b c d"
    tree = Hierarchy.from_paths([("s", "x"), ("y",)])
    rows = metadata_rows(tree, np.array([0, 1]), np.array([0, 0]), vector_nodes=3)
    assert rows == [["kind", "class", "level 1", "correct"], ["sample", "x", "s", "True"],
                    ["sample", "y", "y", "False"], ["class_vector", "x", "s", ""], ["class_vector", "y", "y", ""],
                    ["class_vector", "s", "s", ""]]
    for text in ("plain", 'q"uote', "back\\slash", "tab\there", "line\nfeed", "ünï 🐈", "'", "\x00\x7f"):
        literal = pbtxt_string(text)
        assert literal.isascii() and "\n" not in literal
        config = text_format.Parse(f"embeddings {{ tensor_name: {literal} }}", ProjectorConfig())
        assert config.embeddings[0].tensor_name == text


def test_a_run_without_embeddings_is_warned_and_left_out(tmp_path, capsys):
    root = tmp_path / "eval"
    write_evaluated_run(root / "full", ODD)
    write_evaluated_run(root / "empty", ODD, samples=0)
    write_evaluated_run(root / "flat", ODD, dim=0)
    out = tmp_path / "tb"
    code, err = export(root, out, capsys)
    assert code == 0, err
    assert err.splitlines() == [
        f"hseval: warning: {root / 'empty'}: left out of the export: it holds no sampled embeddings (0 samples)",
        f"hseval: warning: {root / 'flat'}: left out of the export: its embeddings have dimension 0"]
    assert list(read_export(out)) == ["full"]
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["full", "projector_config.pbtxt"]

    shutil.rmtree(root / "full")
    code, err = export(root, tmp_path / "none", capsys)
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("hseval: error: ")  # no warning repeats it
    assert "no evaluated run has embeddings to export (empty: it holds no sampled embeddings" in err
    assert not (tmp_path / "none").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left


def test_refuses_a_foreign_folder_and_replaces_its_own_export(odd_eval, tmp_path, capsys):
    mine = tmp_path / "mine"
    (mine / "thesis.tex").parent.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    code, err = export(odd_eval, mine, capsys)
    assert code == 2
    assert err.strip() == (f"hseval: error: {mine}: is not empty and was not written by hseval as an export of an "
                           f"evaluation folder (hseval export) (it holds 'thesis.tex'); choose a new or empty OUT")
    assert [p.name for p in mine.iterdir()] == ["thesis.tex"]
    (mine / "thesis.tex").unlink()
    (mine / ".git").mkdir()  # hidden files count: the export would replace the folder and lose them
    assert export(odd_eval, mine, capsys)[0] == 2 and [p.name for p in mine.iterdir()] == [".git"]

    out = tmp_path / "tb"
    out.mkdir()  # an empty folder is taken
    assert export(odd_eval, out, capsys)[0] == 0
    shutil.rmtree(odd_eval / "with vectors")
    code, err = export(odd_eval, out, capsys)  # a re-export replaces what the earlier export wrote
    assert code == 0, err
    assert not (out / "with vectors").exists()
    assert list(read_export(out)) == ["no \"vectors\" \\ \t\n é"]
    assert set(ownership.read_marker(out).files) == {"projector_config.pbtxt", *(
        f"no \"vectors\" \\ \t\n é/{name}" for name in ("tensors.tsv", "metadata.tsv"))}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]

    # a file the user added to the export (not recorded in its marker) is never deleted: refused
    (out / "notes.md").write_text("my notes")
    (out / "no \"vectors\" \\ \t\n é" / "mine.txt").write_text("mine too")
    before = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    code, err = export(odd_eval, out, capsys)
    mine = "no \"vectors\" \\ \t\n é/mine.txt"
    assert code == 2 and err.strip() == (f"hseval: error: {out}: holds {mine!r}, 'notes.md', which hseval did not "
                                         "write there, so it will not replace the folder; move them out or choose "
                                         "another OUT")
    assert {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_unknown_format_and_evaluation_folder_errors(odd_eval, tmp_path, capsys):
    capsys.readouterr()
    assert main(["export", str(odd_eval), "--to", "csv", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip() == ("hseval: error: --to 'csv': unknown export format; choose from "
                                               "tensorboard")
    code, err = export(tmp_path / "nowhere", tmp_path / "out", capsys)
    assert code == 2 and "nowhere: no such evaluation folder" in err
    assert not (tmp_path / "out").exists()


def test_writing_does_not_import_tensorboard(odd_eval, tmp_path):
    import subprocess
    import sys

    code = ("import sys; sys.modules['tensorboard'] = None; sys.modules['google.protobuf'] = None\n"
            "from hseval.cli.main import main\n"
            f"sys.exit(main(['export', {str(odd_eval)!r}, '--to', 'tensorboard', {str(tmp_path / 'tb')!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).parents[1])
    assert done.returncode == 0, done.stderr
    with warnings.catch_warnings():
        warnings.simplefilter("error", HsevalWarning)
        assert len(read_export(tmp_path / "tb")) == 2


def test_the_export_help_names_every_format():
    """The CLI names the formats without importing their module (pandas): its help must follow them."""
    from hseval.cli.main import build_parser
    from hseval.reporting.tensorboard import FORMATS

    export = build_parser()._subparsers._group_actions[0].choices["export"]
    assert all(name in export.format_help() for name in FORMATS)
