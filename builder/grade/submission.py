"""A handed-in notebook: its module, the code of each exercise cell, and the student's own code cells.

The module comes from ``metadata.course.module`` (written by ``build`` into every edition), or else
from a course title, in any language, in the opening cells. Exercise cells are found by their cell
id or ``exercise`` tag, then by an ``Exercise N`` label anywhere in their comments, in any case;
leading comments and magics do not matter. Code cells that are neither course cells nor exercise
cells are the student's own: their imports, functions, classes and constants are taken too.
"""

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from .. import student

# What nbformat raises for files that are not notebooks: not JSON, truncated JSON, JSON of another shape.
UNREADABLE = (ValueError, TypeError, KeyError, AttributeError, UnicodeDecodeError, OSError)
_LABEL = re.compile(r"^\s*#.*?\bexercise\s+(\d+)\b", re.IGNORECASE | re.MULTILINE)
# An untagged cell counts as an exercise only when its first comment *starts* with the label: a course cell's
# Colab title ("# @title The check of Exercise 2: ...") names an exercise without being one.
_HEADER = re.compile(r"^\s*#\s*exercise\s+(\d+)\b", re.IGNORECASE)


@dataclass
class Submission:
    """One file to grade: its module (None when it cannot be graded), its exercise cells, or why not."""

    path: Path
    stem: str
    module: str | None = None
    cells: dict[str, str] = field(default_factory=dict)  # "Exercise N" -> the source of that code cell
    own: list[str] = field(default_factory=list)  # the student's own code cells, in order
    error: str | None = None
    language: str = "en"  # metadata.course.language: the language of the feedback


@dataclass(frozen=True)
class Known:
    """What the shipped editions tell about their cells: exercise cell ids by label, and every course cell."""

    exercise_ids: dict[str, str]
    course_ids: frozenset[str]
    course_sources: frozenset[str]


@functools.cache
def known(root: Path) -> Known:
    """Cell ids and sources of every edition: those shipped under ``root/notebooks``, and the graded ones ``release`` writes.

    A graded edition (``metadata.course.edition`` "graded") is a student edition less its solution regions, with
    one hidden cell added that makes cells wait for unfinished exercises: both are course cells, in every language.
    """
    from .. import release

    exercise_ids, ids = {}, set()
    sources = {release.waiting_cell(root, language).source.strip() for language in release.WAITING_TITLE}
    for path in sorted((root / "notebooks").rglob("*.ipynb")):
        try:
            nb = nbformat.read(path, as_version=4)
        except UNREADABLE:
            continue
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            ids.add(cell.get("id", ""))
            sources.update({cell.source.strip(), release.graded_cell_source(cell.source).strip()})
            label = _label(cell.source)
            if "exercise" in cell.metadata.get("tags", []) and label:
                exercise_ids[cell.get("id", "")] = label
    return Known(exercise_ids, frozenset(ids - {""}), frozenset(sources))


def _label(source: str) -> str | None:
    """'Exercise N' from the first comment line that names it (any case), or None."""
    match = _LABEL.search(source)
    return f"Exercise {int(match.group(1))}" if match else None


def exercise_cells(nb: nbformat.NotebookNode, labels: list[str] | None = None, root: Path | None = None) -> dict[str, str]:
    """The source of every exercise cell, by label; with several for one label, the last one wins."""
    ids = known(root).exercise_ids if root else {}
    found, tagged = {}, 0
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        is_tagged = "exercise" in cell.get("metadata", {}).get("tags", [])
        label = ids.get(cell.get("id", "")) or _label(cell.get("source", "")) if (is_tagged or cell.get("id", "") in ids) else _header_label(cell)
        if is_tagged and label is None and labels and tagged < len(labels):
            label = labels[tagged]
        tagged += is_tagged
        if label:
            found[label] = cell.source
    return found


def _header_label(cell) -> str | None:
    """The label of an untagged cell that opens with an '# Exercise N' comment (a cell copied by hand)."""
    lines = [line for line in cell.get("source", "").splitlines() if line.strip() and not line.lstrip().startswith(("%", "!"))]
    match = _HEADER.match(lines[0]) if lines else None
    return f"Exercise {int(match.group(1))}" if match else None


def own_cells(nb: nbformat.NotebookNode, exercises: dict[str, str], root: Path) -> list[str]:
    """Code cells that are neither a course cell nor an exercise cell: the student's own, in order."""
    course = known(root)
    taken = set(exercises.values())
    return [c.source for c in nb.cells if c.get("cell_type") == "code" and c.source not in taken
            and c.get("id", "") not in course.course_ids and c.source.strip() not in course.course_sources and c.source.strip()]


def titles(book) -> list[str]:
    """Every title the notebook has, in every language."""
    return [book.title, *(title for _, title in book.titles)]


def module_of(nb: nbformat.NotebookNode, course) -> list[str]:
    """Names of the course notebooks the submission belongs to: by metadata.course, else by a title in its opening cells."""
    meta = nb.metadata.get("course", {})
    named = meta.get("module") if isinstance(meta, dict) else None
    if isinstance(named, str) and named in {book.name for book in course.notebooks}:
        return [named]
    opening = "\n".join(str(cell.get("source", "")) for cell in nb.cells[:3])
    return [book.name for book in course.notebooks if any(title in opening for title in titles(book))]


def language_of(nb: nbformat.NotebookNode, course) -> str:
    """The language of a submission's feedback: its metadata.course.language when the course has it, else English."""
    meta = nb.metadata.get("course", {})
    language = meta.get("language") if isinstance(meta, dict) else None
    return language if isinstance(language, str) and language in ("en", *course.languages) else "en"


def read(path: Path, course, module: str | None = None) -> Submission:
    """Read one submission; an unreadable file or a notebook of another module gets an ``error``."""
    result = Submission(path, path.stem)
    try:
        nb = nbformat.read(path, as_version=4)
        found = module_of(nb, course)
        result.language = language_of(nb, course)
    except UNREADABLE as exc:
        detail = (str(exc).splitlines() or [""])[0][:120]
        result.error = f"not a readable notebook ({type(exc).__name__}: {detail})"
        return result
    if module and found and module not in found:
        result.error = f"belongs to {', '.join(found)}, not to {module} (the --module being graded)"
    elif not module and len(found) != 1:
        known_names = ", ".join(book.name for book in course.notebooks)
        result.error = (f"cannot tell which module this notebook belongs to (its first cells name "
                        f"{'no course title' if not found else ' and '.join(found)}); pass --module, one of: {known_names}")
    else:
        result.module = module or found[0]
        book = course.select([result.module])[0]
        labels = [e.label for e in student.exercises(_source_notebook(book))]
        try:
            result.cells = exercise_cells(nb, labels, course.root)
            result.own = own_cells(nb, result.cells, course.root)
        except UNREADABLE as exc:
            result.error = f"not a readable notebook ({type(exc).__name__}: {str(exc)[:120]})"
    return result


@functools.cache
def _source_notebook(book):
    """The course source of ``book`` as a notebook (cached per batch)."""
    from .. import pairing

    return pairing.read_source(book.source.read_text(encoding="utf-8"))
