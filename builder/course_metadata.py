"""``metadata.course = {module, edition, language}`` in every built .ipynb, so the grader knows a notebook in any language."""

from pathlib import Path

import nbformat


def stamp(text: str, module: str, edition: str, language: str) -> str:
    """The .ipynb ``text`` with its notebook metadata naming the course module, edition and language."""
    nb = nbformat.reads(text, as_version=4)
    nb.metadata["course"] = {"module": module, "edition": edition, "language": language}
    return nbformat.writes(nb) + "\n"


def stamp_all(course, nb, expected: dict[Path, str]) -> None:
    """Stamp every .ipynb among one notebook's built files (solution and student, every language)."""
    for edition in [nb, *(nb.translated(language) for language in course.languages)]:
        for path, kind in ((edition.ipynb, "solution"), (edition.student_ipynb, "student")):
            if path in expected:
                expected[path] = stamp(expected[path], nb.name, kind, edition.language)
