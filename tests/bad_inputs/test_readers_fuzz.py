"""Property tests: random bytes, random trees and random edits of real files fed to every reader of
user files. A reader returns a value or raises one of hseval's own errors (:class:`HsevalError`,
one line); any other exception is a bug. ``EXAMPLES`` holds the number of examples of each test
(the whole file runs in well under a minute on 2 cores)."""

from __future__ import annotations

import copy
import hashlib
import json
import math
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hseval.core.errors import HierarchyError, HsevalError
from hseval.tree import FORMATS, read_hierarchy, write_hierarchy
from hseval.tree.hierarchy import Hierarchy
from tests.bad_inputs.builders import sealed
from tests.helpers import examples, reseal, trees

EXAMPLES = {
    "hierarchy_bytes": 300, "hierarchy_text": 300, "hierarchy_mutated": 200, "nbdt_json": 150,
    "run_json_bytes": 100, "run_json_edits": 150, "safetensors": 100, "idx": 300, "pickle": 300,
    "evaluation": 150, "report": 40, "config": 200,
}
SUPPRESS = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large]


def fuzz(name: str):
    return settings(max_examples=examples(EXAMPLES[name]), deadline=None, suppress_health_check=SUPPRESS,
                    derandomize=True)


def one_line(exc: HsevalError) -> None:
    assert "\n" not in str(exc) and "Traceback" not in str(exc), str(exc)


@pytest.fixture(scope="module")
def scratch():
    folder = Path(tempfile.mkdtemp(prefix="hseval-fuzz-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def read_or_error(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except HsevalError as exc:
        one_line(exc)
        return None


# ------------------------------------------------------------------ JSON values, including the awkward ones
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.sampled_from([10**30, -1, 0, 1, 2]),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
                    st.sampled_from(["", "root", "²", "٣", "a\tb", "1e400", "riemann", "plain", "small-cnn"]))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                           st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                           max_leaves=12)


def paths_of(obj, prefix=()):
    """Every (key path) inside a JSON document, the root included."""
    yield prefix
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from paths_of(value, (*prefix, key))
    elif isinstance(obj, list):
        for k, value in enumerate(obj[:20]):
            yield from paths_of(value, (*prefix, k))


def replaced(doc, path, value):
    if not path:
        return value
    doc = copy.deepcopy(doc)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


# ------------------------------------------------------------------ hierarchy files
def read_hierarchy_all_ways(path: Path) -> None:
    for fmt in (None, *FORMATS.names()):
        tree = read_or_error(read_hierarchy, path, format=fmt)
        assert tree is None or isinstance(tree, Hierarchy)


@fuzz("hierarchy_bytes")
@given(data=st.binary(max_size=400), suffix=st.sampled_from([".txt", ".json"]))
def test_hierarchy_reader_on_random_bytes(scratch, data, suffix):
    path = scratch / f"tree{suffix}"
    path.write_bytes(data)
    read_hierarchy_all_ways(path)


tokens = st.sampled_from(["0", "1", "2", "3", "10", "-1", "007", "99999999999", "a", "b", "root", "x/y", "\\/",
                          "/", "#", "{", "}", "[", "]", '"id"', ":", ",", "\t", " ", "٣", "1" * 30])
lines = st.lists(tokens, max_size=5).map(" ".join)


@fuzz("hierarchy_text")
@given(body=st.lists(lines, max_size=12), suffix=st.sampled_from([".txt", ".json"]), names=st.booleans())
def test_hierarchy_reader_on_random_lines(scratch, body, suffix, names):
    path = scratch / f"tree{suffix}"
    path.write_text("\n".join(body), encoding="utf-8")
    sidecar = scratch / f"tree{suffix}.names.tsv"
    if names:
        sidecar.write_text("\n".join(f"{k}\t{line}" for k, line in enumerate(body)), encoding="utf-8")
    try:
        read_hierarchy_all_ways(path)
    finally:
        sidecar.unlink(missing_ok=True)


@fuzz("hierarchy_mutated")
@given(tree=trees(max_leaves=12), fmt=st.sampled_from(FORMATS.names()),
       edit=st.sampled_from(["none", "drop", "duplicate", "swap", "truncate", "append", "columns"]),
       where=st.integers(0, 10**6), extra=lines)
def test_hierarchy_reader_on_edited_real_files(scratch, tree, fmt, edit, where, extra):
    """A tree written in each format reads back; with one line dropped, repeated, swapped, cut or
    added, it reads or gives a HierarchyError; with its two columns swapped, a pairs, isa or
    child-parent file of two classes or more never reads as a tree, and the error says so."""
    if fmt in ("isa", "child-parent") and any(len(n.split()) != 1 for n in tree.node_names):
        return
    path = scratch / ("tree.json" if fmt == "nbdt" else "tree.txt")
    write_hierarchy(tree, path, format=fmt)
    if edit == "none":
        again = read_hierarchy(path, classes=tree.leaf_names if fmt == "isa" else None)
        assert again.stats() == tree.stats()
        return
    text = path.read_text(encoding="utf-8")
    rows = text.splitlines()
    k = where % max(len(rows), 1)
    if edit == "drop":
        rows = rows[:k] + rows[k + 1:]
    elif edit == "duplicate":
        rows = rows[:k + 1] + rows[k:]
    elif edit == "swap" and len(rows) > 1:
        rows[k], rows[k - 1] = rows[k - 1], rows[k]
    elif edit == "append":
        rows.insert(k, extra)
    elif edit == "columns":
        rows = [" ".join(row.split()[::-1]) if len(row.split()) == 2 and row[0] != "#" else row for row in rows]
    text = "\n".join(rows)
    if edit == "truncate":
        text = text[: where % max(len(text), 1)]
    path.write_text(text, encoding="utf-8")
    if edit == "columns" and fmt in ("pairs", "isa", "child-parent") and tree.num_leaves >= 2:
        with pytest.raises(HierarchyError, match=r"; the columns look swapped \((child parent|parent child)\): "):
            read_hierarchy(path, format=fmt)
    read_or_error(read_hierarchy, path, format=fmt)
    read_or_error(read_hierarchy, path)


@fuzz("nbdt_json")
@given(doc=st.one_of(json_values, st.fixed_dictionaries({
    "nodes": st.lists(st.one_of(json_values, st.fixed_dictionaries({"id": scalars}, optional={"label": scalars})),
                      max_size=6),
    "links": st.lists(st.one_of(json_values, st.fixed_dictionaries({"source": scalars, "target": scalars})),
                      max_size=6)})))
def test_nbdt_reader_on_random_json(scratch, doc):
    path = scratch / "tree.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    read_or_error(read_hierarchy, path)
    read_or_error(read_hierarchy, path, classes=["a", "b"])


# ------------------------------------------------------------------ runs
@pytest.fixture(scope="module")
def run_copy(good, scratch):
    from hseval.io.run_format import load_run

    run = Path(shutil.copytree(good.run, scratch / "run"))
    original = {name: (run / name).read_bytes() for name in ("run.json", "model.safetensors")}
    load_run(run)  # the intact copy loads
    return run, original


def restore(run: Path, original: dict[str, bytes]) -> None:
    for name, data in original.items():
        (run / name).write_bytes(data)


def load_or_error(run: Path) -> None:
    from hseval.io.run_format import load_run

    read_or_error(load_run, run)


@fuzz("run_json_bytes")
@given(data=st.binary(max_size=300))
def test_load_run_on_random_run_json_bytes(run_copy, data):
    run, original = run_copy
    restore(run, original)
    (run / "run.json").write_bytes(data)
    load_or_error(run)


@fuzz("run_json_edits")
@given(where=st.integers(0, 10**6), value=json_values)
def test_load_run_with_one_value_of_run_json_replaced(run_copy, where, value):
    """Any one value of a real run.json (the model spec, the tree, the checksums...) replaced by a
    random JSON value, NaN, infinities and 70-bit integers included, and the metadata checksum
    updated (as a user who knows the format would): the model is built from the edited spec and
    the tensors checked against it."""
    run, original = run_copy
    restore(run, original)
    meta = json.loads(original["run.json"])
    interesting = [p for p in paths_of(meta) if not (p and p[0] in ("history", "training", "versions"))]
    path = interesting[where % len(interesting)]
    (run / "run.json").write_text(json.dumps(sealed(replaced(meta, path, value))), encoding="utf-8")
    load_or_error(run)


@fuzz("safetensors")
@given(edits=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), min_size=1, max_size=6),
       cut=st.one_of(st.none(), st.integers(0, 2000)), garbage=st.one_of(st.none(), st.binary(max_size=200)))
def test_load_run_on_damaged_safetensors_with_a_matching_checksum(run_copy, edits, cut, garbage):
    """Bytes of the header changed, the file cut or replaced, and the checksum in run.json updated
    so that the safetensors parser and the tensor checks see the damage."""
    run, original = run_copy
    restore(run, original)
    data = bytearray(original["model.safetensors"] if garbage is None else garbage)
    for position, byte in edits:
        if position < len(data):
            data[position] = byte
    if cut is not None:
        data = data[:cut]
    (run / "model.safetensors").write_bytes(bytes(data))
    meta = json.loads(original["run.json"])
    meta["model_sha256"] = hashlib.sha256(bytes(data)).hexdigest()
    (run / "run.json").write_text(json.dumps(sealed(meta)), encoding="utf-8")
    load_or_error(run)


# ------------------------------------------------------------------ IDX and CIFAR pickles
idx_headers = st.builds(lambda dtype, ndim, dims: bytes([0, 0, dtype, ndim]) + b"".join(
    d.to_bytes(4, "big") for d in dims[:ndim]), st.sampled_from([0x08, 0x09, 0x0B, 0x0C, 0x0D, 0x0E, 0x07]),
    st.integers(0, 4), st.lists(st.sampled_from([0, 1, 2, 3, 28, 2**31, 2**32 - 1]), min_size=4, max_size=4))


@fuzz("idx")
@given(header=st.one_of(st.just(b""), idx_headers), body=st.binary(max_size=64), gz=st.booleans(),
       cut=st.one_of(st.none(), st.integers(0, 40)))
def test_idx_reader(scratch, header, body, gz, cut):
    import gzip

    from hseval.data.idx import read_idx

    data = header + body
    if gz:
        data = gzip.compress(data)
    if cut is not None:
        data = data[:cut]
    path = scratch / "file-idx1-ubyte"
    path.write_bytes(data)
    array = read_or_error(read_idx, path)
    assert array is None or isinstance(array, np.ndarray)


def real_cifar_pickle() -> bytes:
    from tests.fake_datasets import py2_pickle

    return py2_pickle({"data": np.arange(2 * 3072, dtype=np.uint8).reshape(2, 3072) % 251, "fine_labels": [0, 1],
                       "coarse_labels": [4, 1], "batch_label": "test"})


@fuzz("pickle")
@given(edits=st.lists(st.tuples(st.integers(0, 300), st.integers(0, 255)), max_size=4),
       cut=st.one_of(st.none(), st.integers(0, 400)), garbage=st.one_of(st.none(), st.binary(max_size=200)))
def test_cifar_unpickler(scratch, edits, cut, garbage):
    """Random bytes and damaged copies of a real CIFAR pickle: an object built from plain data, or
    a DataError; never a call outside the allowed names."""
    from hseval.data.pickles import load_pickle

    data = bytearray(real_cifar_pickle() if garbage is None else garbage)
    for position, byte in edits:
        if position < len(data):
            data[position] = byte
    if cut is not None:
        data = data[:cut]
    path = scratch / "train"
    path.write_bytes(bytes(data))
    read_or_error(load_pickle, path)


# ------------------------------------------------------------------ evaluation folders
@pytest.fixture(scope="module")
def evaluation_copy(good, scratch):
    folder = Path(shutil.copytree(good.evaluation, scratch / "eval"))
    (run,) = [p for p in folder.iterdir() if p.is_dir()]
    return folder, run, {p.name: p.read_bytes() for p in run.iterdir()}


@fuzz("evaluation")
@given(target=st.sampled_from(["metrics.json", "per_node.csv", "geometry.csv", "pair_angles.csv", "projections.csv",
                               "predictions.npz"]),
       data=st.one_of(st.binary(max_size=300), st.text(max_size=200).map(str.encode)),
       where=st.integers(0, 10**6), value=json_values, mode=st.sampled_from(["bytes", "top-level value",
                                                                             "nested value"]))
def test_load_evaluation_and_its_tables(evaluation_copy, target, data, where, value, mode):
    """Random bytes in one file of an evaluated run, or one value of its metrics.json replaced, and
    the marker's checksums updated: loading the folder, its tables (what ``hseval report`` and the
    dashboard show) and the predictions give results or hseval errors."""
    from hseval.io.results import load_evaluation
    from hseval.reporting.summary import grouped_summary, level_table, summary_table

    folder, run = damage_evaluation(evaluation_copy, target, data, where, value, mode)
    evaluation = read_or_error(load_evaluation, folder)
    if evaluation is None:
        return
    for result in evaluation.runs:
        for attribute in ("per_node", "geometry", "pair_angles", "projections", "targets", "topk"):
            read_or_error(getattr, result, attribute)
    for table in (summary_table, grouped_summary, level_table):
        read_or_error(table, evaluation.runs)


def damage_evaluation(evaluation_copy, target, data, where, value, mode):
    folder, run, original = evaluation_copy
    for name, content in original.items():
        (run / name).write_bytes(content)
    for name in ("summary.csv", "report.html"):
        (folder / name).unlink(missing_ok=True)
    if mode != "bytes":
        target = "metrics.json"
        metrics = json.loads(original[target])
        paths = [p for p in paths_of(metrics) if (len(p) == 1) == (mode == "top-level value")]
        data = json.dumps(replaced(metrics, paths[where % len(paths)], value)).encode()
    (run / target).write_bytes(data)
    reseal(run)  # past the checksums, to the readers themselves
    return folder, run


@fuzz("report")
@given(target=st.sampled_from(["metrics.json", "per_node.csv", "geometry.csv", "pair_angles.csv", "projections.csv",
                               "predictions.npz"]),
       data=st.binary(max_size=200), where=st.integers(0, 10**6), value=json_values,
       mode=st.sampled_from(["bytes", "top-level value", "top-level value", "nested value"]))
def test_report_on_a_damaged_evaluation(evaluation_copy, target, data, where, value, mode):
    """``hseval report`` end to end (tables, figures, the HTML page) on a damaged evaluation: it
    writes its files, or raises an hseval error having written none of them."""
    from hseval.reporting.report import write_report

    folder, _ = damage_evaluation(evaluation_copy, target, data, where, value, mode)
    written = read_or_error(write_report, folder)
    assert (folder / "report.html").exists() == (written is not None)


# ------------------------------------------------------------------ training recipes
settings_keys = st.sampled_from(["data", "model", "optim", "engine", "extends", "recipe", "data.batch_size",
                                 "batch_size", "lr", "epochs", "milestones", "head_options", "threads", "device",
                                 "train_subset", "dataset", "", "1"])
recipes = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(settings_keys, inner, max_size=4)),
                       max_leaves=10)


@fuzz("config")
@given(doc=st.one_of(recipes, st.fixed_dictionaries({}, optional={
    "data": st.dictionaries(settings_keys, recipes, max_size=3), "optim": st.dictionaries(settings_keys, recipes),
    "model": st.dictionaries(settings_keys, recipes, max_size=3), "engine": st.dictionaries(settings_keys, recipes),
    "extends": st.sampled_from(["paper", "fashion-mnist", "recipe.yaml", "nope", "../x"])})),
    raw=st.one_of(st.none(), st.binary(max_size=200)), overrides=st.lists(
        st.builds("{}={}".format, settings_keys, st.text(max_size=8)), max_size=2))
def test_load_config_on_random_yaml(scratch, doc, raw, overrides):
    import yaml

    from hseval.train.config import TrainConfig, load_config

    path = scratch / "recipe.yaml"
    if raw is not None:
        path.write_bytes(raw)
    else:
        path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    config = read_or_error(load_config, str(path), overrides)
    if config is not None:
        assert isinstance(config, TrainConfig)
        assert config.data.batch_size >= 1 and math.isfinite(config.optim.epochs)
