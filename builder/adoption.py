"""``adopt``: the .py source rewritten from a .ipynb edited in Jupyter or Colab, and why that would lose work, if it would."""

import difflib
import json
from pathlib import Path

from . import exits, files, pairing, regions
from .cells import cell_text, first_line
from .config import FIX_COMMAND, Course, Notebook

ADOPT_COMMAND = "python -m builder adopt"


def readable_notebook(text: str, shown: str) -> str:
    """``text`` when it is a notebook's JSON; else MalformedFile naming the line and how to get the file back."""
    fix = f"restore it (`git checkout -- {shown}`) or rewrite it from its .py with `{FIX_COMMAND} --force`"
    conflict = next((n for n, line in enumerate(text.splitlines(), 1) if line.startswith(("<<<<<<<", ">>>>>>>"))), None)
    if conflict:
        raise files.MalformedFile(f"{shown}({conflict}): holds a merge-conflict marker; {fix}")
    if not text.strip():
        raise files.MalformedFile(f"{shown}(1): is empty; {fix}")
    try:
        cells = json.loads(text)["cells"]
        if not isinstance(cells, list):
            raise TypeError("cells is not a list")
    except json.JSONDecodeError as exc:
        raise files.MalformedFile(f"{shown}({exc.lineno}): not valid JSON ({exc.msg}); {fix}") from None
    except (KeyError, TypeError) as exc:
        raise files.MalformedFile(f"{shown}(1): JSON but not a notebook ({exc}); {fix}") from None
    return text


def adopted_source(course: Course, nb: Notebook) -> str:
    """The .py source rewritten from the committed .ipynb (outputs dropped): how ``adopt`` keeps an edit made in Jupyter."""
    import jupytext

    shown = course.shown(nb.ipynb)
    try:
        notebook = jupytext.reads(readable_notebook(files.read_text(nb.ipynb, shown, what="notebook"), shown), fmt="ipynb")
    except files.MalformedFile:
        raise
    except Exception as exc:  # nbformat raises several private types for a broken .ipynb
        raise files.MalformedFile(f"{shown}(1): not a readable notebook: {exc}") from None
    return pairing.write_percent(pairing.filtered(notebook, course.root), course.root)


def adopt_blockers(course: Course, nb: Notebook, committed: str, expected: str) -> tuple[int, str]:
    """Why ``adopt`` would not keep the edits of a committed .ipynb, as (exit code, message); (0, "") when it would."""
    conflicts = adopt_conflicts(nb.ipynb, committed, expected)
    if conflicts:
        return exits.IPYNB_EDIT, (f"both {course.shown(nb.ipynb)} and {course.shown(nb.source)} changed since the last build, so adopting "
                                  "would lose work in the .py: " + "; ".join(conflicts) + ". Copy the .ipynb edits into the .py by hand")
    label = course.shown(nb.source)
    inside = regions.hand_edited(regions.parse(adopted_source(course, nb), label))
    if inside:
        where = "; ".join(f"'{r.key}' (generated from {regions.source_hint(r)})" for r in inside)
        return exits.HAND_EDIT, (f"the edit in {course.shown(nb.ipynb)} lies inside generated region(s) {where}, which a build "
                                 f"rewrites: move the change to that source, then run `{FIX_COMMAND} --force`")
    return exits.OK, ""


def adopt_conflicts(path: Path, committed: str, expected: str) -> list[str]:
    """Why adopting a committed .ipynb would lose work in its .py: cells the .py changed, added or removed since that build.

    The two cell lists are aligned; where they differ, a committed cell whose id still matches its
    text was written by a build, so the .py changed it since, and a .py cell with nothing in its
    place in the .ipynb was added to the .py (or deleted in Jupyter: the builder cannot tell which).
    """
    ours = [(c["cell_type"], cell_text(c["source"])) for c in json.loads(expected)["cells"]]
    cells = json.loads(committed)["cells"]
    theirs = [(c.get("cell_type", "?"), cell_text(c.get("source", ""))) for c in cells]
    found = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ours, theirs, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        for j in range(j1, j2):
            if str(cells[j].get("id", "")).split("-")[0] == pairing.cell_id(*theirs[j]):
                found.append(f"{path.name} cell {j} was changed in the .py since the .ipynb was built")
        if op == "delete":
            for kind, text in ours[i1:i2]:
                found.append(f"the .py has a {kind} cell the .ipynb lacks (added to the .py, or deleted in Jupyter): {first_line(text)!r}")
    return found
