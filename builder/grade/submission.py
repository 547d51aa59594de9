"""A handed-in notebook: which module it belongs to, and the code of each of its exercise cells."""

from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from .. import student

# What nbformat raises for files that are not notebooks: not JSON, truncated JSON, JSON of another shape.
UNREADABLE = (ValueError, TypeError, KeyError, AttributeError, UnicodeDecodeError, OSError)


@dataclass
class Submission:
    """One file to grade: its module (None when it cannot be graded), its exercise cells, or why not."""

    path: Path
    stem: str
    module: str | None = None
    cells: dict[str, str] = field(default_factory=dict)  # "Exercise N" -> the source of that code cell
    error: str | None = None


def exercise_cells(nb: nbformat.NotebookNode) -> dict[str, str]:
    """The source of every code cell that starts with ``# Exercise N:``, by label; the last one wins."""
    found = {}
    for cell in nb.cells:
        lines = cell.get("source", "").strip().splitlines() if cell.get("cell_type") == "code" else []
        match = student._LABEL.match(lines[0]) if lines else None
        if match:
            found[match.group("label")] = cell.source
    return found


def module_of(nb: nbformat.NotebookNode, course) -> list[str]:
    """Names of the course notebooks whose title the submission's opening cells carry."""
    opening = "\n".join(str(cell.get("source", "")) for cell in nb.cells[:3])
    return [book.name for book in course.notebooks if book.title in opening]


def read(path: Path, course, module: str | None = None) -> Submission:
    """Read one submission; an unreadable file or a notebook of another module gets an ``error``."""
    result = Submission(path, path.stem)
    try:
        nb = nbformat.read(path, as_version=4)
        cells = exercise_cells(nb)
        found = module_of(nb, course)
    except UNREADABLE as exc:
        detail = (str(exc).splitlines() or [""])[0][:120]
        result.error = f"not a readable notebook ({type(exc).__name__}: {detail})"
        return result
    if module and found and module not in found:
        result.error = f"belongs to {', '.join(found)}, not to {module} (the --module being graded)"
    elif not module and len(found) != 1:
        known = ", ".join(book.name for book in course.notebooks)
        result.error = (f"cannot tell which module this notebook belongs to (its first cells name "
                        f"{'no course title' if not found else ' and '.join(found)}); pass --module, one of: {known}")
    else:
        result.module, result.cells = module or found[0], cells
    return result
