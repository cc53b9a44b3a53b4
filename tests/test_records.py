"""The typed records of hseval's files: the JSON Schemas in docs/schemas/ are current and fit the
files hseval writes, and the records refuse what the hand-written checks before them let through
(unknown keys, a value of the wrong type anywhere, a non-finite setting), each with one line
naming the file and the field."""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import re
import sys
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from hseval.core.errors import ConfigError, RunFormatError
from hseval.io import evaluation_format as eval_format
from hseval.io.folders import MARKER
from hseval.io.records import validation_line
from hseval.io.run_format import HISTORY_FILE, META_FILE, meta_checksum, read_run_meta
from hseval.io.tables import HISTORY, read_table, write_history
from hseval.train.config import load_config
from tests.helpers import examples

ROOT = Path(__file__).resolve().parents[1]
SUPPRESS = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


def _schemas_script():
    spec = importlib.util.spec_from_file_location("json_schemas", ROOT / "scripts" / "json_schemas.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["json_schemas"] = module
    spec.loader.exec_module(module)
    return module


def test_the_committed_json_schemas_are_current():
    """docs/schemas/ holds one schema per record, as ``python scripts/json_schemas.py`` writes it."""
    script = _schemas_script()
    assert sorted(p.name for p in script.FOLDER.glob("*.json")) == sorted(f"{n}.schema.json" for n in script.SCHEMAS)
    for name in script.SCHEMAS:
        committed = (script.FOLDER / f"{name}.schema.json").read_text(encoding="utf-8")
        assert committed == script.schema_text(name), f"docs/schemas/{name}.schema.json is stale: run " \
                                                      "'python scripts/json_schemas.py'"


def test_the_files_hseval_writes_fit_the_shipped_schemas(evaluated):
    """Another tool checking hseval's files with the shipped schemas accepts what hseval wrote."""
    schema = {name: json.loads((ROOT / "docs" / "schemas" / f"{name}.schema.json").read_text()) for name in
              ("run", "metrics", "index", "folder-marker")}
    runs = sorted(p for p in (evaluated.parent / "runs").iterdir() if p.is_dir())
    assert runs
    for run in runs:
        jsonschema.validate(json.loads((run / META_FILE).read_text()), schema["run"])
    for folder in sorted(p for p in evaluated.iterdir() if p.is_dir()):
        jsonschema.validate(json.loads((folder / eval_format.METRICS).read_text()), schema["metrics"])
    jsonschema.validate(json.loads((evaluated / eval_format.INDEX_FILE).read_text()), schema["index"])
    markers = [*evaluated.parent.rglob(MARKER)]
    assert {json.loads(m.read_text())["kind"] for m in markers} >= {"run", "runs", "evaluations", "evaluation"}
    for marker in markers:
        jsonschema.validate(json.loads(marker.read_text()), schema["folder-marker"])


def paths_of(doc, prefix=()):
    """Every key path inside a JSON document, the root's () included (lists: their first 20 items)."""
    yield prefix
    items = doc.items() if isinstance(doc, dict) else enumerate(doc[:20]) if isinstance(doc, list) else ()
    for key, value in items:
        yield from paths_of(value, (*prefix, key))


def _get(doc, path):
    for key in path:
        doc = doc[key]
    return doc


def replaced(doc, path, value):
    doc = copy.deepcopy(doc)
    _get(doc, path[:-1])[path[-1]] = value
    return doc


def _re(text: str) -> str:
    return re.escape(text) + "'"


def _field(path: tuple) -> str:
    """A key path as the error lines write it: ``history[0].lr``."""
    return "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path).lstrip(".")


def _other_type(value):
    return "text" if isinstance(value, (bool, int, float)) or value is None else 12345


def _scalars(doc, free: tuple[tuple, ...]) -> list[tuple]:
    """Paths to the scalars of ``doc`` outside the free-form mappings ``free`` (by path prefix)."""
    return [p for p in paths_of(doc) if p and not isinstance(_get(doc, p), (dict, list))
            and not any(p[:len(f)] == f for f in free)]


@pytest.fixture(scope="module")
def run_json(evaluated) -> dict:
    return json.loads((evaluated.parent / "runs" / "riemann" / META_FILE).read_text())


@settings(max_examples=examples(120), deadline=None, suppress_health_check=SUPPRESS, derandomize=True)
@given(where=st.integers(0, 10**6))
def test_every_value_of_run_json_is_typed(run_json, tmp_path, where):
    """Any scalar of a real run.json (outside the free-form settings: the training config and the
    model's options) given a value of another type, checksum updated, is refused with one line
    naming it. The hand-written checks looked at six keys and let the rest through."""
    free = (("training",), ("model", "backbone", "config"), ("model", "head", "config"), ("meta_sha256",))
    paths = _scalars(run_json, free)
    path = paths[where % len(paths)]
    meta = replaced(run_json, path, _other_type(_get(run_json, path)))
    meta["meta_sha256"] = meta_checksum(meta)
    run = tmp_path / f"run-{where}"
    run.mkdir()
    (run / META_FILE).write_text(json.dumps(meta))
    with pytest.raises(RunFormatError, match=r"run.json: '" + _re(_field(path))) as info:
        read_run_meta(run)
    assert "\n" not in str(info.value)


@pytest.fixture(scope="module")
def metrics_json(evaluated) -> bytes:
    return (evaluated / "riemann" / eval_format.METRICS).read_bytes()


@settings(max_examples=examples(120), deadline=None, suppress_health_check=SUPPRESS, derandomize=True)
@given(where=st.integers(0, 10**6))
def test_every_value_of_metrics_json_is_typed(metrics_json, where):
    """The same for metrics.json: its tree too is typed now (``Hierarchy.from_dict`` alone took a
    number as a name, or "3" as a count)."""
    doc = json.loads(metrics_json)
    paths = _scalars(doc, (("training",),))
    path = paths[where % len(paths)]
    data = json.dumps(replaced(doc, path, _other_type(_get(doc, path)))).encode()
    with pytest.raises(RunFormatError, match=r"metrics.json: '" + _re(_field(path))):
        eval_format.read_metrics(Path("metrics.json"), data)


@settings(max_examples=examples(80), deadline=None, suppress_health_check=SUPPRESS, derandomize=True)
@given(where=st.integers(0, 10**6), key=st.sampled_from(["zz", "Top1", "median", "note", "x1"]))
def test_an_unknown_key_in_metrics_json_is_refused(metrics_json, where, key):
    """A key added to any object of metrics.json (outside the free-form training config, the
    reasons of ``unavailable`` and the data's identity, ``trained_on``, to which a dataset may add
    facts of its own) is refused, naming it: the hand-written checks dropped it unseen."""
    doc = json.loads(metrics_json)
    objects = [p for p in paths_of(doc) if isinstance(_get(doc, p), dict) and p[:1] not in (("training",),
                                                                                            ("unavailable",),
                                                                                            ("trained_on",))]
    path = objects[where % len(objects)]
    edited = replaced(doc, path, {**_get(doc, path), key: 0.5}) if path else {**doc, key: 0.5}
    with pytest.raises(RunFormatError, match=r"metrics.json: unknown key '" + _re(_field((*path, key)))):
        eval_format.read_metrics(Path("metrics.json"), json.dumps(edited).encode())


histories = st.integers(1, 6).flatmap(lambda n: st.lists(st.fixed_dictionaries(
    {"lr": st.floats(0, 1), "train_loss": st.floats(0, 1e6), "train_acc": st.floats(0, 1),
     "images_per_s": st.floats(0, 1e6), "seconds": st.floats(0, 1e4)},
    optional={"test_loss": st.floats(0, 1e3), "test_acc": st.floats(0, 1), "test_samples": st.integers(0, 2**40),
              "feature_norm": st.floats(0, 1e3), "test_superclass_acc": st.dictionaries(
                  st.sampled_from(["1", "2", "10"]), st.one_of(st.none(), st.floats(0, 1)), min_size=1)}),
    min_size=n, max_size=n))


@settings(max_examples=examples(60), deadline=None, suppress_health_check=SUPPRESS)
@given(history=histories)
def test_history_csv_reads_back_to_run_json_history(tmp_path, history):
    """history.csv (written every epoch) holds run.json's history exactly: floats to the last
    bit, integers as integers, a level column per depth, empty where an epoch was not tested."""
    history = [{"epoch": k, **h} for k, h in enumerate(history, start=1)]
    write_history(tmp_path, history)
    frame = read_table(tmp_path / HISTORY_FILE, (tmp_path / HISTORY_FILE).read_bytes(), HISTORY)
    assert len(frame) == len(history)
    for row, entry in zip(frame.to_dict("records"), history, strict=True):
        flat = {**{k: v for k, v in entry.items() if k != "test_superclass_acc"},
                **{f"test_superclass_acc_depth{d}": v for d, v in entry.get("test_superclass_acc", {}).items()}}
        assert set(flat) <= set(row), f"columns lost: {set(flat) - set(row)}"
        for column, value in row.items():
            expected = flat.get(column)
            assert (expected is None and math.isnan(value)) or value == expected, (column, value, expected)


def test_a_history_csv_that_breaks_its_schema_is_not_written(tmp_path):
    with pytest.raises(RunFormatError, match=r"history.csv, line 3, column 'epoch': not the epoch after"):
        write_history(tmp_path, [{"epoch": 1}, {"epoch": 3}])
    assert not (tmp_path / HISTORY_FILE).exists()


def test_index_json_is_typed(tmp_path):
    entry = {"run": "a", "path": "/r/a", "head": "plain", "dataset": "d", "backbone": "b", "seed": 0, "split": "test",
             "leaf_top1": 0.5}
    eval_format.write_index(tmp_path, [entry, {"run": "b", "path": "/r/b"}])
    written = eval_format.IndexRecord.model_validate_json((tmp_path / eval_format.INDEX_FILE).read_bytes())
    assert written.runs[0].model_dump() == entry
    with pytest.raises(ValidationError, match="leaf_top1"):  # what it holds, bounded
        eval_format.write_index(tmp_path, [{**entry, "leaf_top1": 2}])


@pytest.mark.parametrize("setting", ["optim.lr", "optim.momentum", "optim.weight_decay", "optim.lr_decay"])
@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_a_setting_that_is_not_a_finite_number_is_refused(setting, value):
    """``_coerce`` took NaN and infinities for every float setting (``optim.lr_decay=.nan`` trained
    a run of NaN weights); the typed config refuses them, naming the key."""
    with pytest.raises(ConfigError, match=rf"--set: {setting} must be a finite number, got"):
        load_config("fashion-mnist", [f"{setting}={value}"])


def test_an_integer_setting_for_a_float_is_a_float():
    config = load_config("fashion-mnist", ["optim.lr=1", "optim.milestones=3"])
    assert config.optim.lr == 1.0 and isinstance(config.optim.lr, float) and config.optim.milestones == [3]


def test_validation_line_names_the_first_problem():
    from hseval.io.evaluation_format import IndexRecord

    with pytest.raises(Exception) as info:
        IndexRecord.model_validate({"runs": [{"run": "a"}, {"run": 3}]})
    assert validation_line(info.value, "index.json") == "index.json: 'runs[1].run' must be a string, got 3"


# ------------------------------------------------------------------ the schemas say what the readers accept
DELETE = object()
EDITS = [  # (file, key path, new value (DELETE: removed), whether hseval accepts it)
    ("run", ("schema_version",), 3, False), ("run", ("schema_version",), 1, False), ("run", ("seed",), 10**400, False),
    ("run", ("seed",), -1, False), ("run", ("seed",), 7, True), ("run", ("colour",), "red", False),
    ("run", ("history", 0, "epoch"), 0, False), ("run", ("history", 0, "test_acc"), 1.5, False),
    ("run", ("history", 0, "lr"), 0.01, True), ("run", ("dataset", "image_size"), 10**400, False),
    ("run", ("dataset", "source"), "a colleague", True), ("run", ("device", "threads"), 0, False),
    ("run", ("training", "optim", "lr"), 10**400, False), ("run", ("training", "optim", "lr"), 0.2, True),
    ("run", ("model", "head", "config", "radius"), 10**400, False), ("run", ("hierarchy", "parents", 0), -2, False),
    ("run", ("hierarchy", "num_leaves"), 0, False), ("run", ("model_sha256",), "0" * 63, False),
    ("run", ("metrics",), DELETE, True), ("run", ("hierarchy",), DELETE, False),
    ("metrics", ("superclass_acc", "L1"), 0.5, False), ("metrics", ("superclass_acc", "1"), 1.2, False),
    ("metrics", ("superclass_acc", "1"), None, True), ("metrics", ("top5",), 1.5, False),
    ("metrics", ("top5",), 0.5, True), ("metrics", ("avg_hdist@1",), 1.5, True), ("metrics", ("top0",), 0.5, False),
    ("metrics", ("samples",), 10**400, False), ("metrics", ("samples",), -1, False), ("metrics", ("seed",), 10**400,
                                                                                      False),
    ("metrics", ("training", "optim", "lr"), 10**400, False), ("metrics", ("median",), 0.5, False),
    ("metrics", ("split",), "validation", False), ("metrics", ("geometry", "depths", "1", "mean_norm"), 2.5, True),
    ("metrics", ("geometry", "depths", "1", "norm"), 2.5, False), ("metrics", ("level_agreement", "x"), 0.5, False),
    ("metrics", ("geometry", "tree_agreement", "levels", "1", "clusters"), 0, False),
    ("metrics", ("reliability", "count", 0), -1, False), ("metrics", ("top1",), DELETE, False),
    ("index", ("runs", 0, "seed"), 10**400, False), ("index", ("runs", 0, "leaf_top1"), 2, False),
    ("index", ("runs", 0, "note"), "x", False), ("index", ("runs", 0, "head"), "mine", True),
    ("marker", ("schema_version",), 0, False), ("marker", ("files", "metrics.json"), "abc", False),
    ("marker", ("kind",), "other", False), ("marker", ("created_at",), "yesterday", False),
    ("marker", ("inputs", "seed"), 10**400, False), ("marker", ("inputs", "note"), "x", True),
]
"""Edits of real files that a careful or careless user makes, each as hseval takes it. The schemas
once passed six in 21 that hseval refuses: any schema_version, unknown super-class level keys."""


def _strict_json(data: bytes):
    """What a JSON Schema validator elsewhere reads: standard JSON, where NaN and Infinity are not."""
    def refuse(constant):
        raise ValueError(constant)

    return json.loads(data, parse_constant=refuse)


def _real_files(evaluated) -> dict[str, Path]:
    return {"run": evaluated.parent / "runs" / "riemann" / META_FILE, "metrics": evaluated / "riemann" /
            eval_format.METRICS, "index": evaluated / eval_format.INDEX_FILE, "marker": evaluated / "riemann" / MARKER}


def _edited(doc, path, value):
    doc = copy.deepcopy(doc)
    target = _get(doc, path[:-1])
    if value is DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


def _hseval_accepts(kind: str, doc, folder: Path) -> bool:
    """Whether hseval's reader of ``kind`` takes ``doc`` (run.json resealed: its checksum is not
    what is tested here)."""
    from hseval.core.errors import HsevalError
    from hseval.io.folders import read_marker
    from hseval.io.records import parse_record

    if kind == "run" and isinstance(doc, dict):
        doc["meta_sha256"] = meta_checksum(doc)
    data = json.dumps(doc).encode()
    try:
        if kind == "run":
            (folder / META_FILE).write_bytes(data)
            read_run_meta(folder)
        elif kind == "metrics":
            eval_format.read_metrics(folder / eval_format.METRICS, data)
        elif kind == "index":
            parse_record(eval_format.IndexRecord, data, where=eval_format.INDEX_FILE)
        else:
            (folder / MARKER).write_bytes(data)
            read_marker(folder)
    except HsevalError:
        return False
    return True


def _schema_accepts(kind: str, doc) -> bool:
    from jsonschema import Draft202012Validator, FormatChecker

    name = {"run": "run", "metrics": "metrics", "index": "index", "marker": "folder-marker"}[kind]
    schema = json.loads((ROOT / "docs" / "schemas" / f"{name}.schema.json").read_text())
    checker = FormatChecker()
    checker.checks("date-time", raises=ValueError)(lambda text: not isinstance(text, str) or
                                                   bool(__import__("datetime").datetime.fromisoformat(text)))
    try:
        doc = _strict_json(json.dumps(doc).encode())
    except ValueError:
        return False
    return Draft202012Validator(schema, format_checker=checker).is_valid(doc)


@pytest.mark.parametrize(("kind", "path", "value", "accepted"), EDITS,
                         ids=[f"{k}:{_field(p)}={str(v)[:12]}" for k, p, v, _ in EDITS])
def test_the_shipped_schemas_accept_what_hseval_accepts(evaluated, tmp_path, kind, path, value, accepted):
    """An edit of a real file passes the schema in docs/schemas/ exactly when hseval's reader takes it."""
    doc = _edited(json.loads(_real_files(evaluated)[kind].read_text()), path, value)
    assert _hseval_accepts(kind, copy.deepcopy(doc), tmp_path) == accepted
    assert _schema_accepts(kind, doc) == accepted


def test_what_only_hseval_checks(evaluated, tmp_path):
    """What no JSON Schema can say, and only hseval checks: facts that depend on the file's own tree
    (a super-class level it does not have, class names out of its order), run.json's checksum, and
    an integer written as 3.0 (one number to JSON Schema, a float to hseval's strict reader)."""
    files = _real_files(evaluated)
    metrics, run = json.loads(files["metrics"].read_text()), json.loads(files["run"].read_text())
    beyond = [("metrics", _edited(metrics, ("superclass_acc", "9"), 0.5)),
              ("run", _edited(run, ("dataset", "class_names"), run["dataset"]["class_names"][::-1])),
              ("metrics", _edited(metrics, ("samples",), float(metrics["samples"])))]
    for kind, doc in beyond:
        assert _schema_accepts(kind, doc) and not _hseval_accepts(kind, copy.deepcopy(doc), tmp_path)
    (tmp_path / META_FILE).write_text(json.dumps(_edited(run, ("seed",), 7)))  # not resealed
    with pytest.raises(RunFormatError, match="was edited after training"):
        read_run_meta(tmp_path)


OPEN = {("TrainState", "model"), ("TrainState", "optimizers"), ("TrainState", "rng")}
"""Fields that hold tensors (a training state's), not JSON: no schema bounds them."""


def _unbounded(node, at: str, record: str) -> list[str]:
    """Where a JSON Schema takes a number without both bounds, or any value at all (``{}``, an open object)."""
    if isinstance(node, list):
        return [w for k, item in enumerate(node) for w in _unbounded(item, f"{at}/{k}", record)]
    if not isinstance(node, dict) or "const" in node or "enum" in node:
        return []
    out = []
    if node.get("type") in ("integer", "number") and not ({"minimum", "exclusiveMinimum"} & set(node) and
                                                          {"maximum", "exclusiveMaximum"} & set(node)):
        out.append(at)
    if node.get("additionalProperties") is True or node.get("items") == {} or not set(node) - {"title", "description",
                                                                                                   "default"}:
        if (record, at.split("/")[2] if at.startswith("/properties/") else "") not in OPEN:
            out.append(at)
    for key, value in node.items():
        if key not in ("default", "examples"):
            out += _unbounded(value, f"{at}/{key}", record)
    return out


def test_every_number_of_every_record_is_bounded():
    """Each record's numbers take the bounded types of hseval.io.records (an integer exact as a
    float64, a finite float, a free-form value of bounded JSON), never a bare int, float or Any: a
    new field typed by hand fails here (a seed of 10**400 passed the reader, then the report died)."""
    from hseval.io.records import json_schema
    from hseval.io.run_format import TrainState

    records = {**{name: _schemas_script().SCHEMAS[name] for name in _schemas_script().SCHEMAS},
               "train_state": TrainState}
    for name, record in records.items():
        assert _unbounded(json_schema(record), "", getattr(record, "__name__", name)) == [], name
