"""The paper's Tables 1–2 laid out from a folder of runs, the paper's own number beside each cell.

Rows are dataset × backbone, columns the paper's heads (plain, multitask, hierarchy, +manifold,
+Riemann); a cell holds the runs' leaf accuracy in % (mean ± std over seeds when there are
several). Beside it stands the paper's number (``hseval/paper_numbers.json``, copied from the
paper's LaTeX by ``scripts/paper_numbers.py``, with the table and cell each comes from) and the
difference — only where the runs follow the paper's recipe (300 epochs, batch 64, lr 0.1, the
caption's radius decay); otherwise the cell says why it is not compared.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

import numpy as np
import pandas as pd

from hseval.results import RunResult

__all__ = ["paper_cells", "recipe_differs", "paper_table", "to_markdown", "to_latex"]

HEADS = ("plain", "multitask", "hierarchy", "manifold", "riemann")
HEADERS = {"plain": "Plain", "multitask": "Multitask", "hierarchy": "Hierarchy", "manifold": "+Manifold",
           "riemann": "+Riemann"}


@cache
def paper_cells() -> dict[tuple[str, str, str], dict]:
    """(dataset, backbone, head) -> the paper's cell: percent, table, cell name, radius decay."""
    data = json.loads(resources.files("hseval").joinpath("paper_numbers.json").read_text())
    return {(c["dataset"], c["backbone"], c["head"]): c for c in data["cells"]}


def recipe_differs(run: RunResult, cell: dict) -> str | None:
    """Why ``run`` does not follow the recipe behind the paper's ``cell`` (None when it does)."""
    training = run.metrics.get("training") or {}
    optim, data = training.get("optim") or {}, training.get("data") or {}
    options = (training.get("model") or {}).get("head_options") or {}
    wanted = {"epochs": (optim.get("epochs"), 300), "batch": (data.get("batch_size"), 64), "lr": (optim.get("lr"), 0.1)}
    if run.head in ("manifold", "riemann"):
        wanted["radius decay"] = (options.get("radius_decay"), cell["radius_decay"])
    differs = [f"{name} {got} (paper {want})" for name, (got, want) in wanted.items() if got != want]
    return ", ".join(differs) or None


def paper_table(runs: list[RunResult]) -> pd.DataFrame:
    """One row per (dataset, backbone, head) with runs of a paper head: ours (mean, std, seeds),
    the paper's number, the difference, and a note (the paper's cell, or why there is none)."""
    cells = paper_cells()
    groups: dict[tuple[str, str, str], list[RunResult]] = {}
    for run in runs:
        if run.head in HEADS:
            key = (str(run.metrics.get("dataset")), str(run.metrics.get("backbone")), run.head)
            groups.setdefault(key, []).append(run)
    rows = []
    for (dataset, backbone, head), members in groups.items():
        values = np.array([100 * r.metrics["top1"] for r in members])
        row = {"dataset": dataset, "backbone": backbone, "head": head, "ours": float(values.mean()),
               "std": float(values.std(ddof=1)) if len(values) > 1 else np.nan, "seeds": len(values),
               "paper": np.nan, "difference": np.nan, "note": "no matching paper cell (dataset or backbone)"}
        cell = cells.get((dataset, backbone, head))
        if cell is not None:
            reason = next((why for why in map(lambda r: recipe_differs(r, cell), members) if why), None)
            row["note"] = f"{cell['cell']}; not compared, recipe differs: {reason}" if reason else cell["cell"]
            row["paper"] = cell["percent"]
            if not reason:
                row["difference"] = row["ours"] - cell["percent"]
        rows.append(row)
    columns = ["dataset", "backbone", "head", "ours", "std", "seeds", "paper", "difference", "note"]
    return pd.DataFrame(rows, columns=columns)


def _cell(row: pd.Series) -> str:
    ours = f"{row['ours']:.2f}" + (f" ± {row['std']:.2f}" if row["std"] == row["std"] else "")
    if row["difference"] == row["difference"]:
        return f"{ours} (paper {row['paper']:.2f}, {row['difference']:+.2f})"
    if row["paper"] == row["paper"]:
        return f"{ours} (paper {row['paper']:.2f}, not compared)"
    return ours


def _layout(table: pd.DataFrame) -> pd.DataFrame:
    wide = table.assign(text=[_cell(r) for _, r in table.iterrows()]) \
        .pivot_table(index=["dataset", "backbone"], columns="head", values="text", aggfunc="first")
    return wide.reindex(columns=[h for h in HEADS if h in wide.columns]).fillna("–").reset_index()


def to_markdown(table: pd.DataFrame) -> str:
    """Tables 1–2's layout in Markdown, then the note of every cell."""
    if table.empty:
        return "_No run of a head of the paper's Tables 1–2._\n"
    wide = _layout(table)
    heads = [c for c in wide.columns if c in HEADS]
    lines = ["| dataset | backbone | " + " | ".join(HEADERS[h] for h in heads) + " |",
             "|---|---|" + "---|" * len(heads)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in wide.itertuples(index=False)]
    notes = [f"- {r.dataset} / {r.backbone} / {r.head}: {r.note}" for r in table.itertuples()]
    return "\n".join([*lines, "", "Test accuracy (%), leaf; ours ± std over seeds (paper, ours − paper).", "",
                      *notes]) + "\n"


def to_latex(table: pd.DataFrame) -> str:
    """The same layout as a LaTeX tabular (booktabs), ready for a paper's appendix."""
    wide = _layout(table) if not table.empty else pd.DataFrame(columns=["dataset", "backbone"])
    heads = [c for c in wide.columns if c in HEADS]

    def tex(text: str) -> str:
        return str(text).replace("±", r"$\pm$").replace("_", r"\_").replace("%", r"\%")

    lines = [r"\begin{tabular}{ll" + "c" * len(heads) + "}", r"\toprule",
             "Dataset & Architecture & " + " & ".join(HEADERS[h] for h in heads) + r" \\", r"\midrule"]
    lines += [" & ".join(tex(v) for v in row) + r" \\" for row in wide.itertuples(index=False)]
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"
