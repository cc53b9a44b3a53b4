"""The evaluation format: what ``hseval evaluate`` writes reads back to the same values, and every
kind of damage is refused with one line naming the file, line and column (or key)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hseval.core.errors import RunFormatError
from hseval.io import evaluation_format as eval_format
from hseval.io import folders as ownership
from hseval.io.results import load_evaluation, read_run
from hseval.io.tables import read_table
from hseval.reporting.summary import level_long, level_table
from tests.helpers import reseal


@pytest.fixture
def run(evaluated, tmp_path) -> Path:
    """A copy of one evaluated run (riemann: every file has rows)."""
    return Path(shutil.copytree(evaluated / "riemann", tmp_path / "riemann"))


def csv_rows(path: Path) -> list[list[str]]:
    import csv

    return list(csv.reader(io.StringIO(path.read_text(), newline="")))


def write_rows(path: Path, rows: list[list[str]]) -> None:
    buffer = io.StringIO()
    import csv

    csv.writer(buffer, lineterminator="\n").writerows(rows)
    path.write_text(buffer.getvalue())


def test_every_file_reads_back_to_what_was_written(evaluated):
    """The writer's output reads back to the same thing: the checked values equal a plain parse."""
    for folder in sorted(p for p in evaluated.iterdir() if p.is_dir()):
        result = read_run(folder)
        assert result.metrics["top1"] == json.loads((folder / "metrics.json").read_text())["top1"]
        for name in eval_format.TABLES:
            plain = pd.read_csv(folder / name)
            checked = getattr(result, {"per_node.csv": "per_node", "geometry.csv": "geometry",
                                       "pair_angles.csv": "pair_angles", "projections.csv": "projections",
                                       "decisions.csv": "decisions", "operating_curve.csv": "curves"}[name])
            assert list(checked.columns) == list(plain.columns) and len(checked) == len(plain)
            for column in plain.columns:
                if pd.api.types.is_numeric_dtype(plain[column]):
                    np.testing.assert_array_equal(checked[column].to_numpy(dtype=float),
                                                  plain[column].to_numpy(dtype=float))
        with np.load(folder / "predictions.npz") as data:
            assert np.array_equal(result.targets, data["targets"]) and np.array_equal(result.topk, data["topk"])
        marker = ownership.read_marker(folder)
        assert marker.kind == "evaluation" and marker.schema_version == eval_format.SCHEMA_VERSION
        assert set(marker.files) == set(eval_format.FILES)


def test_level_long_is_the_data_and_level_table_its_wide_form(evaluated):
    runs = load_evaluation(evaluated).runs
    long = level_long(runs)
    assert list(long.columns) == ["run", "head", "level", "depth", "way", "accuracy"]
    riemann = long[long["run"] == "riemann"]
    assert riemann["way"].tolist() == ["leaf", "from leaf", "from leaf", "own scores",
                                       "own scores"]
    plain = long[long["run"] == "plain"]
    assert set(plain["way"]) == {"leaf", "from leaf"}  # plain has no super-class scores of its own
    wide = level_table(runs)
    assert list(wide.columns) == ["run", "head", "leaf", "level 1 (from leaf)", "level 2 (from leaf)",
                                  "level 1 (own scores)", "level 2 (own scores)"]
    for row in long.itertuples(index=False):
        column = "leaf" if row.depth == 0 else f"{row.level} ({row.way})"
        assert wide.set_index("run").loc[row.run, column] == row.accuracy


def test_an_edited_file_is_refused_by_its_checksum(run):
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["top1"] = 0.74  # in range, and the report would show it
    (run / "metrics.json").write_text(json.dumps(metrics))
    with pytest.raises(RunFormatError, match=r"riemann/metrics.json: was changed after 'hseval evaluate' wrote it "
                                             r"\(checksum mismatch\); re-run 'hseval evaluate'$"):
        read_run(run)
    reseal(run)
    assert read_run(run).metrics["top1"] == 0.74


def test_a_folder_without_checksums_or_marker_is_refused(run):
    """No compatibility with folders that were never released: an evaluation is read only with the
    marker that records its checksums (it used to be read with a warning)."""
    marker = json.loads((run / ownership.MARKER).read_text())
    marker.pop("files")
    (run / ownership.MARKER).write_text(json.dumps(marker))
    with pytest.raises(RunFormatError, match=r"riemann/\.hseval-folder\.json: no 'files'; the folder's marker is "
                                             r"damaged"):
        read_run(run)
    (run / ownership.MARKER).unlink()
    with pytest.raises(RunFormatError, match=r"riemann: is not the evaluation of a run written by hseval"):
        read_run(run)


def _table_case(name, edit):
    def damage(run: Path) -> None:
        rows = csv_rows(run / name)
        edit(rows)
        write_rows(run / name, rows)
    return damage


def _set(row: int, column: str, value: str):
    def edit(rows):
        rows[row][rows[0].index(column)] = value
    return edit


def _drop_column(column: str):
    def edit(rows):
        k = rows[0].index(column)
        for r in rows:
            del r[k]
    return edit


def _metrics_case(edit):
    def damage(run: Path) -> None:
        metrics = json.loads((run / "metrics.json").read_text())
        edit(metrics)
        (run / "metrics.json").write_text(json.dumps(metrics))
    return damage


def _npz_case(name, edit):
    def damage(run: Path) -> None:
        with np.load(run / name) as data:
            arrays = {k: data[k] for k in data.files}
        edit(arrays)
        np.savez(run / name, **arrays)
    return damage


DAMAGE = {
    "column missing": (_table_case("geometry.csv", _drop_column("depth")), r"geometry.csv, line 1: no column 'depth'"),
    "column renamed": (_table_case("per_node.csv", lambda r: r[0].__setitem__(1, "nom")),
                       r"per_node.csv, line 1: no column 'name'"),
    "column twice": (_table_case("pair_angles.csv", lambda r: [x.append(x[0]) for x in r]),
                     r"pair_angles.csv, line 1: the column 'depth' appears twice"),
    "unknown column": (_table_case("geometry.csv", lambda r: [x.append("1") for x in r]),
                       r"geometry.csv, line 1: unknown column '1'"),
    "wrong type": (_table_case("per_node.csv", _set(3, "depth", "two")),
                   r"per_node.csv, line 4, column 'depth': expected an integer, got 'two'"),
    "empty cell": (_table_case("per_node.csv", _set(2, "support", "")),
                   r"per_node.csv, line 3, column 'support': expected an integer, got an empty cell"),
    "not finite": (_table_case("geometry.csv", _set(1, "norm", "inf")),
                   r"geometry.csv, line 2, column 'norm': expected a finite number, got 'inf'"),
    "out of range": (_table_case("pair_angles.csv", _set(2, "angle", "200")),
                     r"pair_angles.csv, line 3, column 'angle': expected a value in \[0, 180\], got '200'"),
    "not a choice": (_table_case("pair_angles.csv", _set(1, "kind", "cousin")),
                     r"pair_angles.csv, line 2, column 'kind': expected sibling or non-sibling, got 'cousin'"),
    "duplicated row": (_table_case("per_node.csv", lambda r: r.insert(3, list(r[2]))),
                       r"per_node.csv, line 4, column 'node': a row for the same node appears twice"),
    "row cut short": (_table_case("projections.csv", lambda r: r[4].pop()),
                      r"projections.csv, line 5: 8 cells but the header has 9"),
    "index empty for a sample": (_table_case("projections.csv", _set(1, "index", "")),
                                 r"projections.csv, line 2, column 'index': empty for a sample"),
    "index for a class vector": (_table_case("projections.csv", _set(-1, "index", "3")),
                                 r"projections.csv, line \d+, column 'index': not empty for a class vector"),
    "index negative": (_table_case("projections.csv", _set(1, "index", "-1")),
                       r"projections.csv, line 2, column 'index': expected a value in \[0, inf\], got '-1'"),
    "names swapped": (_table_case("per_node.csv", lambda r: (r[1].__setitem__(1, r[2][1]))),
                      r"per_node.csv, line 2, column 'name': not the name of that node in the run's tree"),
    "count inconsistent": (_table_case("per_node.csv", _set(1, "correct", "999")),
                           r"per_node.csv, line 2, column 'correct': more correct samples than the node's support"),
    "accuracy inconsistent": (_table_case("per_node.csv", _set(1, "accuracy", "0.123")),
                              r"per_node.csv, line 2, column 'accuracy': not correct / support"),
    "a node missing": (_table_case("per_node.csv", lambda r: r.pop()),
                       r"per_node.csv: 12 rows for the 13 nodes of the run's tree"),
    "node outside the tree": (_table_case("pair_angles.csv", _set(1, "node_a", "99")),
                              r"pair_angles.csv, line 2, column 'node_a': not a node of the run's tree \(0..12\)"),
    "level columns": (_table_case("projections.csv", _drop_column("level2")),
                      r"projections.csv, line 1: level columns level1 do not fit the run's tree \(level1, level2\)"),
    "label unknown": (_table_case("projections.csv", _set(1, "label", "Jumper")),
                      r"projections.csv, line 2, column 'label': not a node of the run's tree"),
    "empty file": (lambda run: (run / "geometry.csv").write_text(""),
                   r"geometry.csv: empty \(not even a header line\)"),
    "metrics not an object": (lambda run: (run / "metrics.json").write_text("[]"),
                              r"metrics.json: expected a JSON object, got list"),
    "metrics wrong type": (_metrics_case(lambda m: m.update(top5="high")),
                           r"metrics.json: 'top5' must be a number, got \"high\""),
    "metrics out of range": (_metrics_case(lambda m: m["superclass_acc"].update({"1": 7})),
                             r"metrics.json: 'superclass_acc.1' must be <= 1, got 7"),
    "metrics unknown level": (_metrics_case(lambda m: m["superclass_acc"].update({"9": 0.5})),
                              r"metrics.json: 'superclass_acc.9' is not a super-class level of the run's tree"),
    "metrics history": (_metrics_case(lambda m: m["history"].append(3)),
                        r"metrics.json: 'history\[2\]' must be an object, got 3"),
    "metrics no top1": (_metrics_case(lambda m: m.pop("top1")),
                        r"metrics.json: no 'top1'; re-run 'hseval evaluate'"),
    "metrics unknown key": (_metrics_case(lambda m: m["feature_norm"].update(median=1.0)),
                            r"metrics.json: unknown key 'feature_norm.median'"),
    "metrics top-k above 1": (_metrics_case(lambda m: m["crm"].update(top5=1.5)),
                              r"metrics.json: 'crm': 'top5' must be <= 1, got 1.5"),
    "metrics tree": (_metrics_case(lambda m: m["hierarchy"].update(parents=[0] * 13)),
                     r"metrics.json: 'hierarchy': .*cycle"),
    "npz member missing": (_npz_case("predictions.npz", lambda a: a.pop("topk")),
                           r"predictions.npz: no array 'topk'"),
    "npz class outside": (_npz_case("predictions.npz", lambda a: a["targets"].__setitem__(0, 10)),
                          r"predictions.npz: 'targets' holds class indices outside 0..9"),
    "npz fewer samples": (_npz_case("predictions.npz", lambda a: a.update({k: a[k][:-1] for k in a})),
                          r"predictions.npz: 199 samples but metrics.json says 200"),
    "npz wrong dtype": (_npz_case("predictions.npz", lambda a: a.update(topk=a["topk"].astype(float))),
                        r"predictions.npz: 'topk' must be a 2-d array of integers"),
    "npz not a zip": (lambda run: (run / "predictions.npz").write_bytes(b"PK\x03\x04 cut"),
                      r"predictions.npz: not a readable .npz archive"),
    "npz without levels": (_npz_case("predictions.npz", lambda a: a.pop("levels")),
                           r"predictions.npz: no array 'levels'"),
    "projections without index": (_table_case("projections.csv", _drop_column("index")),
                                  r"projections.csv, line 1: no column 'index'"),
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_damage_is_refused_with_file_line_and_column(run, case):
    damage, message = DAMAGE[case]
    damage(run)
    reseal(run)  # past the checksum: the schema itself must refuse it
    with pytest.raises(RunFormatError, match=message) as info:
        read_run(run)
    assert "\n" not in str(info.value)


def test_a_sample_index_beyond_the_split_is_refused(run):
    rows = csv_rows(run / "projections.csv")
    _set(1, "index", "200")(rows)
    write_rows(run / "projections.csv", rows)
    metrics, tree = eval_format.read_metrics(run / "metrics.json", (run / "metrics.json").read_bytes())
    data = (run / "projections.csv").read_bytes()
    spec = eval_format.TABLES[eval_format.PROJECTIONS]
    with pytest.raises(RunFormatError, match=r"projections.csv, line 2, column 'index': not a sample of the "
                                             r"evaluated split \(0..199\)"):
        read_table(run / "projections.csv", data, spec, tree=tree, samples=metrics["samples"])
    assert len(read_table(run / "projections.csv", data, spec, tree=tree)) == len(rows) - 1


def test_projection_indices_are_the_samples_of_embeddings_npz(evaluated):
    for folder in sorted(p for p in evaluated.iterdir() if p.is_dir()):
        result = read_run(folder)
        points = result.projections[result.projections["kind"] == "sample"]
        indices = result.embeddings()["indices"]
        for _, block in points.groupby("method"):
            assert block["index"].astype(int).tolist() == indices.tolist()
        labels = [result.hierarchy.leaf_names[c] for c in result.targets[indices]]
        assert points["label"].tolist()[:len(labels)] == labels
