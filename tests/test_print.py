"""Handouts printed to A4 in headless Chromium: nothing clipped, nothing wider than the column.

Each handout is printed to an A4 PDF, and laid out in print media at the width of the page's
content box (A4 less the ``@page`` margins of handout.css). Every ``<math>`` box, and everything
drawn inside it, lies inside that column, and no element is wider inside than its own box
(``scrollWidth > clientWidth`` is content a printer would cut). The full handout must reach its
first lesson heading within its first pages: hide-input cells print a one-line note, not code.
"""

import re

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from builder import handout
from builder.config import load_course
from tests.test_html import PROVENANCE, browser  # noqa: F401  (fixtures; course_handouts comes from conftest)

PX_PER_MM = 96 / 25.4
COLUMN_PX = round((210 - 2 * 16) * PX_PER_MM)  # A4 width less the 16 mm side margins of @page
PAGE_PX = round((297 - 18 - 20) * PX_PER_MM)
MAX_PAGES_BEFORE_LESSON = 5  # header, a two-page contents, the visible setup cells; a short code block printed whole may start a page

LAYOUT = """() => {
  const column = document.documentElement.clientWidth;
  const describe = (e) => `<${e.tagName.toLowerCase()}> ${e.textContent.replace(/\\s+/g, ' ').trim().slice(0, 70)}`;
  const math = [];
  for (const m of document.querySelectorAll('math')) {
    const box = m.getBoundingClientRect();
    let right = box.right, left = box.left;
    for (const d of m.querySelectorAll('*')) {
      const r = d.getBoundingClientRect();
      if (r.width > 0) { right = Math.max(right, r.right); left = Math.min(left, r.left); }
    }
    if (left < -0.5 || right > Math.min(column, box.right) + 0.5 || box.right > column + 0.5)
      math.push(`${describe(m)}: drawn from ${left.toFixed(0)} to ${right.toFixed(0)} px, column 0 to ${column} px`);
  }
  const wide = [...document.querySelectorAll('body *')]
    .filter(e => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1)
    .map(e => `${describe(e)}: scrollWidth ${e.scrollWidth} > clientWidth ${e.clientWidth}`);
  return {column, math, wide};
}"""

# Hide everything after the given heading, so the PDF's page count is the heading's page.
CUT_AFTER = """(index) => {
  const h = document.querySelectorAll('main h1, main h2, main h3')[index];
  for (let node = h; node && node !== document.body; node = node.parentElement)
    for (let s = node.nextElementSibling; s; s = s.nextElementSibling) s.style.display = 'none';
}"""


def pdf_pages(pdf: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page(?!s)", pdf))


def first_lesson_heading(nb: nbformat.NotebookNode) -> str:
    """The first heading after the setup cells, found before the first visible lesson code cell.

    A lesson may open with prose only, so the heading that starts it is the first one past the last
    setup cell, not the one right above the first lesson code. Hidden cells inside the lesson (figure
    code, contract checks) neither end the search nor restart it.
    """
    first = None
    for cell in nb.cells:
        if cell.cell_type == "markdown" and re.search(r"^#{1,3} ", cell.source, re.MULTILINE):
            first = first or re.search(r"^#{1,3} (.+)$", cell.source, re.MULTILINE).group(1)
        elif cell.cell_type == "code" and re.match(r"# (@title )?Setup", cell.source):
            first = None  # still in the setup: the lesson starts after this cell
        elif cell.cell_type == "code" and "hide-input" not in cell.metadata.get("tags", []):
            return first
    raise AssertionError("no lesson code cell")


def print_layout(browser, path, lesson: str | None = None) -> dict:
    """Pages of the A4 PDF, the print-media layout problems, and the page of heading ``lesson``."""
    page = browser.new_page(viewport={"width": COLUMN_PX, "height": PAGE_PX})
    try:
        page.goto(path.resolve().as_uri(), wait_until="load")
        seen = {"pages": pdf_pages(page.pdf(format="A4", print_background=True))}
        page.emulate_media(media="print")
        seen.update(page.evaluate(LAYOUT))
        if lesson is not None:
            texts = page.evaluate("() => [...document.querySelectorAll('main h1, main h2, main h3')].map(h => h.textContent.trim())")
            index = next(i for i, t in enumerate(texts) if t.startswith(lesson.split("$")[0].strip()))
            page.evaluate(CUT_AFTER, index)
            seen["lesson_page"] = pdf_pages(page.pdf(format="A4", print_background=True))
        return seen
    finally:
        page.close()


@pytest.mark.browser
@pytest.mark.slow
def test_handouts_print_inside_the_a4_column(browser, course_handouts):  # noqa: F811
    paths, _ = course_handouts
    assert len(paths) == 2 * len(load_course().select_editions(None))  # full and reading, every edition
    report = []
    for path in paths:
        seen = print_layout(browser, path)
        assert seen["column"] == COLUMN_PX, seen["column"]
        assert seen["pages"] > 0, path.name
        assert seen["math"] == [], (path.name, seen["math"])
        assert seen["wide"] == [], (path.name, seen["wide"])
        report.append(f"{path.name}: {seen['pages']} pages")
    print("; ".join(report))


@pytest.mark.browser
@pytest.mark.slow
def test_full_handouts_start_with_the_lesson(browser, course_handouts, course):  # noqa: F811
    paths, _ = course_handouts
    for nb in course.select_editions(None):
        lesson = first_lesson_heading(nbformat.read(nb.ipynb, as_version=4))
        full = next(p for p in paths if p.name == f"{nb.edition}.html")
        seen = print_layout(browser, full, lesson)
        print(f"{full.name}: {seen['pages']} pages, '{lesson}' on page {seen['lesson_page']}")
        assert seen["lesson_page"] <= MAX_PAGES_BEFORE_LESSON, (full.name, lesson, seen["lesson_page"])


WIDE = (
    r"m_t = \max\left(m_{t-1}, \max_{j \in t} x_j\right), \quad \alpha_t = e^{m_{t-1} - m_t}, \quad "
    r"\ell_t = \alpha_t \ell_{t-1} + \sum_{j \in t} e^{x_j - m_t}, \quad n_t = \alpha_t n_{t-1} + \sum_{j \in t} e^{x_j - m_t} v_j"
)
LONG_LINE = "    result = some_function(" + ", ".join(f"argument_{i}" for i in range(14)) + ")"


@pytest.mark.browser
def test_wide_equation_list_and_long_code_print_whole(browser, tmp_path):  # noqa: F811
    """The Module 5 update rule that printed as 'n_t = alpha_t n_t.' now wraps between its equations."""
    nb = new_notebook(cells=[
        new_markdown_cell(f"## Online softmax\n\n$${WIDE}$$"),
        new_code_cell("def f():\n" + LONG_LINE, outputs=[]),
        new_code_cell("# @title Setup: the reference\nREFERENCE = {}", metadata={"tags": ["hide-input"]}, outputs=[]),
    ])
    page, _, _ = handout.render(nb, "fixture", PROVENANCE)
    path = tmp_path / "wide.html"
    path.write_text(page, encoding="utf-8")
    seen = print_layout(browser, path)
    assert seen["math"] == [] and seen["wide"] == [], seen
    assert "class=\"wrap-points\"" in page and "REFERENCE = {}" not in page and "Code not printed: Setup: the reference" in page
    probe = browser.new_page(viewport={"width": COLUMN_PX, "height": PAGE_PX})
    probe.goto(path.resolve().as_uri())
    probe.emulate_media(media="print")
    lines = probe.evaluate("() => { const m = document.querySelector('math.wrap-points'); return m.getBoundingClientRect().height; }")
    indent = probe.evaluate("() => getComputedStyle(document.querySelector('.jp-InputArea-editor pre')).textIndent")
    toc = probe.evaluate("() => getComputedStyle(document.querySelector('nav#toc li')).listStyleType")
    probe.close()
    assert lines > 60, "the equation list did not wrap onto a second line"
    assert "hanging" in indent and "each-line" in indent, indent
    assert toc == "none", "the TOC numbers headings that carry their own numbers"
