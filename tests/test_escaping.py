"""Text a user chose (run, head and dataset names, class and node names, the folder's path) reaches
the report's Markdown, LaTeX and HTML as text, never as markup.

Each output is parsed back as its readers parse it: the Markdown by a CommonMark parser with
GitHub's tables (every table row keeps its number of cells, no raw HTML gets through, every name
reads back), the LaTeX tabulars cell by cell (no special character of a name is left unescaped, and
every cell reads back), the HTML page by an HTML parser (no element that hseval did not write, the
names as text) and the figures' JSON inside it as plotly draws it. First the escaping functions
alone, over any text; then the whole report, over hostile names everywhere.
"""

from __future__ import annotations

import dataclasses
import html as html_lib
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from hseval.evaluation.predictions import evaluate_predictions
from hseval.io.results import load_evaluation
from hseval.reporting import escape
from hseval.reporting.report import render, write_report
from hseval.tree import Hierarchy, write_hierarchy
from tests.helpers import examples

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from("\n\r\t<>&|$#{}\\%_[]`*~"),
               max_size=40)
"""Any text a name may hold (no control characters but line breaks and tabs)."""
MARKUP = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "%{evil}", "a|b", "$x$ & #1 ~ ^",
          "\\input{/etc/passwd}", "{}", "*em* _u_ [l](http://x) `c`", "# h", "- item", "1. one", "<!--", "\\"]
"""Markup of every output format; each hostile name below holds some."""
TREE = Hierarchy.from_paths([
    ["<script>alert(1)</script>", "a|b & $c$ #1 ~ \\input{evil} {}"], ["<script>alert(1)</script>", "*em* _u_ [l](x)"],
    ["# h", "- item"], ["# h", "1. one", "<!--"], ["# h", "1. one", "%{evil}"], ["</script><b>x", "\\"],
    ["</script><b>x", "é 中 `c`"]])
RUNS = {"<img src=x onerror=alert(1)>|x": "plain", "*a* [b](c) #d %{evil}": "<b>head</b>|h"}
"""Run name -> head; the runs are evaluated prediction files (the plain one lands in the paper's tables)."""
DATASET, FOLDER = "$D&#~\\input{x}|{}_^", "ev <b>|x`y"

markdown_parser = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def one_line(text: str) -> str:
    """``text`` with each line break a space, as every output writes a name."""
    return re.sub(r"\r\n|[\r\n\u2028\u2029]", " ", text)


# ====================================================================== reading the outputs back
def markdown_blocks(text: str) -> tuple[list[list[str]], list[str]]:
    """(every table row as its cells' text, every other block's text) of a Markdown document;
    asserts that no raw HTML, image or link came through and that every row has the header's
    number of cells."""
    tokens = markdown_parser.parse(text)
    rows, blocks, row, header = [], [], None, None
    for token in tokens:
        assert token.type not in ("html_block", "html_inline"), token
        if token.type == "tr_open":
            row = []
        elif token.type == "tr_close":
            header = len(row) if header is None else header
            assert len(row) == header, row
            rows.append(row)
            row = None
        elif token.type == "table_close":
            header = None
        elif token.type == "inline":
            children = token.children or []
            for child in children:  # emphasis, code and links to headings only where hseval writes them
                assert child.type in ("text", "text_special", "softbreak", "em_open", "em_close", "code_inline",
                                      "link_open", "link_close"), child
                assert child.type != "link_open" or child.attrs["href"].startswith("#"), child
            content = "".join(c.content for c in children)
            (row.append(content) if row is not None else blocks.append(content))
    return rows, blocks


_LATEX_BACK = {r"\textbackslash{}": "\\", r"\textasciicircum{}": "^", r"\textasciitilde{}": "~",
               r"\textless{}": "<", r"\textgreater{}": ">", r"\textbar{}": "|", r"$\pm$": "±"}
_LATEX_TOKEN = re.compile(r"\\text[a-z]+\{\}|\$\\pm\$|\\[{}$&#%_]|[\\{}$&#%_^~<>|]")


def latex_text(cell: str) -> str:
    """The text a LaTeX cell draws; asserts that no special character is left unescaped."""
    out, pos = [], 0
    for match in _LATEX_TOKEN.finditer(cell):
        token = match.group()
        assert token in _LATEX_BACK or (len(token) == 2 and token[0] == "\\"), f"unescaped {token!r} in {cell!r}"
        out += [cell[pos:match.start()], _LATEX_BACK.get(token, token[-1])]
        pos = match.end()
    return "".join(out) + cell[pos:]


def latex_rows(text: str) -> list[list[str]]:
    """The text of every cell of every tabular row (between \\toprule and \\bottomrule)."""
    rows = []
    for line in text.splitlines():
        if line.endswith(r" \\"):
            cells = re.split(r"(?<!\\)&", line[: -len(r" \\")])
            rows.append([latex_text(c.strip()) for c in cells])
        else:
            assert line == "" or line.startswith(("%", "\\")), line
    return rows


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text: list[str] = []
        self.scripts: list[tuple[dict, str]] = []
        self._script: dict | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "script":
            self._script = dict(attrs)

    def handle_data(self, data):
        if self._script is not None:
            self.scripts.append((self._script, data))
        else:
            self.text.append(data)

    def handle_endtag(self, tag):
        if tag == "script":
            self._script = None


HSEVAL_TAGS = {"html", "head", "meta", "title", "style", "script", "body", "h1", "h2", "h3", "p", "nav", "ol", "li",
               "a", "em", "table", "thead", "tbody", "tr", "th", "td", "div", "label", "select", "option", "code",
               "details", "summary", "dl", "dt", "dd"}
PLOTLY_MARKUP = re.compile(r"</?(b|br|sup|extra)>")
DRAWN = {"text", "name", "hovertext", "hovertemplate", "labels", "x", "y", "title", "ticktext"}
"""The keys of a plotly figure whose strings plotly draws (not ids, parents, groups or custom data)."""


def drawn_strings(value, key: str | None = None):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from drawn_strings(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from drawn_strings(v, key)
    elif isinstance(value, str) and key in DRAWN:
        yield value


def page_parts(page: str) -> tuple[list[str], list[str], list[str]]:
    """(the page's elements, its text, the strings its figures draw as plotly reads them); asserts
    that every script is one hseval wrote and that no figure draws a tag or a template of a name."""
    parser = _Page()
    parser.feed(page)
    assert set(parser.tags) <= HSEVAL_TAGS, set(parser.tags) - HSEVAL_TAGS
    if "script" not in parser.tags:
        return parser.tags, parser.text, []
    figures = [json.loads(body) for attrs, body in parser.scripts if attrs.get("type") == "application/json"]
    assert page.count("<script") == parser.tags.count("script") == len(figures) + 2  # + plotly.js and the loader
    drawn = [s for figure in figures for s in drawn_strings(figure)]
    for text in drawn:
        assert "<" not in PLOTLY_MARKUP.sub("", text) and "%{evil}" not in text, text
    shown = [html_lib.unescape(PLOTLY_MARKUP.sub(" ", text)) for text in drawn]  # plotly decodes entities
    return parser.tags, parser.text, shown


# ====================================================================== the escaping functions
@settings(max_examples=examples(400), deadline=None)
@given(text=TEXT)
def test_markdown_reads_back_in_a_cell_a_heading_and_a_list_item(text):
    expected = one_line(text).strip()
    rows, blocks = markdown_blocks(f"| a | b |\n|---|---|\n| {escape.markdown(text)} | x |\n\n"
                                   f"## {escape.markdown(text)}\n\n- {escape.markdown(text)} / y\n")
    assert rows == [["a", "b"], [expected, "x"]]
    assert blocks == [expected, f"{expected} / y".strip()]


@settings(max_examples=examples(400), deadline=None)
@given(text=TEXT)
def test_latex_reads_back_with_every_special_character_escaped(text):
    assert latex_text(escape.latex(text)) == one_line(text)
    assert latex_rows(" & ".join([escape.latex(text), "x"]) + r" \\") == [[one_line(text).strip(), "x"]]


@settings(max_examples=examples(400), deadline=None)
@given(text=TEXT)
def test_html_and_plotly_text_read_back(text):
    tags, shown, _ = page_parts(f"<p title='{escape.html(text)}'>{escape.html(text)}</p>")
    assert tags == ["p"] and "".join(shown) == one_line(text)
    drawn = escape.plotly(text)
    assert "<" not in drawn and "%{" not in drawn and html_lib.unescape(drawn) == one_line(text)


# ====================================================================== the whole report
@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    """An evaluation folder with hostile names everywhere: its path, the runs', heads', dataset's
    and every class's and super-class's; with embeddings and node vectors (every chart drawn)."""
    root = tmp_path_factory.mktemp("hostile")
    write_hierarchy(TREE, root / "tree.json")
    rng = np.random.default_rng(0)
    n, leaves = 60, TREE.num_leaves
    np.savez(root / "p.npz", targets=np.arange(n) % leaves, logits=rng.normal(size=(n, leaves)),
             embeddings=rng.normal(size=(n, 8)), node_weights=rng.normal(size=(TREE.num_nodes, 8)))
    for name, head in RUNS.items():
        evaluate_predictions(root / "p.npz", root / FOLDER, hierarchy=root / "tree.json", name=name,
                             dataset=DATASET, head=head, log=lambda *a: None)
    return root / FOLDER


def check_report(files: dict[str, str], names: list[str]) -> None:
    """Every Markdown, LaTeX and HTML output of a report parsed back: structure intact, every name
    readable as text."""
    expected = [one_line(n).strip() for n in names]  # runs, the head of the second, the folder
    for file, shown in (("report.md", expected), ("superclass_accuracy.md", expected[:3])):
        rows, blocks = markdown_blocks(files[file])
        cells = [cell for row in rows for cell in row]
        for name in shown:
            assert name in cells or any(name in block for block in blocks), (file, name)
    paper_rows, _ = markdown_blocks(files["paper_tables.md"])
    assert f"{DATASET} / n/a" in [row[0] for row in paper_rows]
    assert f"{DATASET} / n/a" in [row[0] for row in latex_rows(files["paper_tables.tex"])]
    _, text, drawn = page_parts(files["report.html"])
    for name in expected:
        assert any(name in t for t in text), name
    for node in TREE.node_names:  # the classes and super-classes, as the sunburst, heatmap and scatter draw them
        assert node in drawn, node


def test_a_report_of_hostile_names_reads_back(hostile, capsys):
    write_report(hostile)
    files = {p.name: p.read_text(encoding="utf-8") for p in hostile.iterdir() if p.suffix in (".md", ".tex", ".html")}
    check_report(files, [*RUNS, "<b>head</b>|h", str(hostile)])


@pytest.mark.slow  # seconds each: the fast lane keeps units and contracts
@settings(max_examples=examples(6), deadline=None, derandomize=True, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # seconds each
@given(names=st.lists(TEXT.filter(lambda t: one_line(t).strip()), min_size=3, max_size=3,
                      unique_by=lambda t: one_line(t).strip()))
def test_any_names_read_back_from_every_output(hostile, names):
    """The runs renamed (and their heads) in memory: any text at all, rendered into every file."""
    evaluation = load_evaluation(hostile)
    plain, other = sorted(evaluation.runs, key=lambda r: r.head != "plain")
    evaluation.runs = [dataclasses.replace(plain, name=names[0]),
                       dataclasses.replace(other, name=names[1], metrics={**other.metrics, "head": names[2]})]
    check_report(render(evaluation, hostile), [*names, str(hostile)])
