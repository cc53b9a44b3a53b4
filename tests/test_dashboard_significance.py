"""The dashboard's answers to "is head A really better than head B?" and its honest charts, through
AppTest on the real evaluation folder (fixture ``evaluated``): the baseline chosen in the sidebar,
the overview's "vs baseline" column, seed groups, fixed run colours, reasons for empty cells,
the level-2 confusion without its empty row, the Hierarchy page's default node."""

from __future__ import annotations

import json
import re

import pytest

from hseval.core import fileio
from tests.conftest import BESIDE_PLAIN, EVALUATED_RUNS
from tests.dashboard_helpers import app, copy_runs, figures, page, table
from tests.helpers import reseal

VERSUS = re.compile(r"[+-]\d\.\d{4} \[[+-]\d\.\d{4}, [+-]\d\.\d{4}\], p (< 0\.0001|= [\d.e-]+)")


@pytest.fixture
def at(evaluated, monkeypatch):
    test = app(evaluated, monkeypatch).run()
    assert not test.exception, [e.message for e in test.exception]
    return test


@pytest.fixture(scope="module")
def seeded(evaluated, tmp_path_factory):
    """Each run twice, the copy with another seed: a seed group of two runs per head."""
    folder = copy_runs(evaluated, tmp_path_factory.mktemp("seeded") / "eval", copies=2)
    for run in (f"{name}-2" for name in EVALUATED_RUNS):
        metrics = json.loads((folder / run / "metrics.json").read_text())
        metrics["seed"] = 7
        fileio.write_json(folder / run / "metrics.json", metrics)
        reseal(folder / run)
    return folder


def test_overview_compares_every_run_with_the_baseline(at):
    assert at.sidebar.selectbox(key="baseline").value == "plain"
    runs = table(at, "dataset").set_index("run")
    column = runs["top1 vs plain"]
    assert column["plain"] == "baseline"
    assert VERSUS.fullmatch(column["riemann"]) and VERSUS.fullmatch(column["multitask"])
    at.sidebar.selectbox(key="baseline").set_value("riemann").run()
    runs = table(at, "dataset").set_index("run")
    assert "top1 vs riemann" in runs.columns and runs.loc["riemann", "top1 vs riemann"] == "baseline"


def test_empty_cells_say_why_and_every_column_says_what_it_measures(at):
    """plain has no super-class scores of its own: its cell says so ("n/a — reason", where it read
    None); the column's header carries its one display name and the metric's help, level names included."""
    element = next(e for e in at.dataframe if "level1_own_scores" in e.value.columns)
    cell = element.value.set_index("run").loc["plain", "level1_own_scores"]
    assert cell.startswith("n/a — ") and "no super-class scores" in cell
    config = json.loads(element.proto.columns)
    assert config["level1_own_scores"]["label"] == "level 1 (own scores)"
    assert "own super-class scores" in config["level1_own_scores"]["help"] and "Level 1: " in \
        config["level1_own_scores"]["help"]
    for column in ("ece", "mistake_severity", "avg_hdist@1", "max_logit", "crm_top1"):  # had no help
        assert config[column]["help"], column
    assert config["run"]["pinned"] is True  # the run's name stays in view while the table scrolls


def test_a_run_keeps_its_colour_on_every_page_and_selection(at):
    def colours(fig, kind):
        return {t["name"]: (t.get("marker") or {}).get("color") for t in fig["data"] if t["type"] == kind}

    overview = colours(figures(at)["overview_levels"], "scatter")
    at.multiselect(key="runs").set_value(["riemann", "plain"]).run()
    assert colours(figures(at)["overview_levels"], "scatter") == {k: overview[k] for k in ("plain", "riemann")}
    page(at, "geometry")
    boxes = colours(figures(at)["geometry_angles"], "box")
    assert boxes == {k: overview[k] for k in ("plain", "riemann")}
    assert len(set(overview.values())) == len(EVALUATED_RUNS)


def test_history_ticks_are_whole_epochs(at):
    assert figures(at)["overview_history"]["layout"]["xaxis"]["dtick"] == 1


def test_seed_groups_are_one_entry_with_an_error_bar(seeded, monkeypatch):
    at = app(seeded, monkeypatch).run()
    assert at.sidebar.toggle(key="group_seeds").value is True
    dots = figures(at)["overview_levels"]["data"]
    assert {t["name"] for t in dots} == {f"{name} ×2" for name in EVALUATED_RUNS}
    assert all(t["error_y"]["visible"] for t in dots)
    page(at, "compare")
    groups = table(at, "group mean ± std")
    assert set(groups["group"]) == {f"{name} ×2" for name in BESIDE_PLAIN}
    assert set(groups["test"]) == {"paired t over seeds"}
    at.sidebar.toggle(key="group_seeds").set_value(False).run()
    assert {t["name"] for t in figures(at)["compare_levels"]["data"]} == \
        {*EVALUATED_RUNS, *(f"{name}-2" for name in EVALUATED_RUNS)}


def test_compare_shows_intervals_and_p_values_for_every_run(seeded, monkeypatch):
    at = app(seeded, monkeypatch).run()
    at.sidebar.toggle(key="group_seeds").set_value(False).run()
    page(at, "compare")
    significance = table(at, "p")
    assert set(significance["run"]) == {"plain-2", *BESIDE_PLAIN, *(f"{name}-2" for name in BESIDE_PLAIN)}
    copy = significance[significance["run"] == "plain-2"]
    assert (copy["difference"] == "+0.0000").all() and set(copy["p"]) == {"1.00"}  # identical predictions
    assert set(copy["Holm p"]) == {"1.00"}  # adjusted over every test of the table, and never below the raw p
    intervals = figures(at)["compare_intervals"]["data"]
    assert {t["name"] for t in intervals if "customdata" in t} == set(significance["run"])


def test_level_two_confusion_leaves_the_empty_row_out_with_a_note(at):
    page(at, "confusion")
    at.selectbox(key="confusion_level").set_value(at.selectbox(key="confusion_level").options[2]).run()
    figure = figures(at)["confusion_heatmap"]
    heatmap = figure["data"][0]
    assert heatmap["x"][-1] == "Bag (no level-2 node)" and "Bag (no level-2 node)" not in heatmap["y"]
    assert re.search(r"Bag has no level-2 super-class: its [\d,]+ samples are left out \([\d,]+ counted\)",
                     figure["layout"]["title"]["text"])  # it read "left out, no samples: (shallower class)"
    assert "Bag" not in heatmap["x"]  # names, not indices; Bag is no level-2 node


def test_hierarchy_starts_on_a_super_class(at):
    page(at, "hierarchy")
    assert at.selectbox(key="hierarchy_node").value == "clothing"


def test_the_folder_is_shown_as_given(evaluated, monkeypatch):
    monkeypatch.chdir(evaluated.parent)
    at = app(evaluated.name, monkeypatch).run()
    assert any(c.value == f"Folder: {evaluated.name}" for c in at.sidebar.caption)
    assert any(c.value.endswith(f" · {evaluated.name}") for c in at.caption)  # the page title's line names it too


def test_compare_per_node_run_is_chosen_against_the_baseline(at):
    page(at, "compare")
    assert at.selectbox(key="compare_node_run").options == BESIDE_PLAIN  # not the baseline itself
    at.selectbox(key="compare_node_run").set_value("riemann").run()
    title = figures(at)["compare_sunburst"]["layout"]["title"]["text"]
    assert title.startswith("riemann minus plain")


def test_page_scripts_print_nothing_by_accident():
    """Streamlit's magic writes every bare expression of a page script onto the page: a string
    under a constant (a docstring habit) appeared above the Overview's title. Only the module's
    own docstring may stand alone."""
    import ast
    from pathlib import Path

    app = Path(__file__).parents[1] / "app"
    main = ast.parse((app / "main.py").read_text())
    pages = next(ast.literal_eval(n.value) for n in main.body if isinstance(n, ast.Assign) and
                 getattr(n.targets[0], "id", "") == "PAGES")
    for script in [app / "main.py", *(app / path for path, _, _ in pages)]:
        body = ast.parse(script.read_text()).body
        bare = [node.lineno for node in body[1:] if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)]
        assert not bare, f"{script.name}: bare constant at line(s) {bare}, which Streamlit would print"
