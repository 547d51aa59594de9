"""Markdown that renders the same in Colab, JupyterLab and the handouts.

Colab and JupyterLab typeset Markdown math with MathJax (through marked), the handouts with
latex2mathml through mistune, and the renderers disagree on two constructs: an escaped dollar
in prose (``\\$5``: JupyterLab pairs the dollars and typesets the words between them as italic
math) and ``\\_`` inside ``\\text{}`` (latex2mathml prints the backslash). Every Markdown cell of
the committed notebooks and their student editions is scanned, and a finding names the cell.
"""

import re

import nbformat
import pytest
from nbformat.v4 import new_markdown_cell, new_notebook

from builder.config import load_course

# Code spans and fenced blocks are shown verbatim by every renderer, so they are not scanned.
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)
_ESCAPED_DOLLAR = re.compile(r"\\\$")
# \text{...}, \textrm{...} and friends with an escaped underscore in their argument (one brace level deep).
_TEXT_UNDERSCORE = re.compile(r"\\(?:text|textrm|textit|textbf|texttt|mbox)\{(?:[^{}]|\{[^{}]*\})*?\\_(?:[^{}]|\{[^{}]*\})*\}")

FIXES = {
    "escaped dollar": "write the currency as text (USD 5), not \\$5",
    "\\_ inside \\text{}": "name the variable in a code span outside the math, or use a symbol",
}


def prose(source: str) -> str:
    """Markdown without fenced code blocks and code spans."""
    return _CODE_SPAN.sub(" ", _FENCE.sub(" ", source))


def portability_problems(nb: nbformat.NotebookNode, name: str) -> list[str]:
    """Every escaped dollar in prose and every ``\\_`` inside ``\\text{}``, naming notebook and cell."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        text = prose(cell.source)
        for kind, pattern in (("escaped dollar", _ESCAPED_DOLLAR), ("\\_ inside \\text{}", _TEXT_UNDERSCORE)):
            for match in pattern.finditer(text):
                snippet = " ".join(text[max(match.start() - 30, 0):match.end() + 30].split())
                found.append(f"{name}: cell {index} (markdown): {kind} in ...{snippet}...; {FIXES[kind]}")
    return found


def course_notebooks():
    course = load_course()
    paths = []
    for nb in course.select_editions(None):
        paths += [nb.ipynb, nb.student_ipynb]
    return paths


@pytest.mark.parametrize("path", course_notebooks(), ids=lambda p: "/".join(p.parts[-3:]))
def test_course_markdown_renders_the_same_everywhere(path):
    assert path.exists(), path
    problems = portability_problems(nbformat.read(path, as_version=4), path.name)
    assert problems == [], "\n".join(problems)


def test_scan_names_the_cell_of_each_construct():
    nb = new_notebook(cells=[
        new_markdown_cell("Fine: USD 5 and $x_1$ and `echo \\$HOME` in code."),
        new_markdown_cell("It costs \\$5 per million, so \\$0.50 a prompt."),
        new_markdown_cell("Position $\\text{query\\_start} + i$ here."),
        new_markdown_cell("```bash\nprice=\\$5\n```\nand $\\mathrm{q}_0$."),
    ])
    problems = portability_problems(nb, "demo.ipynb")
    assert len(problems) == 3, problems
    assert problems[0].startswith("demo.ipynb: cell 1 (markdown): escaped dollar") and "USD 5" in problems[0]
    assert problems[1].startswith("demo.ipynb: cell 1 (markdown): escaped dollar")
    assert problems[2].startswith("demo.ipynb: cell 2 (markdown): \\_ inside \\text{}") and "query\\_start" in problems[2]
