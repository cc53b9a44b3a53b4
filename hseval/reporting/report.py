"""``hseval report``: tables (CSV, Markdown) and one self-contained offline HTML page.

Writes into the evaluation folder: ``summary.csv`` (one row per run), ``summary_grouped.csv``
(runs differing only by seed as mean ± std), ``superclass_accuracy.csv`` / ``.md`` (runs × levels,
both ways), ``significance.csv`` (each run against the baseline at every level: difference, 95 %
paired bootstrap interval, exact McNemar p and Holm's adjusted p over them all), ``report.md`` and
``report.html`` (contents, reading guides, charts per seed group; it loads nothing from the
network, see :mod:`hseval.reporting.html`).
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from hseval.core import fileio
from hseval.core.errors import HsevalWarning, RunFormatError
from hseval.io import tables as csv_tables
from hseval.io.evaluation_format import REPORT_FILES
from hseval.io.output import OutputFile, OutputFolder
from hseval.io.results import Evaluation, load_evaluation
from hseval.io.selection_format import read_selection
from hseval.nn import radius_guard
from hseval.reporting import decisions as decision_views
from hseval.reporting import escape, ranking, sample_metrics
from hseval.reporting import sections as report_charts
from hseval.reporting import selection as selecting
from hseval.reporting.columns import column_help, display_name, identity, level_legend, metric_of_column, not_available
from hseval.reporting.html import Detail, Section, anchor, page
from hseval.reporting.paper_tables import paper_cells, paper_table, to_latex, to_markdown
from hseval.reporting.significance import format_p
from hseval.reporting.summary import (
    SCALE_COLUMNS,
    config_key,
    declaration,
    grouped_summary,
    level_table,
    mark_unavailable,
    methods_table,
    reason,
    summary_table,
    unavailable_table,
)

__all__ = ["write_report", "render"]


def _markdown(frame: pd.DataFrame, digits: int = 4) -> str:
    if frame.empty:
        return "_(none)_\n"
    cols = list(frame.columns)

    def cell(v) -> str:
        if isinstance(v, float):
            return "" if np.isnan(v) else f"{v:.{digits}f}"
        return escape.markdown(v)

    lines = ["| " + " | ".join(map(escape.markdown, cols)) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def _mean_std_table(grouped: pd.DataFrame, runs) -> pd.DataFrame:
    """'mean ± std' strings for the headline metrics of a grouped summary; "n/a — reason" where no
    seed of a group has the metric (the reason its first run recorded)."""
    if grouped.empty:
        return grouped
    first: dict[str, dict[str, str]] = {}
    for run in runs:  # grouped_summary's groups, in its order
        first.setdefault(config_key(run), run.unavailable)
    out = grouped[["dataset", "backbone", "head", "setting", "seeds"]].copy()
    for col in [c[:-5] for c in grouped.columns if c.endswith("_mean")]:
        if (declared := declaration(col)) and declared.shown == "headline":
            out[col] = [report_charts.mean_std(m, s) if np.isfinite(m)
                        else not_available(reason(why, metric_of_column(col)))
                        for m, s, why in zip(grouped[f"{col}_mean"], grouped[f"{col}_std"], first.values())]
    return out


def _markdown_sections(title: str, where: str, sections: list[tuple[str, str, pd.DataFrame | None]],
                       helps: dict[str, str]) -> str:
    toc = [f"- [{escape.markdown(title)}](#{anchor(title)})" for title, _, _ in sections]
    md = [f"# {escape.markdown(title)}", "", f"Evaluation folder: {where}.", "", "## Contents", "", *toc, ""]
    for title, intro, frame in sections:
        md += [f"## {escape.markdown(title)}", "", *([escape.markdown(intro), ""] if intro else []),
               *([] if frame is None else [_markdown(frame)])]
        shown = [c for c in ([] if frame is None else frame.columns) if c in helps]
        md += [f"- *{escape.markdown(c)}*: {escape.markdown(helps[c])}" for c in shown] + ([""] if shown else [])
    return "\n".join(md)


def _paper_shown(paper: pd.DataFrame) -> pd.DataFrame:
    if paper.empty:
        return paper
    out = paper.copy()
    out["ours"] = [f"{m:.2f}" + (f" ± {s:.2f}" if s == s else "") for m, s in zip(paper["ours"], paper["std"])]
    out["paper"] = [f"{p:.2f}" + (f" ± {s:.2f}" if s == s else "") if p == p else ""
                    for p, s in zip(paper["paper"], paper["paper_std"])]
    out["difference"] = [f"{d:+.2f}" if d == d else "" for d in paper["difference"]]
    return out.drop(columns=["std", "paper_std", "dataset", "backbone", "head"])


def _scale_table(runs) -> pd.DataFrame:
    """The sphere-head runs whose logit scale the radius guard flags, with the numbers and the fix."""
    rows = [{"run": run.name, "head": run.head, "when": when, "logit scale": f"{check.scale:,.1f}",
             "range": f"{check.low:.1f}–{check.high:.1f}",
             "verdict": check.verdict + (f" (held-out loss {check.loss_text}, a uniform guess {check.uniform_loss:.2f})"
                                         if check.verdict == "diverged" else ""),
             "fix": check.fix.removeprefix("retrain with ")}
            for run in runs for when, check in radius_guard.check_metrics(run.metrics) if check.verdict]
    return pd.DataFrame(rows)


def _crm_table(summary: pd.DataFrame, runs) -> pd.DataFrame:
    """Per run: top-1, mistake severity and hierarchical distance@1 of the argmax and of CRM; an
    empty cell reads "n/a — reason" (a difference: the reason of the value it lacks)."""
    if "crm_top1" not in summary or summary["crm_top1"].isna().all():
        return pd.DataFrame()
    out = identity(summary[["run", "head"]].copy())
    keys = [key for key in ("top1", "mistake_severity", "avg_hdist@1") if key in summary]
    marked = mark_unavailable(summary, runs, columns=[c for key in keys for c in (key, f"crm_{key}")])
    for key in keys:
        name = display_name(key)
        out[name], out[f"CRM {name}"] = marked[key], marked[f"crm_{key}"]
        out[f"Δ {name}"] = [f"{b - a:.4f}" if a == a and b == b else (text_b if b != b else text_a)
                            for a, b, text_a, text_b in zip(summary[key], summary[f"crm_{key}"], marked[key],
                                                            marked[f"crm_{key}"])]
    return out


def _shown(frame: pd.DataFrame, tree, helps: dict[str, str]) -> pd.DataFrame:
    """``frame`` with each column under its display name; the names' help is added to ``helps``."""
    names = {c: display_name(c, tree) for c in frame.columns}
    helps.update({names[c]: h for c in frame.columns if c != "run" and (h := column_help(c, tree))})
    return frame.rename(columns=names)


def _paper_line(runs) -> str:
    """The one line the report says when no run matches a cell of the paper's tables: what they take."""
    cells = paper_cells()
    datasets = sorted({c["dataset"] for c in cells})
    backbones = sorted({c["backbone"] for c in cells})
    return (f"None of these {len(runs)} runs matches a cell of the paper's Tables 1–6 and 8: they take runs on "
            f"{', '.join(datasets)} with {', '.join(backbones)} (paper_tables.md says what each table takes).")


DECISIONS_TITLE = "Decisions: what each model answers when it is unsure"


def _decisions_section(runs, base, why: str, table: pd.DataFrame) -> tuple[str, str, pd.DataFrame]:
    """The decisions' section: what it shows, and each run against the baseline at matched operating
    points (``table``: :func:`hseval.reporting.decisions.matched_operating_points`)."""
    probabilities = {r.metrics.get("probabilities") for r in runs} - {None}
    said = ("the softmax of each model's logits" if probabilities == {"softmax"} else
            "the probabilities each prediction file gave" if probabilities == {"given"} else
            "the softmax of the logits, or the probabilities a prediction file gave (metrics.json's 'probabilities')")
    cells = {}
    for row in table.itertuples():
        column = f"{row.measure} at {row.correct:.0%} correct"
        cells.setdefault(row.run, {"run": row.run})[column] = (
            f"{row.difference:+.4f} [{row.low:+.4f}, {row.high:+.4f}], Holm p {format_p(row.p_holm)}")
    shown = pd.DataFrame(list(cells.values()))
    intro = (f"A model may answer with any node ('dog' instead of 'husky') when unsure. Each threshold t on the node "
             f"probabilities ({said}; a node's is the sum over its classes) gives one trade-off: the deepest node of "
             "probability at least t is the answer; 'correct' counts answers that are the class or an ancestor of "
             "it, 'depth recall' how deep they reach (the depth of the deepest right node ÷ the class's). The "
             "table above: each run's curve summarised (the area under correct against recall, Valmadre's AC; the "
             "best recall with 90 % and 95 % correct). The table below: each run minus the baseline at those "
             "matched operating points (difference in recall, its 95 % interval, and Holm's p), on the same samples "
             "(interval and p from the standard error of a paired "
             f"bootstrap over the samples, {decision_views.OPERATING_RESAMPLES} resamples, each curve rebuilt exactly; "
             f"Holm's p over the table). Baseline: {why}. decisions.csv has every rule × metric per run "
             "(the per-run section shows it, best rule of each metric marked); operating_curve.csv every breakpoint.")
    return DECISIONS_TITLE, intro, shown


LEADERBOARD_TITLE = "Leaderboard"


def _leaderboard_section(drawn, metrics, tree, split: str, seeds: bool) -> tuple[tuple[str, str, pd.DataFrame],
                                                                                 pd.DataFrame]:
    """The leaderboard's section and its numbers (leaderboard.csv)."""
    frame, left_out = ranking.leaderboard([(e.name, e.runs) for e in drawn], metrics)
    intro = (f"Every {'seed group' if seeds else 'run'} on each metric, on the {split} split: the value with its 95 % "
             f"interval (percentile, {ranking.RESAMPLES:,} paired bootstrap resamples of the samples); ★ the best, "
             "= not significantly different from it (Holm's p ≥ 0.05 over every test of the table: the exact McNemar "
             "test for an accuracy of two runs, else the paired bootstrap's); ↓ lower is better."
             + (" A seed group's value is pooled over its seeds (an accuracy: their mean)." if seeds else "")
             + "".join(f" Left out: {name}, {why}." for name, why in left_out.items()))
    return (LEADERBOARD_TITLE, intro, ranking.leaderboard_table(frame, metrics, tree,
                                                                entry="seed group" if seeds else "run")), frame


def render(evaluation: Evaluation, root: Path, *, baseline: str | None = None, inside: bool = True,
           selection=None, leaderboard: list[str] | None = None) -> dict[str, str]:
    """Every file of the report as text, by name (report.html by its key "report.html");
    ``inside``: the page is written into ``root`` (its header then shows the folder it is in);
    ``selection``: the :class:`~hseval.io.selection_format.Selection` the runs were chosen by;
    ``leaderboard``: its metrics (:func:`hseval.reporting.sample_metrics.chosen_metrics`)."""
    runs, split = evaluation.runs, evaluation.split
    metrics = sample_metrics.chosen_metrics(leaderboard, runs)
    title = f"hseval report: {split} split"
    base, why = report_charts.baseline(runs, baseline)
    drawn = report_charts.entries(runs)
    palette = report_charts.entry_colours(runs, drawn, evaluation.names)
    tree = report_charts.one_tree(runs)
    summary = summary_table(runs)
    notes = {} if selection is None else selecting.selection_notes(selection, runs)
    summary.insert(summary.columns.get_loc("samples") + 1, "selection", [notes.get(r.name) for r in runs])
    grouped = grouped_summary(runs)
    levels = level_table(runs)
    paired, unpaired, over_seeds, differences = report_charts.significance_tables(runs, base, drawn)
    scores = [c for c in summary if (declared := declaration(c)) and declared.shown == "headline"
              and declared.kind != "levels"]  # the levels have a table of their own
    headline = identity(summary[["run", "head", *scores, *(c for c in SCALE_COLUMNS if c in summary)]])
    missing = unavailable_table(runs)
    crm = _crm_table(summary, runs)
    paper = paper_table(runs)
    seeds = bool((grouped["seeds"] > 1).any())
    helps: dict[str, str] = {}
    names = f" Levels: {level_legend(tree)}." if tree is not None and tree.max_depth > 1 else ""
    ranked, board = _leaderboard_section(drawn, metrics, tree, split, seeds)
    tables = [ranked, ("Runs", "What each column measures is listed below the table.",
               _shown(mark_unavailable(headline, runs), tree, helps)),
              ("Super-class accuracy", "'from leaf': the predicted class's ancestor; 'own scores': the head's own "
                                       "super-class scores." + names,
               _shown(mark_unavailable(identity(levels), runs), tree, helps)),
              ("Methods", "What each head is, and the paper it comes from: 'paper' marks the heads of Scieur & Kim "
                          "(ICML 2021) and its comparison, 'peers' the hierarchy-aware methods of other papers.",
               methods_table(runs)),
              (f"Difference from {base.name}", f"Each run minus the baseline on the same samples ({split} split): "
                                               "the accuracies' 95 % interval from a paired bootstrap over samples "
                                               "(10,000 resamples), p from the exact McNemar test; then "
                                               f"{ranking.BASELINE_SAID}, interval and p from {ranking.RESAMPLES:,} "
                                               "paired bootstrap resamples. Baseline: "
                                               f"{why} (--baseline RUN chooses another). " + report_charts.FAMILY,
               _shown(report_charts.significance_table(paired, unpaired, tree), tree, helps))]
    if paper["paper"].notna().any():
        tables.append(("The paper's tables", "The runs laid out as the paper's Tables 1–6 and 8 (leaf accuracy in %, "
                       "super-class accuracy in Table 6), the paper's number beside each cell the runs fill, and the "
                       "difference where they follow its recipe (paper_tables.md and .tex).", _paper_shown(paper)))
    else:
        tables.append(("The paper's tables", _paper_line(runs), None))
    if not crm.empty:
        tables.append(("Argmax and CRM re-ranking", "CRM (Karthik et al., ICLR 2021) predicts the class of least "
                       "expected tree distance under the model's probabilities instead of the most probable one: "
                       "it trades leaf accuracy for milder mistakes. Δ = CRM − argmax.", crm))
    matched = decision_views.matched_operating_points(runs, base)
    tables.append(_decisions_section(runs, base, why, matched))
    if seeds:
        tables += [("Mean ± std over seeds", "", _mean_std_table(grouped, runs)),
                   ("Differences over seeds", "Each seed group minus the baseline's group: t interval over seeds "
                                              "(paired by seed when both ran the same seeds).", over_seeds)]
    scale = _scale_table(runs)
    if not scale.empty:
        tables.insert(1, ("Radius guard", "Sphere heads whose logit scale (feature norm × class-vector norm) is far "
                          "outside what their classes need: below it the head cannot reach 90 % confidence, above "
                          "it the softmax saturates; after the start, a scale above the range with a held-out loss "
                          "worse than a uniform guess is a run that diverged. Retrain as the fix says.", scale))
    if not missing.empty:
        tables.append(("Not available", "Why a cell reads n/a (also said in the cell).", missing))
    if selection is not None:
        tables.insert(0, ("Selection", f"Only the runs chosen on the {selection.split} split of {selection.dataset} "
                          f"({selection.evaluation}, {selection.samples:,} samples) by {selection.metric} "
                          f"({'lower' if selection.lower_is_better else 'higher'} is better), one per "
                          f"{'head' if selection.per == 'head' else 'folder'}; no test number was read to choose.",
                          selecting.selection_table(selection)))
    files = {spec.file: csv_tables.render(frame, spec).decode("utf-8") for frame, spec in
             ((summary, csv_tables.SUMMARY), (grouped, csv_tables.GROUPED), (levels, csv_tables.LEVELS))}
    where = f"the folder holding this file (written in {escape.markdown(root)})" if inside else escape.markdown(root)
    files.update({"superclass_accuracy.md": "# Super-class accuracy\n\n" + _markdown(levels),
                  "significance.csv": report_charts.significance_csv(paired, unpaired, split=split),
                  "leaderboard.csv": board.assign(split=split).to_csv(index=False, float_format="%.15g"),
                  "decisions_summary.csv": decision_views.decisions_summary(runs).to_csv(index=False),
                  "operating_points.csv": matched.to_csv(index=False),
                  "paper_tables.md": "# The paper's tables from these runs\n\n" + to_markdown(paper),
                  "paper_tables.tex": to_latex(paper), "report.md": _markdown_sections(title, where, tables, helps)})
    sections = [Section(title, intro, [] if frame is None else [frame]) for title, intro, frame in tables]
    decisions = next(s for s in sections if s.title == DECISIONS_TITLE)
    decisions.tables.insert(0, _shown(mark_unavailable(identity(decision_views.curve_summaries(runs)), runs),
                                      tree, helps))
    decisions.charts = report_charts.decision_charts(runs, drawn, palette)
    sections.append(Section("Charts", "One entry per seed group (mean ± std over seeds)" if seeds else
                            "One entry per run.", charts=report_charts.overview_charts(
                                runs, drawn, differences, base.name, palette)))
    detail = Detail("Per run" if not seeds else "Per seed group",
                    "Accuracy per node, the embeddings and the confusion matrix of one entry at a time.",
                    {e.name: report_charts.detail_charts(e) for e in drawn})
    lead = (("The runs chosen on validation (hseval select); " if selection is not None else "")
            + f"{len(runs)} run(s){f' in {len(drawn)} seed groups' if seeds else ''} evaluated on the {split} split; "
            f"dataset(s): {', '.join(evaluation.datasets)}; baseline {why}.")
    files["report.html"] = page(title, lead, evaluation.problems, sections, [detail], helps=helps,
                                folder=str(root), here=inside)
    return files


def write_report(root: str | Path, *, out: str | Path | None = None, baseline: str | None = None,
                 selection: str | Path | None = None, leaderboard: list[str] | None = None) -> list[Path]:
    """Write the tables and the HTML report of the evaluation folder ``root``; returns the paths.

    Every file is rendered before the first is written (a bad ``out`` or a damaged run writes
    nothing), and each is written atomically: a killed report leaves the old file or the new one.
    A run whose files are damaged is left out, with its reason in the report and as a warning.
    ``baseline`` names the run the others are compared with (default: the first plain head).
    The report is written into the evaluation folder (an output folder of kind "evaluations",
    locked meanwhile); ``out``, the page's path elsewhere, must not lie in any hseval folder."""
    root = Path(root)
    evaluation = load_evaluation(root)  # first: a folder that holds no evaluation is named as such
    if not evaluation.runs:
        raise RunFormatError(f"{root}: no readable evaluated run ({'; '.join(evaluation.problems)})")
    chosen = None
    if selection is not None:
        chosen = read_selection(selection)
        evaluation = dataclasses.replace(evaluation, runs=selecting.selected_runs(evaluation, chosen,
                                                                                  where=selection))
    folder = OutputFolder(root, "evaluations", option="DIR", writes=REPORT_FILES if out is None else
                          [n for n in REPORT_FILES if n != "report.html"])
    page_file = OutputFile(out, option="--out", reads=[root]) if out else None
    for problem in evaluation.problems:
        warnings.warn(f"left out of the report: {problem}", HsevalWarning, stacklevel=2)
    texts = render(evaluation, root, baseline=baseline, inside=out is None, selection=chosen, leaderboard=leaderboard)
    page_text = texts.pop("report.html")
    with folder:
        for name, text in texts.items():
            fileio.write_text(root / name, text)
        if page_file is None:
            fileio.write_text(root / "report.html", page_text)
        else:
            with page_file as path:
                fileio.write_text(path, page_text)
    return [root / name for name in texts] + [Path(out) if out else root / "report.html"]
