"""Text into the formats the report writes: one function per output format, through which every
string a user chose (run, head and dataset names, class and node names, paths) passes on its way
into that output, so that it reads back as the same text and never as markup.

- :func:`markdown`: GitHub-flavoured Markdown, in a table cell, a heading or a list item;
- :func:`latex`: the text of a LaTeX tabular cell;
- :func:`html`: HTML text or a quoted attribute value;
- :func:`plotly`: text that plotly draws (titles, legends, hover labels, tick labels), which reads
  a few HTML tags (``<b>``, ``<br>``, ``<a href>``) and entities, and ``%{...}`` in templates.

A line break becomes a space in each: no output here holds a line break inside a cell or a name.
"""

from __future__ import annotations

import html as _html
import re

__all__ = ["markdown", "latex", "html", "plotly"]

_BREAKS = re.compile(r"\r\n|[\r\n\u2028\u2029]")

_MARKDOWN_INLINE = re.compile(r"([\\`*_\[\]<>|#~$&!])")
"""Punctuation that Markdown reads anywhere in a line: emphasis, code, links and images, raw HTML
and entities, table cells, headings, strikethrough and GitHub's math."""
_MARKDOWN_BLOCK = re.compile(r"^([-+=]|\d+[.)])(?=\s|$)")
"""What starts a list item or a setext underline when it opens a line."""

_LATEX = str.maketrans({"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
                        "%": r"\%", "_": r"\_", "^": r"\textasciicircum{}", "~": r"\textasciitilde{}",
                        "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", "±": r"$\pm$"})


def _one_line(text: object) -> str:
    return _BREAKS.sub(" ", str(text))


def markdown(text: object) -> str:
    """``text`` as literal Markdown text: each character Markdown would read as markup is
    backslash-escaped (a ``|`` stays in its table cell, ``<script>`` shows as text); the spaces
    around it, which Markdown drops or reads as indentation, are left out."""
    escaped = _MARKDOWN_INLINE.sub(r"\\\1", _one_line(text).strip())
    return _MARKDOWN_BLOCK.sub(lambda m: m.group(1)[:-1] + "\\" + m.group(1)[-1], escaped)


def latex(text: object) -> str:
    """``text`` as the text of a LaTeX cell: the ten special characters (and ``<``, ``>``, ``|``,
    which the default font encoding draws as other glyphs) as their commands; ``±`` as ``$\\pm$``."""
    return _one_line(text).translate(_LATEX)


def html(text: object) -> str:
    """``text`` as HTML text, safe inside an element or a quoted attribute value."""
    return _html.escape(_one_line(text), quote=True)


def plotly(text: object) -> str:
    """``text`` as plotly draws it literally: ``<``, ``>`` and ``&`` as entities (plotly decodes
    them), ``%`` as ``&#37;`` so that a hover template does not read ``%{...}`` in it."""
    return _html.escape(_one_line(text), quote=False).replace("%", "&#37;")
