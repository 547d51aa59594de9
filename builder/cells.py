"""Cell conventions written once: the hidden-machinery tag, how build collapses it, the exercise label, a cell's first line."""

import re

HIDDEN_TAG = "hide-input"  # an author's hidden, titled machinery cell (its first line is ``# @title ...``)
COLLAPSED = {"cellView": "form", "jupyter": {"source_hidden": True}}  # what build sets on it: Colab's form, Jupyter's fold
# The first line of an exercise cell: "# Exercise 3: <instructions>", or in a translated edition
# "# Exercise 3 · Упражнение 3: <instructions>" (the grader's key, then the reader's word).
EXERCISE_LABEL = re.compile(r"^#\s*(?P<label>Exercise \d+)(?:\s*·[^:]*)?:\s*(?P<text>.*)$")


def collapsed(cell: dict) -> bool:
    """A cell that opens collapsed: a Colab form or a Jupyter cell with its source hidden."""
    meta = cell.get("metadata", {})
    return meta.get("cellView") == COLLAPSED["cellView"] or bool(meta.get("jupyter", {}).get("source_hidden"))


def first_line(source: str, width: int = 60, *, skip: str | None = None) -> str:
    """The first non-blank line of a cell, stripped and cut to ``width``, passing lines that contain ``skip``."""
    for line in source.splitlines():
        if line.strip() and not (skip and skip in line):
            return line.strip()[:width]
    return "(empty)"


def cell_text(source) -> str:
    """A cell source as one string (nbformat stores it as a string or a list of lines)."""
    return "".join(source) if isinstance(source, list) else str(source)
