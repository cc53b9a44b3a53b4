"""The Embeddings page (AppTest on the session fixture ``evaluated``) and its pure helpers: colours
that mean the same in every run, shallower samples counted, a highlighted node, the nearest class
vectors against brute force, and selected points shown with their images."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetStates
from streamlit.testing.v1 import AppTest

from hseval.app.neighbours import nearest_nodes
from hseval.app.selection import data_location, sample_table, selected_rows
from hseval.io.results import read_run
from hseval.reporting.colours import OUTCOME_COLOURS, SHALLOWER_COLOUR, category_colours, shallower_label
from tests.dashboard_helpers import app, array, copy_runs, figures, page, table
from tests.helpers import appendix_a, fashion_tree


@pytest.fixture
def at(evaluated, monkeypatch) -> AppTest:
    test = app(evaluated, monkeypatch).run()
    return page(test, "embeddings")


def scatter(at: AppTest) -> list[dict]:
    return figures(at)["embeddings_scatter"]["data"]


def samples(at: AppTest) -> list[dict]:
    """The traces of the samples (not the legend's entries, which are traces of their own, nor the vectors)."""
    return [t for t in scatter(at) if "customdata" in t]


def select(at: AppTest, rows: list[int]) -> AppTest:
    """Rerun as the browser does after a selection on the scatter (AppTest has no API for plotly
    selections: the event is put among the widget states the way the frontend sends it)."""
    chart = next(e for e in at.get("plotly_chart") if e.key == "embeddings_scatter")
    states: WidgetStates = at._tree.get_widget_states()
    state = states.widgets.add()
    state.id = chart.proto.id
    state.string_value = json.dumps({"selection": {"points": [{"customdata": [r], "curve_number": 0} for r in rows],
                                                   "point_indices": rows, "box": [], "lasso": []}})
    at._run(states)
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_correct_and_wrong_have_the_same_colours_in_every_run(at):
    at.selectbox(key="embeddings_colour").set_value("correct").run()
    colours = {}
    for run in ("plain", "riemann"):
        at.selectbox(key="embeddings_run").set_value(run).run()
        traces = {t["name"]: t["marker"]["color"] for t in samples(at)}
        assert set(traces) <= {"correct", "wrong"}
        colours[run] = traces
    assert colours["plain"]["correct"] == colours["riemann"]["correct"] == OUTCOME_COLOURS["correct"]
    assert colours["riemann"].get("wrong", OUTCOME_COLOURS["wrong"]) == OUTCOME_COLOURS["wrong"]


def test_a_class_keeps_its_colour_across_runs(at):
    at.selectbox(key="embeddings_colour").set_value("label").run()
    first = {t["name"]: t["marker"]["color"] for t in samples(at)}
    at.selectbox(key="embeddings_run").set_value("riemann").run()
    second = {t["name"]: t["marker"]["color"] for t in samples(at)}
    assert len(first) == 10  # every class drawn (a page drawing none would pass the equality below)
    assert first == second == {k: v for k, v in category_colours(fashion_tree(), "label").items() if k in first}


def test_level_2_shows_and_counts_the_shallower_samples(at, evaluated):
    at.selectbox(key="embeddings_colour").set_value("level2").run()
    grey = next(t for t in samples(at) if t["name"] == shallower_label("level2"))
    points = pd.read_csv(evaluated / "multitask" / "projections.csv")
    bags = int(((points["kind"] == "sample") & (points["label"] == "Bag")).sum())
    assert bags > 0 and len(array(grey["x"])) == bags and grey["marker"]["color"] == SHALLOWER_COLOUR
    drawn = sum(len(array(t["x"])) for t in samples(at))
    assert drawn == int((points["kind"] == "sample").sum())  # no sample dropped
    assert any(f"of which {bags} have no level-2 super-class (grey)" in c.value for c in at.caption)


def test_highlight_fades_the_samples_outside_the_node(at, evaluated):
    at.selectbox(key="embeddings_highlight").set_value("footwear").run()
    points = pd.read_csv(evaluated / "multitask" / "projections.csv")
    under = int(((points["kind"] == "sample") & (points["level1"] == "footwear")).sum())
    opacity = np.concatenate([array(t["marker"]["opacity"]) for t in samples(at)])
    assert len(opacity) == int((points["kind"] == "sample").sum())
    assert (opacity > 0.9).sum() == under and (opacity < 0.5).sum() == len(opacity) - under
    assert any(f"{under} under footwear highlighted" in c.value for c in at.caption)


def test_nearest_class_vectors_are_the_brute_force_cosine_order(at, evaluated):
    at.selectbox(key="embeddings_run").set_value("riemann").run()
    at.selectbox(key="embeddings_highlight").set_value("footwear").run()
    shown = table(at, "cosine")
    assert shown["cosine"].is_monotonic_decreasing
    tree = fashion_tree()
    vectors = read_run(evaluated / "riemann").embeddings()["node_vectors"].astype(np.float64)
    node = tree.index("footwear")
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosine = unit @ unit[node]
    expected = [n for n in np.argsort(-cosine) if n != node][:len(shown)]
    assert shown["path"].tolist() == [" / ".join(tree.path_names(n)) for n in expected]
    np.testing.assert_allclose(shown["cosine"], cosine[expected], rtol=1e-5)
    at.selectbox(key="embeddings_highlight").set_value("(none)").run()
    at.selectbox(key="embeddings_neighbours_of").set_value("footwear / Sandal").run()
    assert table(at, "cosine")["path"].iloc[0] != "footwear / Sandal"


def test_selected_points_show_their_images_and_predictions(at, evaluated):
    assert not at.get("image")
    points = pd.read_csv(evaluated / "riemann" / "projections.csv")
    at.selectbox(key="embeddings_run").set_value("riemann").run()
    select(at, [0, 3, 3, 7])
    listed = table(at, "predicted")
    assert listed["index"].tolist() == points["index"].iloc[[0, 3, 7]].astype(int).tolist()
    run = read_run(evaluated / "riemann")
    expected = [run.hierarchy.leaf_names[c] for c in run.topk[listed["index"].to_numpy(), 0]]
    assert listed["predicted"].tolist() == expected
    captions = [el.proto.imgs[0].caption for el in at.get("image")]
    assert captions == [f"{c} → {p}" for c, p in zip(listed["class"], listed["predicted"])]


def test_without_the_dataset_the_selection_is_still_listed(evaluated, tmp_path, monkeypatch):
    from hseval.io.folders import MARKER, read_marker
    from hseval.io.records import write_record

    folder = copy_runs(evaluated, tmp_path / "eval")
    for run in folder.iterdir():
        if (run / "metrics.json").is_file():  # the data root the evaluation recorded points nowhere now
            marker = read_marker(run)
            write_record(run / MARKER, marker.model_copy(update={"inputs": {**marker.inputs,
                                                                            "data_root": str(tmp_path / "gone")}}))
    monkeypatch.setenv("HSEVAL_DATA", str(tmp_path / "gone"))
    at = page(app(folder, monkeypatch).run(), "embeddings")
    select(at, [1, 2])
    assert len(table(at, "predicted")) == 2 and not at.get("image")
    assert any(c.value.startswith("No images:") for c in at.caption)


def test_a_head_without_class_vectors_says_so(evaluated, tmp_path, monkeypatch):
    import io

    from tests.helpers import reseal

    folder = copy_runs(evaluated, tmp_path / "eval")
    path = folder / "plain" / "embeddings.npz"
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["node_vectors"] = np.zeros((0, 0), np.float32)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    path.write_bytes(buffer.getvalue())
    reseal(folder / "plain")
    at = page(app(folder, monkeypatch).run(), "embeddings")
    at.selectbox(key="embeddings_run").set_value("plain").run()
    assert any("has no class vectors" in i.value for i in at.info)


# ---------------------------------------------------------------- pure helpers
def test_nearest_nodes_against_brute_force():
    tree = appendix_a()
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(tree.num_nodes, 3))
    vectors[tree.index("cat")] = 0  # a zero vector: cosine 0 with everything
    node = tree.index("apple")
    result = nearest_nodes(tree, vectors, node, k=10)
    assert list(result.columns) == ["node", "path", "cosine", "angle", "tree_distance"]
    assert node not in result["node"].tolist() and len(result) == tree.num_nodes - 1
    cosine = np.array([v @ vectors[node] / (np.linalg.norm(v) * np.linalg.norm(vectors[node]) or 1)
                       for v in vectors])
    np.testing.assert_allclose(result["cosine"], cosine[result["node"]], atol=1e-12)
    assert result["cosine"].is_monotonic_decreasing
    np.testing.assert_allclose(np.cos(np.radians(result["angle"])), result["cosine"], atol=1e-12)
    distance = dict(zip(result["path"], result["tree_distance"]))
    assert distance["fruit / orange"] == 2 and distance["fruit"] == 1 and distance["animal / dog"] == 4
    assert len(nearest_nodes(tree, vectors, node, k=2)) == 2


def test_selected_rows_maps_customdata_to_sample_rows():
    points = pd.DataFrame({"kind": ["sample", "sample", "class_vector"], "label": ["a", "b", "c"],
                           "index": [4, 9, None]})
    selection = {"points": [{"customdata": [1]}, {"customdata": [1]}, {"customdata": [0, "x"]}, {"customdata": [2]},
                            {"x": 3.0}, {"customdata": [7]}, {"customdata": [True]}]}
    assert selected_rows(selection, points)["label"].tolist() == ["b", "a"]
    assert selected_rows(None, points).empty and selected_rows({"points": []}, points).empty


def test_sample_table_names_the_prediction_from_topk():
    tree = appendix_a()
    rows = pd.DataFrame({"label": ["apple", "cat"], "correct": [False, True], "index": [1.0, 0.0]})
    topk = np.array([[2, 0], [3, 1]])
    listed = sample_table(rows, tree, topk)
    assert listed["predicted"].tolist() == ["dog", "cat"] and listed["index"].tolist() == [1, 0]


def test_data_location_prefers_the_evaluations_data_root():
    metrics = {"dataset": "fashion-mnist", "split": "train", "training": {"data": {"root": "/trained"}}}
    assert data_location(metrics, {"inputs": {"data_root": "/evaluated"}}) == ("fashion-mnist", "/evaluated", "train")
    assert data_location(metrics, {"inputs": {"data_root": None}}) == ("fashion-mnist", "/trained", "train")
    assert data_location({"dataset": "external"}, None) == ("external", None, "test")


def test_sample_image_is_the_stored_pixels(fashion_like):
    import gzip

    from hseval.core.errors import ConfigError
    from hseval.data import load_dataset
    from hseval.data.display import sample_image

    data = load_dataset("fashion-mnist", fashion_like)
    raw = np.frombuffer(gzip.decompress((fashion_like / "t10k-images-idx3-ubyte.gz").read_bytes())[16:], np.uint8)
    image = sample_image(data, "test", 5)
    assert image.dtype == np.uint8 and image.shape == (28, 28)
    np.testing.assert_array_equal(image, raw.reshape(-1, 28, 28)[5])
    with pytest.raises(ConfigError, match=r"sample 200 is outside the test split of fashion-mnist \(0..199\)"):
        sample_image(data, "test", 200)
