"""Offline HTML handouts: executed notebooks exported as self-contained pages with MathML math.

A handout loads nothing from the network and runs no script. Math is converted from LaTeX to
MathML at export time (``mathml``), so Chromium draws it natively, with the TeX as ``alttext``; an
expression that does not convert stops the export with the notebook, the cell and the expression.
Figures are embedded as data URIs with their alt text and caption (``figures``). The page gets
heading ids, a table of contents, numbered answers gathered for print and a self-containment
audit (``page``), in the edition's language (``words``), with colours that pass WCAG AA
(``colour``). Every notebook gets two pages from ``exporter``: the full handout with the code, and
a reading handout without code inputs.
"""

from .errors import HandoutError, MathError
from .exporter import SUFFIX, VARIANTS, Handout, HandoutExporter, export, render
from .figures import alt_text, attach_captions
from .mathml import latex_to_mathml, markdown_to_html, math_expressions, math_problems
from .page import Provenance, audit, finish_page, provenance, source_commit

__all__ = [
    "HandoutError", "MathError", "SUFFIX", "VARIANTS", "Handout", "HandoutExporter", "export", "render",
    "alt_text", "attach_captions", "latex_to_mathml", "markdown_to_html", "math_expressions", "math_problems",
    "Provenance", "audit", "finish_page", "provenance", "source_commit",
]
