"""What ``hseval report`` shows: the charts over all runs (or seed groups), each entry's detail
charts, and the significance tables against a baseline — from the evaluation's checked tables.

With seed groups (runs that differ only by their seed) every chart draws one entry per group —
mean ± std over seeds, pooled geometry, summed confusions — so the report grows with the number
of groups, not of runs.
"""

from __future__ import annotations

import pandas as pd

from hseval.core.errors import ConfigError
from hseval.io.results import RunResult
from hseval.metrics import confusion_matrix
from hseval.reporting import charts
from hseval.reporting import decisions as decision_views
from hseval.reporting.colours import run_colours
from hseval.reporting.columns import display_name
from hseval.reporting.html import Chart
from hseval.reporting.ranking import compare_all, mistake_intervals
from hseval.reporting.significance import (
    MCNEMAR,
    SeedGroup,
    against_baseline,
    compare_groups,
    format_p,
    group_levels,
    holm,
    seed_groups,
)
from hseval.reporting.summary import history_long, level_long, level_table
from hseval.tree.ancestry import same_tree

__all__ = ["GUIDES", "FAMILY", "entries", "entry_colours", "baseline", "overview_charts", "detail_charts",
           "decision_charts",
           "significance_tables", "significance_table", "significance_csv", "seed_group_table", "history_guide",
           "sunburst_guide", "one_tree", "concat_runs", "level_frame"]

GUIDES = {
    "intervals": "Right of the dotted line beats the baseline; each run has its own line within a metric. A filled "
                 "dot is a real difference on these samples: its p-value stays below 0.05 after Holm's correction "
                 "for all the differences drawn; a hollow dot's difference may be noise (its 95 % interval is "
                 "not corrected: it may exclude 0 and the dot still be hollow).",
    "angles": "Small angles: children stay near their parent's direction, the tree shapes the geometry; a plain "
              "head shows no such pattern. Depth 1 has no angle (its parent is the root, w = 0).",
    "steps": "How far each node's vector lies from its parent's, per depth; with the hierarchical spheres it is "
             "bounded by the level's radius R_p.",
    "radius": "For heads whose δ lies on the unit sphere (Riemannian, manifold) the points sit on the dotted line "
              "step = R_p; runs with equal steps are drawn a little apart (the hover says so); heads without radii "
              "are named, not drawn.",
    "siblings": "A head that learned the tree puts siblings (blue) at smaller angles than non-siblings (grey) at "
                "every depth.",
    "mistakes": "Making Better Mistakes' Figure 1 (Bertinetto et al., CVPR 2020): lower left is better. Across: how "
                "often the predicted class is wrong; up: how far, in the tree, the wrong ones are from the truth (the "
                "height of their lowest common ancestor). A model can lower its error without making its mistakes "
                "less severe, which is what a hierarchy-aware method sets out to change. Bars: 95 % intervals over "
                "bootstrap resamples of the evaluated samples.",
    "calibration": "On the dotted diagonal the confidence is honest; below it the head is over-confident.",
    "curves": "Up and to the right is better: more answers correct at the same depth. A curve above another is "
              "better at every operating point; where curves cross, the better method depends on how much "
              "certainty you need. Markers: the rules that give one answer (the leaf, CRM, top-down, plurality, the "
              "Bayes-optimal node of each metric); a marker above a curve beats every threshold. Where the classes "
              "lie at several depths, the depth rule at small t prefers a deep node to a more probable shallower "
              "class (the dashed end of its curve); the information rule below does not. The panels are zoomed to "
              "where the curves bend: double-click one for the whole curve.",
    "info curves": "As above, with specificity counted in information (how few classes the answer leaves open) "
                   "and the most informative node above t as the answer.",
    "own curves": "The same rule on the node probabilities of each head's own super-class scores (a level's "
                  "softmax; the classes keep theirs), for the heads that have them. Compare each head's curve here "
                  "with its curve in the first chart (the same colour): where this one lies higher, the head's own "
                  "scores make better decisions than its class scores summed up the tree. Own levels that disagree "
                  "with each other bend the curve back.",
    "stops": "At t = 0.5 an answer is right more often than not; a model that stops most answers at depth 0 or 1 is "
             "unsure, one that answers at the deepest level almost always is confident (check its correct share).",
}
"""One line per chart whose reading does not depend on the data: what a good head looks like on it."""


def levels_guide(seeds: bool) -> str:
    return ("Higher is better. Each panel's axis is zoomed to its values (read the numbers on it); a hierarchy-aware "
            "head should gain most at the super-class levels." + (" Error bars: ± std over seeds." if seeds else ""))


def history_guide(history: pd.DataFrame) -> str:
    """What the training history shows: one point per run after one epoch, else which runs still rose."""
    epochs = int(history["epoch"].max()) if not history.empty else 0
    if epochs <= 1:
        return ("One epoch per run: a single point each, no curve to read; train for more epochs to see the "
                "accuracy's course.")
    last = history.sort_values("epoch").groupby("run", sort=False)["accuracy"].apply(
        lambda a: a.iloc[-1] - a.iloc[-2] if len(a) > 1 else 0.0)
    rising = [str(r) for r, gain in last.items() if gain > 0.005]
    return ("Curves should rise and flatten. " + (f"Still rising at the last epoch (more epochs may help): "
                                                 f"{', '.join(rising)}." if rising else "Every run has flattened."))


def _branch_ends(tree, limit: int = 3) -> list[int]:
    """A class at each depth where classes end (the leaves of a tree end at several depths)."""
    firsts = {}
    for leaf in tree.preorder().tolist():
        if leaf < tree.num_leaves:
            firsts.setdefault(int(tree.depth[leaf]), leaf)
    return [firsts[d] for d in sorted(firsts)][:limit]


def sunburst_guide(tree, per_node: pd.DataFrame) -> str:
    """How to read the accuracy sunburst, naming its least accurate classes and super-class."""
    frame = per_node[per_node["support"] > 0].dropna(subset=["accuracy"])
    leaves = frame[frame["node"] < tree.num_leaves].nsmallest(2, "accuracy")
    inner = frame[(frame["node"] >= tree.num_leaves) & (tree.depth[frame["node"].to_numpy()] > 0)]
    inner = inner.nsmallest(1, "accuracy")

    def named(rows: pd.DataFrame) -> str:
        return ", ".join(f"{tree.node_names[int(n)]} ({a:.2f})" for n, a in zip(rows["node"], rows["accuracy"]))

    text = ("Sector size is the number of evaluated samples, colour the accuracy on a fixed 0–1 scale (the same "
            "colours in every run). Rings are levels, level 1 at the centre; a branch ends at its class (" +
            ", ".join(f"{tree.node_names[c]} at level {int(tree.depth[c])}" for c in _branch_ends(tree)) + ").")
    if not leaves.empty:
        text += f" Darkest classes: {named(leaves)}"
        text += f"; weakest super-class: {named(inner)}." if not inner.empty else "."
    return text


def projection_guide(has_vectors: bool) -> str:
    return "Samples of one super-class should form one region" + ("; diamonds are the class vectors." if has_vectors
                                                                  else "; this head has no class vectors to overlay.")


def entries(runs: list[RunResult]) -> list[SeedGroup]:
    """What the charts draw: seed groups when some group has several seeds, else each run alone."""
    groups = seed_groups(runs)
    return groups if any(len(g.runs) > 1 for g in groups) else [SeedGroup(r.name, [r]) for r in runs]


def entry_colours(runs: list[RunResult], drawn: list[SeedGroup], known: list[str] = ()) -> dict[str, str]:
    """Each run's colour, a function of its name among ``known`` (every run of the folder, readable or
    not: :func:`hseval.reporting.colours.run_colours`), and each group's: its first run's."""
    out = run_colours([r.name for r in runs], known=known)
    out.update({e.name: out[e.runs[0].name] for e in drawn if e.name not in out})
    return out


def baseline(runs: list[RunResult], name: str | None) -> tuple[RunResult, str]:
    """(the run named ``name``, by default the first plain head, else the first run; and a sentence
    saying why it is the baseline, which names the fallback when no plain head could be read)."""
    if name is None:
        plain = next((r for r in runs if r.head == "plain"), None)
        if plain is not None:
            return plain, f"{plain.name} (the first run with the plain head)"
        return runs[0], f"{runs[0].name}: no readable run has the plain head, so the baseline is the first run"
    for run in runs:
        if run.name == name:
            return run, f"{run.name} (chosen)"
    raise ConfigError(f"--baseline {name!r} is not a readable run of this folder; choose one of "
                      f"{', '.join(r.name for r in runs)}")


def concat_runs(frames: list[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
    """One table of the non-empty frames, each with a ``run`` column: its name (a run's or a seed group's)."""
    parts = [f.assign(run=name) for name, f in frames if not f.empty]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def one_tree(runs: list[RunResult]):
    """The runs' tree when they share one (its level names label the charts), else None."""
    trees = [r.hierarchy for r in runs]
    return trees[0] if trees and all(same_tree(t, trees[0]) for t in trees[1:]) else None


def level_frame(runs: list[RunResult], *, group_seeds: bool) -> pd.DataFrame:
    """The long accuracy table the level charts draw: per run, or per seed group (mean, std, seeds)."""
    long = level_long(runs)
    return group_levels(seed_groups(runs), long) if group_seeds else long


def overview_charts(runs: list[RunResult], drawn: list[SeedGroup], differences: pd.DataFrame,
                    base: str | None, palette: dict[str, str]) -> list[Chart]:
    """The charts over all runs (or seed groups), in reading order."""
    grouped = any(len(e.runs) > 1 for e in drawn)
    tree = one_tree(runs)
    out = [Chart("Accuracy per level", charts.accuracy_by_level(level_frame(runs, group_seeds=grouped), colours=palette,
                                                                tree=tree),
                 levels_guide(grouped))]
    if base and not differences.empty:
        out.append(Chart(f"Difference from {base}", charts.difference_intervals(
            differences, colours=palette, title=f"Difference from {base}, 95 % interval", tree=tree),
            GUIDES["intervals"]))
    names = {r.name: e.name for e in drawn for r in e.runs}
    out.append(Chart("Top-1 error against mistake severity", charts.error_and_severity(
        mistake_intervals(runs), colours=palette, groups=names), GUIDES["mistakes"]))
    history = history_long(runs, names=names)
    if not history.empty:
        out.append(Chart("Training history", charts.history_curves(history, colours=palette),
                         history_guide(history)))
    geometry = concat_runs([(names[r.name], r.geometry) for r in runs])
    out += [Chart("Angle between each node and its parent", charts.angle_to_parent(geometry, colours=palette),
                  GUIDES["angles"]),
            Chart("Step per depth", charts.step_by_depth(geometry, colours=palette), GUIDES["steps"]),
            Chart("Step against the radius", charts.delta_vs_radius(geometry, colours=palette), GUIDES["radius"])]
    pairs = concat_runs([(e.name, e.runs[0].pair_angles) for e in drawn])  # one seed per group: a panel each
    out.append(Chart("Sibling and non-sibling angles", charts.sibling_angles(pairs), GUIDES["siblings"]))
    bins = []
    for e in drawn:
        rel = e.runs[0].metrics.get("reliability") or {}
        if rel:
            frame = pd.DataFrame(rel)
            bins.append((frame[frame["count"] > 0] if "count" in frame else frame).assign(run=e.name))
    if bins:
        out.append(Chart("Calibration", charts.reliability_diagram(pd.concat(bins, ignore_index=True),
                                                                   colours=palette), GUIDES["calibration"]))
    return out


def decision_charts(runs: list[RunResult], drawn: list[SeedGroup], palette: dict[str, str]) -> list[Chart]:
    """The operating curves of every entry (a group's first seed) with the single-answer rules' points,
    and where the answers stop at t = 0.5."""
    first = [e.runs[0] for e in drawn]
    names = {e.runs[0].name: e.name for e in drawn}
    curves, points = decision_views.curve_frame(first, names), decision_views.point_frame(first, names)
    seed = " (each seed group's first seed)" if any(len(e.runs) > 1 for e in drawn) else ""
    out = [Chart("Operating curves by depth", charts.operating_curves(curves, points, colours=palette, title=(
                     f"threshold:t for every t: correct against specific{seed}")), GUIDES["curves"]),
           Chart("Operating curves by information", charts.operating_curves(
               curves, points, rule="info-threshold", colours=palette,
               title=f"info-threshold:t for every t{seed}"), GUIDES["info curves"]),
           Chart("Where the answers stop at t = 0.5", charts.stop_depths(
               decision_views.stop_depth_frame(first, 0.5, names), colours=palette,
               title=f"Depth of the threshold:0.5 answer{seed}"), GUIDES["stops"])]
    own = decision_views.curve_frame(first, names, source="own scores")
    if not own.empty:
        out.insert(2, Chart("Operating curves from the heads' own super-class scores", charts.operating_curves(
            own, decision_views.point_frame(first, names, source="own scores"), colours=palette,
            title=f"threshold:t on the own scores' node probabilities{seed}"), GUIDES["own curves"]))
    return out


def detail_charts(entry: SeedGroup) -> list[Chart]:
    """A run's (or seed group's) per-node accuracy, embedding projection and confusion matrix: a
    group's accuracies are averaged and its confusions summed over seeds; its projection is its
    first seed's."""
    first = entry.runs[0]
    tree = first.hierarchy
    over = f" (mean over {len(entry.runs)} seeds)" if len(entry.runs) > 1 else ""
    per_node = pd.concat([r.per_node for r in entry.runs]).groupby("node", as_index=False) \
        .agg(support=("support", "first"), accuracy=("accuracy", "mean"))
    out = [Chart(f"{entry.name}: accuracy per node", charts.node_sunburst(
        tree, per_node, title=f"{entry.name}: accuracy per node{over}"), sunburst_guide(tree, per_node))]
    proj = first.projections
    if not proj.empty:
        method = "tsne" if (proj["method"] == "tsne").any() else proj["method"].iloc[0]
        points = charts.with_predictions(proj[proj["method"] == method], tree, first.topk)
        colour = "level1" if "level1" in points else "label"
        seed = f", seed {first.metrics.get('seed')}" if len(entry.runs) > 1 else ""
        name = charts.METHOD_NAMES.get(method, method)
        out.append(Chart(f"{entry.name}: {name} of the embeddings", charts.projection_scatter(
            points, color=colour, title=f"{first.name}: {name}, coloured by super-class{seed}", tree=tree),
            projection_guide(bool((points["kind"] == "class_vector").any()) if "kind" in points else False)))
    if not first.decisions.empty:
        out.append(Chart(f"{entry.name}: decisions, every rule × every metric",
                         decision_views.rule_table(first.decisions),
            "Each row a decoding rule, each column a metric of its answers (★ the best rule of each metric, ↓ "
            "where lower is better). The optimal:<metric> row is the best "
            "answer for that metric under the model's own probabilities (Plaud et al.): where another rule beats it "
            "on the evaluated samples (no ★ in its own column), the probabilities are miscalibrated for that metric. "
            "optimal:correct and the precisions answer the root: alone, they reward saying nothing."))
    if tree.num_leaves <= charts.HEATMAP_MAX:
        counted = [confusion_matrix(r.topk[:, 0], r.targets, tree) for r in entry.runs]
        matrix, labels = sum(m for m, _ in counted), counted[0][1]
        summed = f", summed over {len(entry.runs)} seeds" if over else ""
        out.append(Chart(f"{entry.name}: confusion matrix", charts.confusion_heatmap(
            matrix, labels, tree, title=f"{entry.name}: confusion matrix, classes in tree order{summed}"),
            charts.confusion_guide(tree, None)))
    return out


FAMILY = ("Holm p: each test's p adjusted by Holm's method over the family of every test in this table (each run "
          "against the baseline at each level, both ways, and on each of the other metrics); a difference is called "
          "significant when it is below 0.05.")
"""What the family of a table of paired tests is, as the report and the Compare page say it."""


def significance_table(paired: pd.DataFrame, unpaired: dict[str, str], tree=None) -> pd.DataFrame:
    """The tests of :func:`~hseval.reporting.significance.against_baseline` as a table shows them:
    levels by their display names, p-values as people read them, and a line for each run that could
    not be paired, saying why."""
    rows = [{"run": r.run, "metric": display_name(r.metric, tree), "run value": r.a, "baseline value": r.b,
             "difference": f"{r.delta:+.4f}", "95 % interval": f"[{r.low:+.4f}, {r.high:+.4f}]",
             "p": format_p(r.p_value), "Holm p": format_p(r.p_holm), "test": r.test,
             "only run right": _count(r.only_a), "only baseline right": _count(r.only_b), "samples": r.samples}
            for r in paired.itertuples()]
    rows += [{"run": name, "metric": "–", "p": f"not paired: {reason}"} for name, reason in unpaired.items()]
    return pd.DataFrame(rows)


def significance_csv(paired: pd.DataFrame, unpaired: dict[str, str], *, split: str) -> str:
    """``significance.csv``: every test against the baseline in numbers (accuracies, difference, its
    interval, McNemar's p and Holm's adjusted p over them all) on the samples of ``split``, and the
    runs that could not be paired."""
    frame = paired.rename(columns={"a": "run value", "b": "baseline value", "delta": "difference",
                                   "low": "interval low", "high": "interval high", "p_value": "p",
                                   "p_holm": "Holm p", "only_a": "only run right", "only_b": "only baseline right"})
    notes = pd.DataFrame({"run": list(unpaired), "note": [f"not paired: {r}" for r in unpaired.values()]})
    out = pd.concat([frame.assign(note=""), notes], ignore_index=True)
    out.insert(1, "split", split)
    for column in ("samples", "only run right", "only baseline right"):
        out[column] = out[column].astype("Int64")
    return out.to_csv(index=False, float_format="%.15g")


def _count(value: float) -> int | str:
    return "–" if value != value else int(value)


def mean_std(mean: float, std: float) -> str:
    """A mean over seeds and its standard deviation, as the report and the dashboard show them."""
    return f"{mean:.4f} ± {std:.4f}" if std == std else f"{mean:.4f} (1 seed)"


def seed_group_table(drawn: list[SeedGroup], home: SeedGroup, table: pd.DataFrame) -> tuple[pd.DataFrame,
                                                                                             pd.DataFrame]:
    """Each seed group of ``drawn`` against ``home`` over seeds, from a level table of their runs:
    (the shown table: group, metric, group and baseline mean ± std, difference, 95 % interval, p,
    test; the raw differences with a ``run`` column, for the forest plot)."""
    parts, raw = [], []
    for e in drawn:
        if e is home:
            continue
        frame = compare_groups(e, home, table)
        raw.append(frame.assign(run=e.name))
        parts.append(pd.DataFrame({
            "group": e.name, "metric": frame["metric"],
            "group mean ± std": list(map(mean_std, frame["a_mean"], frame["a_std"])),
            "baseline mean ± std": list(map(mean_std, frame["b_mean"], frame["b_std"])), "difference": frame["delta"],
            "95 % interval": [f"[{lo:+.4f}, {hi:+.4f}]" if lo == lo else "needs ≥ 2 seeds each"
                              for lo, hi in zip(frame["low"], frame["high"])],
            "p": [format_p(p) for p in frame["p_value"]], "test": frame["test"]}))
    if not parts:
        return pd.DataFrame(), pd.DataFrame()
    shown, raw = pd.concat(parts, ignore_index=True), pd.concat(raw, ignore_index=True)
    raw["p_holm"] = holm(raw["p_value"].to_numpy(dtype=float))  # the family: every group's test at every level
    shown.insert(shown.columns.get_loc("p") + 1, "Holm p", [format_p(p) for p in raw["p_holm"]])
    return shown, raw


def significance_tables(runs: list[RunResult], base: RunResult,
                        drawn: list[SeedGroup]) -> tuple[pd.DataFrame, dict[str, str], pd.DataFrame, pd.DataFrame]:
    """(each run against the baseline on the same samples, with Holm's p; why some runs were not
    paired; each seed group against the baseline's group over seeds; the differences the forest
    plot draws: the groups' when there are groups)."""
    paired, unpaired = against_baseline(runs, base, compare=compare_all)
    groups_table, group_forest = pd.DataFrame(), pd.DataFrame()
    if any(len(e.runs) > 1 for e in drawn):
        home = next(e for e in drawn if base in e.runs)
        groups_table, group_forest = seed_group_table(drawn, home, level_table(runs))
    accuracies = paired[paired["test"] == MCNEMAR]  # the forest plot's axis is an accuracy difference
    return paired, unpaired, groups_table, group_forest if not group_forest.empty else accuracies
