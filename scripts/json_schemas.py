"""Write the JSON Schema of each JSON file hseval writes into docs/schemas/, from its record, and
README's list of metrics (block ``metrics-help``) from the same records' descriptions.

    python scripts/json_schemas.py

One file per record (``run.schema.json`` for ``run.json`` ...), so that other tools can read and
check hseval's files. ``tests/test_records.py`` fails when a committed schema is stale, and
``tests/test_readme_figures.py`` when README's list is.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hseval.cli.demo import DemoRecord  # noqa: E402
from hseval.core import fileio  # noqa: E402
from hseval.io.evaluation_format import IndexRecord, metrics_record  # noqa: E402
from hseval.io.folders import ANY_MARKER  # noqa: E402
from hseval.io.records import json_schema  # noqa: E402
from hseval.io.run_format import RunRecord  # noqa: E402
from hseval.io.selection_format import Selection  # noqa: E402
from hseval.reporting.columns import column_help, display_name  # noqa: E402
from scripts.readme_blocks import write_block  # noqa: E402

SCHEMAS = {"run": RunRecord, "metrics": metrics_record(), "index": IndexRecord, "demo": DemoRecord,
           "folder-marker": ANY_MARKER, "selection": Selection}
"""The stem of each file's name (``.hseval-folder.json``: folder-marker) -> its record."""
FOLDER = ROOT / "docs" / "schemas"
METRICS = ("top1", "top5", "level1_from_leaf", "level1_own_scores", "level1_agreement", "mistake_severity",
           "avg_hdist@1", "best_hdist@5", "hierarchical_precision", "hierarchical_recall", "hierarchical_f1",
           "crm_top1", "ece", "cross_entropy", "feature_norm", "max_logit", "cophenetic_correlation")
"""The columns of the summary table README lists (one of each kind: top-k, level k, CRM ...)."""


def metrics_list() -> str:
    """README's list of metrics: each column's display name, its column in summary.csv, and its help
    (the description written where the metric's key is defined)."""
    return "\n".join(f"- **{display_name(c)}** (`{c}`): {column_help(c)}" for c in METRICS)


def schema_text(name: str) -> str:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": f"{name}.schema.json",
              **json_schema(SCHEMAS[name])}
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    for name in SCHEMAS:
        fileio.write_text(FOLDER / f"{name}.schema.json", schema_text(name))
        print(f"wrote {FOLDER / name}.schema.json")
    write_block("metrics-help", metrics_list())
    return 0


if __name__ == "__main__":
    sys.exit(main())
