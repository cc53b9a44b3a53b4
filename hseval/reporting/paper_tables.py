"""The paper's result tables laid out from a folder of runs, the paper's own number beside each cell.

Each :class:`Layout` is one of the paper's tables (Tables 1–2 together): which runs it takes (the
heads of its columns, ResNet-18 for the ablations, the paper's tree or a random one), where a run
goes (row, column) and what is read from it (leaf accuracy, or the super-class accuracy from the
parent δ columns for Table 6). A cell holds the runs' value in % (mean ± std over seeds when there
are several); beside it stand the paper's number (``hseval/reporting/paper_numbers.json``, copied from the
paper's LaTeX by ``scripts/paper_numbers.py``, with the table and cell each comes from) and the
difference — only where the runs follow the paper's recipe (300 epochs, batch 64, the cell's lr and
radius decay, the tree the cell used); otherwise the cell says why it is not compared.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np
import pandas as pd

from hseval.core.errors import HsevalError
from hseval.io.results import RunResult
from hseval.reporting import escape
from hseval.reporting.summary import config_key, setting_names
from hseval.tree.builders import BUILDERS
from hseval.tree.hierarchy import Hierarchy

__all__ = ["LAYOUTS", "Layout", "paper_cells", "run_conditions", "tree_kind", "recipe_differs", "paper_table",
           "to_markdown", "to_latex"]

PAPER_HEADS = ("plain", "multitask", "hierarchy", "manifold", "riemann")
HEADERS = {"plain": "Plain", "multitask": "Multitask", "hierarchy": "Hierarchy", "manifold": "+Manifold",
           "riemann": "+Riemann", "manifold-learnable-radius": "+Manifold (learnable R)",
           "riemann-learnable-radius": "+Riemann (learnable R)"}
FIXED_RADIUS = ("manifold", "riemann")  # the heads whose radius decay the recipe fixes
COLUMNS = ["table", "row", "column", "dataset", "backbone", "head", "ours", "std", "seeds", "paper", "paper_std",
           "difference", "note"]


@dataclass(frozen=True)
class Layout:
    """One of the paper's tables: the runs it takes, the key that places a run or a paper cell in
    it, and the (row, column) that key is shown at."""

    name: str
    tables: tuple[str, ...]
    title: str
    heads: tuple[str, ...]
    needs: str
    key: Callable[[dict], tuple]
    place: Callable[[tuple], tuple[str, str]]
    tree: str = "paper"            # "paper": not random ("custom" trees are shown, not compared)
    resnet18_only: bool = True
    metric: str = "top1"           # or "superclass": the parent level from the head's own scores
    setting: str = ""              # the training setting the key reads ("n/a" where a run records none)

    def takes(self, c: dict) -> bool:
        if c["head"] not in self.heads or (self.resnet18_only and c["backbone"] != "resnet18"):
            return False
        return c["tree"] == "random" if self.tree == "random" else c["tree"] != "random"


def _by_dataset(c: dict) -> tuple:
    return c["dataset"], c["head"]


def _dataset_head(key: tuple) -> tuple[str, str]:
    return key[0], HEADERS.get(key[1], key[1])


def _setting(value: float | None, spec: str) -> str:
    """A training setting as a table shows it; "n/a" where the run records none."""
    return "n/a" if value is None else format(value, spec)


NOT_RECORDED = "not recorded (imported runs and prediction files record no training settings)"


LAYOUTS = (
    Layout("Tables 1–2", ("Table 1", "Table 2"), "Test accuracy (%) per dataset × backbone × head",
           PAPER_HEADS, "a run of plain, multitask, hierarchy, manifold or riemann",
           lambda c: (c["dataset"], c["backbone"], c["head"]),
           lambda k: (f"{k[0]} / {k[1]}", HEADERS[k[2]]), resnet18_only=False),
    Layout("Table 3", ("Table 3",), "Against hyperbolic MLR (Khrulkov et al. 2020): mean ± std over seeds, ResNet-18",
           ("hyperbolic", "riemann"), "ResNet-18 runs of hyperbolic (lr 0.01, 0.001, 0.0001) and riemann, "
           "several seeds each (the paper ran 6)",
           lambda c: (c["dataset"], c["head"], c["lr"] if c["head"] == "hyperbolic" else ""),
           lambda k: (k[0], f"Hyperbolic (lr {_setting(k[2], 'g')})" if k[1] == "hyperbolic" else HEADERS[k[1]]),
           setting="the learning rate"),
    Layout("Table 4", ("Table 4",), "Learnable radius instead of the fixed radius decay, ResNet-18",
           ("manifold-learnable-radius", "riemann-learnable-radius"),
           "ResNet-18 runs of manifold-learnable-radius or riemann-learnable-radius", _by_dataset, _dataset_head),
    Layout("Table 5", ("Table 5",), "A random hierarchy (the same tree, classes dealt at random), ResNet-18",
           ("multitask", "hierarchy", "manifold", "riemann"), "ResNet-18 runs trained on a tree from "
           "`hseval hierarchy random` (data.hierarchy)", _by_dataset, _dataset_head, tree="random"),
    Layout("Table 6", ("Table 6",), "Super-class accuracy (%) from the parent δ columns, ResNet-18",
           ("multitask", "hierarchy", "manifold", "riemann"), "ResNet-18 runs of multitask, hierarchy, manifold "
           "or riemann", _by_dataset, _dataset_head, metric="superclass"),
    Layout("Table 8", ("Table 8",), "Radius decay against test accuracy (%), riemann, ResNet-18", ("riemann",),
           "ResNet-18 riemann runs (one per radius decay)",
           lambda c: (c["radius_decay"], c["dataset"]), lambda k: (_setting(k[0], ".2f"), k[1]),
           setting="the radius decay"),
)


@cache
def paper_cells() -> tuple[dict, ...]:
    """Every number of the paper's result tables: percent (and std over seeds), the table and cell
    it comes from, and the conditions it was measured under (dataset, backbone, head, tree, lr,
    radius decay, metric)."""
    data = json.loads(resources.files("hseval.reporting").joinpath("paper_numbers.json").read_text())
    return tuple(data["cells"])


@cache
def _builtin_tree(dataset: str) -> Hierarchy | None:
    if dataset not in BUILDERS:
        return None
    try:
        return BUILDERS.get(dataset)()
    except HsevalError:
        return None


def tree_kind(run: RunResult) -> str:
    """"paper" (the dataset's own tree), "random" (that tree with the classes dealt at random, as
    ``hseval hierarchy random`` writes it) or "custom" (any other tree). A run without training
    settings (imported, or a prediction file) is judged by its tree alone."""
    training = run.metrics.get("training") or {}
    if training and not (training.get("data") or {}).get("hierarchy"):
        return "paper"  # trained on the dataset's own tree
    builtin = _builtin_tree(str(run.metrics.get("dataset")))
    tree = run.hierarchy
    if builtin is None or builtin.node_names != tree.node_names or builtin.num_leaves != tree.num_leaves:
        return "custom"
    leaves = tree.num_leaves
    if np.array_equal(builtin.parents, tree.parents):
        return "paper"
    same_shape = np.array_equal(builtin.parents[leaves:], tree.parents[leaves:]) and np.array_equal(
        np.sort(builtin.parents[:leaves]), np.sort(tree.parents[:leaves]))  # each parent keeps its number of leaves
    return "random" if same_shape else "custom"


def run_conditions(run: RunResult) -> dict:
    """What a run was trained under, in the terms of the paper's cells."""
    training = run.metrics.get("training") or {}
    optim, data = training.get("optim") or {}, training.get("data") or {}
    options = (training.get("model") or {}).get("head_options") or {}
    return {"dataset": str(run.metrics.get("dataset")), "backbone": str(run.metrics.get("backbone") or "n/a"),
            "head": run.head, "tree": tree_kind(run), "lr": optim.get("lr"), "epochs": optim.get("epochs"),
            "batch": data.get("batch_size"),
            "radius_decay": options.get("radius_decay") if run.head in FIXED_RADIUS else None}


def recipe_differs(conditions: dict, cell: dict) -> str | None:
    """Why a run with ``conditions`` does not follow the recipe behind the paper's ``cell`` (None
    when it does)."""
    wanted = {"epochs": (conditions["epochs"], 300), "batch": (conditions["batch"], 64),
              "lr": (conditions["lr"], cell["lr"]), "tree": (conditions["tree"], cell["tree"])}
    if cell.get("radius_decay") is not None:
        wanted["radius decay"] = (conditions["radius_decay"], cell["radius_decay"])
    differs = [f"{name} {got} (paper {want})" for name, (got, want) in wanted.items()
               if got is not None and got != want]
    unknown = [name for name, (got, _) in wanted.items() if got is None]
    if unknown:
        differs.append(f"{', '.join(unknown)} {NOT_RECORDED}")
    return ", ".join(differs) or None


def _value(run: RunResult, metric: str) -> float | None:
    if metric == "top1":
        return 100 * run.metrics["top1"]
    levels = run.metrics.get("superclass_acc_from_levels")
    if not isinstance(levels, dict) or not levels:
        return None
    parent = str(run.hierarchy.max_depth - 1)  # the leaves' parents (the paper's trees are two levels deep)
    value = levels.get(parent)
    return None if value is None or value != value else 100 * value


def _rows(layout: Layout, runs: list[tuple[RunResult, dict]]) -> list[dict]:
    cells = {layout.key(c): c for c in paper_cells() if c["table"] in layout.tables}
    groups: dict[tuple, list[tuple[RunResult, dict]]] = {}
    for run, conditions in runs:  # a group: the runs of one setting (config_key), different seeds
        if layout.takes(conditions):
            groups.setdefault((layout.key(conditions), config_key(run)), []).append((run, conditions))
    shared: dict[tuple, list[tuple]] = {}  # the groups that fall into one cell: told apart by what differs
    for key, setting in groups:
        shared.setdefault(key, []).append((key, setting))
    named = {g: name for keys in shared.values()
             for g, name in zip(keys, setting_names([[r for r, _ in groups[g]] for g in keys]))}
    rows = []
    for (key, setting), members in groups.items():
        row_name, column = layout.place(key)
        if named[(key, setting)]:
            column = f"{column} [{named[(key, setting)]}]"
        found = [v for v in (_value(r, layout.metric) for r, _ in members) if v is not None]
        first = members[0][1]
        row = {"table": layout.name, "row": row_name, "column": column, "dataset": first["dataset"],
               "backbone": first["backbone"], "head": first["head"], "seeds": len(found),
               "ours": float(np.mean(found)) if found else np.nan, "paper": np.nan, "paper_std": np.nan,
               "std": float(np.std(found, ddof=1)) if len(found) > 1 else np.nan, "difference": np.nan,
               "note": f"n/a: {layout.setting} is {NOT_RECORDED}" if None in key else
               "no matching paper cell (dataset, backbone or setting)"}
        if not found:
            row["note"] = "no super-class scores of the head's own (evaluate the run again)"
        cell = cells.get(key)
        if cell is not None:
            reason = next((why for why in (recipe_differs(c, cell) for _, c in members) if why), None)
            row["paper"] = cell["percent"]
            row["paper_std"] = np.nan if cell.get("std") is None else cell["std"]
            extra = f" ({cell['note']})" if cell.get("note") else ""
            row["note"] = f"{cell['cell']}{extra}" + (f"; not compared, recipe differs: {reason}" if reason else "")
            if not reason and found:
                row["difference"] = row["ours"] - cell["percent"]
        rows.append(row)
    return rows


def paper_table(runs: list[RunResult]) -> pd.DataFrame:
    """One row per (table, row, column) that runs fill: ours (mean, std, seeds), the paper's number
    (and its std over seeds), the difference, and a note (the paper's cell, or why there is none)."""
    placed = [(run, run_conditions(run)) for run in runs]
    rows = [row for layout in LAYOUTS for row in _rows(layout, placed)]
    return pd.DataFrame(rows, columns=COLUMNS)


def _cell(row: pd.Series) -> str:
    ours = "n/a" if row["ours"] != row["ours"] else \
        f"{row['ours']:.2f}" + (f" ± {row['std']:.2f}" if row["std"] == row["std"] else "")
    paper = f"{row['paper']:.2f}" + (f" ± {row['paper_std']:.2f}" if row["paper_std"] == row["paper_std"] else "")
    if row["difference"] == row["difference"]:
        return f"{ours} (paper {paper}, {row['difference']:+.2f})"
    if row["paper"] == row["paper"]:
        return f"{ours} (paper {paper}, not compared)"
    return ours


def _layout(layout: Layout, table: pd.DataFrame) -> pd.DataFrame:
    """Rows (sorted) × columns (the paper's order) of one table's cells; where runs of several
    settings share a cell, each has a column of its own, named by what differs ([key=value])."""
    columns = table.drop_duplicates("column").assign(rank=lambda t: t["head"].map(layout.heads.index))
    order = sorted(set(table["row"])), list(columns.sort_values(["rank", "column"])["column"])
    shown = table.assign(text=[_cell(r) for _, r in table.iterrows()], compared=table["difference"].notna()) \
        .sort_values("compared", ascending=False, kind="stable")
    wide = shown.pivot_table(index="row", columns="column", values="text", aggfunc="first")
    return wide.reindex(index=order[0], columns=order[1]).fillna("–")


def _sections(table: pd.DataFrame):
    for layout in LAYOUTS:
        yield layout, table[table["table"] == layout.name]


def to_markdown(table: pd.DataFrame) -> str:
    """Each paper table's layout in Markdown, then the note of every cell; a table no run fills
    says which runs would."""
    out = []
    for layout, part in _sections(table):
        out.append(f"## {layout.name}: {layout.title}\n")
        if part.empty:
            out.append(f"_No run fills it: it takes {layout.needs}._\n")
            continue
        wide = _layout(layout, part)
        md = escape.markdown
        out += ["| | " + " | ".join(map(md, wide.columns)) + " |", "|---|" + "---|" * len(wide.columns)]
        out += [f"| {md(name)} | " + " | ".join(map(md, values)) + " |"
                for name, values in zip(wide.index, wide.values)]
        out += ["", "Ours ± std over seeds (paper, ours − paper).", ""]
        out += [f"- {md(r.row)} / {md(r.column)}: {md(r.note)}" for r in part.itertuples()]
        out.append("")
    return "\n".join(out)


def to_latex(table: pd.DataFrame) -> str:
    """The same layouts as LaTeX tabulars (booktabs), one per table that runs fill."""
    tex = escape.latex
    out = []
    for layout, part in _sections(table):
        if part.empty:
            continue
        wide = _layout(layout, part)
        out += [f"% {layout.name}: {layout.title}", r"\begin{tabular}{l" + "c" * len(wide.columns) + "}",
                r"\toprule", " & " + " & ".join(tex(c) for c in wide.columns) + r" \\", r"\midrule"]
        out += [" & ".join(tex(v) for v in (name, *values)) + r" \\" for name, values in zip(wide.index, wide.values)]
        out += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(out) if out else "% no run fills a table of the paper\n"
