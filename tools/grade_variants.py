"""Made-up submissions of a course notebook, for the tests and the benchmark: solved, as shipped, broken."""

import copy

import nbformat

from builder import pairing, student
from builder.grade import report
from builder.grade.submission import exercise_cells

WRONG = "return None"  # runs, and breaks any contract
LOOP = "while True:\n    pass"  # never returns


def solved(book) -> nbformat.NotebookNode:
    """The student edition with every exercise solved: its solutions re-inserted from the source."""
    text = student.reinsert_solutions(
        book.student_source.read_text(encoding="utf-8"), book.source.read_text(encoding="utf-8")
    )
    return nbformat.reads(pairing.to_ipynb(text), as_version=4)


def shipped(book) -> nbformat.NotebookNode:
    """The student edition exactly as the course ships it: every exercise a stub."""
    return nbformat.read(book.student_ipynb, as_version=4)


def labels(nb: nbformat.NotebookNode) -> list[str]:
    """The exercise labels of a notebook, in order."""
    return list(exercise_cells(nb))


def graded(book) -> list[str]:
    """The labels the grader scores, in order: the exercises worth more than 0 points."""
    names = labels(solved(book))
    worth = report.points(book.root, book.name, names)
    return [label for label in names if worth[label] > 0]


def _exercise_index(nb: nbformat.NotebookNode, label: str) -> int:
    """Index of the code cell that starts with ``# label:``."""
    return next(
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and c.source.startswith(f"# {label}:")
    )


def broken(
    nb: nbformat.NotebookNode, label: str, body: str = WRONG, check: str | None = None
) -> nbformat.NotebookNode:
    """A copy with the first solution block of exercise ``label`` replaced by ``body`` (its check by ``check``)."""
    nb = copy.deepcopy(nb)
    index = _exercise_index(nb, label)
    lines = nb.cells[index].source.splitlines()
    begin, end = student._solution_blocks(nb.cells[index].source, label)[0]
    indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
    lines[begin : end + 1] = [indent + line for line in body.splitlines()]
    nb.cells[index].source = "\n".join(lines)
    if check is not None:
        after = next(i for i in range(index + 1, len(nb.cells)) if nb.cells[i].cell_type == "code")
        nb.cells[after].source = check
    return nb
