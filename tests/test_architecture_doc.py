"""docs/architecture.md stays true: every path it names exists, and every name of code it gives in
backticks (a class, function, registry or constant) is defined in the project's sources."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
SOURCES = "\n".join(p.read_text(encoding="utf-8") for folder in ("hseval", "app", "train", "scripts", "tests")
                    for p in (ROOT / folder).rglob("*.py"))


def _spans() -> list[str]:
    return re.findall(r"`([^`\n]+)`", DOC.read_text(encoding="utf-8"))


def test_every_path_it_names_exists():
    paths = [s.split(".write_block")[0] for s in _spans()
             if re.fullmatch(r"(hseval|app|train|scripts|tests|docs|bench)(/[\w.]*)*(\.write_block)?", s)]
    assert len(paths) > 30
    missing = [p for p in paths if not (ROOT / (p if not p.startswith("scripts/readme_blocks") else
                                                 "scripts/readme_blocks.py")).exists()]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_name_of_code_it_gives_is_defined():
    """A span that is an identifier, a dotted name, a call or a decorator names code: its last
    identifier must be defined (def, class or assignment) somewhere in the sources."""
    words = {"radius", "DIR", "name"}  # a parameter, a placeholder, a placeholder
    names = set()
    for span in _spans():
        m = re.fullmatch(r"@?((?:[A-Za-z_]\w*\.)*)([A-Za-z_]\w*)(\(.*\))?", span)
        if m and "/" not in span and not re.fullmatch(r"[\w.]+\.(py|json|csv|npz|md|html|safetensors|pt|toml)", span):
            names.add(m.group(2))
    names -= words
    assert {"Registry", "PROJECTIONS", "BUILDERS", "build_parser", "HierarchicalMetrics"} <= names
    undefined = sorted(n for n in names if not re.search(rf"^\s*(def|class)\s+{n}\b|^\s*{n}\s*(:[^=\n]*)?=",
                                                          SOURCES, re.M))
    assert not undefined, f"docs/architecture.md names code that is not defined anywhere: {undefined}"
