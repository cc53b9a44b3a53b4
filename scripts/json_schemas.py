"""Write the JSON Schema of each JSON file hseval writes into docs/schemas/, from its record.

    python scripts/json_schemas.py

One file per record (``run.schema.json`` for ``run.json`` ...), so that other tools can read and
check hseval's files. ``tests/test_records.py`` fails when a committed schema is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hseval.cli.demo import DemoRecord  # noqa: E402
from hseval.core import fileio  # noqa: E402
from hseval.io.evaluation_format import IndexRecord, MetricsRecord  # noqa: E402
from hseval.io.folders import ANY_MARKER  # noqa: E402
from hseval.io.run_format import RunRecord  # noqa: E402

SCHEMAS = {"run": RunRecord, "metrics": MetricsRecord, "index": IndexRecord, "demo": DemoRecord,
           "folder-marker": ANY_MARKER}
"""The stem of each file's name (``.hseval-folder.json``: folder-marker) -> its record."""
FOLDER = ROOT / "docs" / "schemas"


def _json_schema(record) -> dict:
    return record.json_schema() if hasattr(record, "json_schema") else record.model_json_schema()


def schema_text(name: str) -> str:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": f"{name}.schema.json",
              **_json_schema(SCHEMAS[name])}
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    for name in SCHEMAS:
        fileio.write_text(FOLDER / f"{name}.schema.json", schema_text(name))
        print(f"wrote {FOLDER / name}.schema.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
