"""Helpers of the dashboard tests: an ``AppTest`` of the dashboard on a folder, its pages, figures
and tables, and bigger evaluation folders made by copying runs."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from hseval.core import fileio
from hseval.io.folders import MARKER
from tests.helpers import reseal

MAIN = Path(__file__).parents[1] / "app" / "main.py"


def copy_runs(source: Path, target: Path, copies: int = 1) -> Path:
    """An evaluation folder with ``copies`` copies of each run of ``source`` (named ``run``,
    ``run-2``...), its index.json regenerated: a bigger folder without evaluating again (an
    evaluation folder like ``source``: its marker copied)."""
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source / MARKER, target / MARKER)
    entries = []
    for folder in sorted(p for p in source.iterdir() if (p / "metrics.json").is_file()):
        for k in range(1, copies + 1):
            name = folder.name if k == 1 else f"{folder.name}-{k}"
            shutil.copytree(folder, target / name)
            metrics = json.loads((target / name / "metrics.json").read_text())
            metrics["run"] = name
            fileio.write_json(target / name / "metrics.json", metrics)
            reseal(target / name)  # metrics.json changed: record its new checksum, as the folder is meant to be read
            entries.append({"run": name, "head": metrics["head"], "dataset": metrics["dataset"],
                            "backbone": metrics["backbone"], "seed": metrics["seed"], "leaf_top1": metrics["top1"]})
    fileio.write_json(target / "index.json", {"runs": entries})
    return target


def app(folder: Path, monkeypatch) -> AppTest:
    monkeypatch.setenv("HSEVAL_EVAL_DIR", str(folder))
    return AppTest.from_file(str(MAIN), default_timeout=60)


def page(at: AppTest, name: str) -> AppTest:
    at.switch_page(f"views/{name}.py").run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def figures(at: AppTest) -> dict:
    """The plotly figures on the page by widget key, as plain JSON dicts."""
    return {el.key: json.loads(el.proto.spec) for el in at.get("plotly_chart")}


def table(at: AppTest, column: str):
    """The first table on the page with ``column`` (``st.dataframe`` has no key without selections)."""
    for element in at.dataframe:
        if column in element.value.columns:
            return element.value
    raise AssertionError(f"no table with a column {column!r}")


def array(value) -> np.ndarray:
    """A plotly JSON array, plain or binary-encoded ({"dtype", "bdata"})."""
    if isinstance(value, dict) and "bdata" in value:
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
    return np.asarray(value)
