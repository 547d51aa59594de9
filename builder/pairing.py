"""The jupytext pair: the .ipynb is a pure function of the percent-format .py source.

The metadata filters are jupytext's own configuration, the ``[tool.jupytext]`` table of the
course's pyproject.toml, read by ``jupytext.config``.
"""

import copy
import functools
import hashlib
from pathlib import Path

import jupytext
import nbformat
from jupytext.config import load_jupytext_configuration_file
from jupytext.metadata_filter import filter_metadata

from . import cells
from .config import ROOT

KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
@functools.cache
def filters(root: Path = ROOT) -> dict[str, str]:
    """``[tool.jupytext]``'s metadata filters and pairing formats, as jupytext itself reads them from ``root``."""
    config = load_jupytext_configuration_file(str(root / "pyproject.toml"))
    if config is None:
        raise ValueError(f"{root / 'pyproject.toml'} has no [tool.jupytext] table; it sets the pairing and its metadata filters")
    formats = config.formats if isinstance(config.formats, str) else ";".join(config.formats)
    return {"notebook_metadata_filter": config.notebook_metadata_filter, "cell_metadata_filter": config.cell_metadata_filter,
            "formats": formats}


def cell_id(cell_type: str, source: str) -> str:
    """The content-derived id the builder gives a cell: a cell edited in Jupyter keeps its id, so the two disagree."""
    return hashlib.sha256(f"{cell_type}\n{source}".encode()).hexdigest()[:8]


def read_source(py_text: str, root: Path = ROOT) -> nbformat.NotebookNode:
    """Parse a percent-format source into a notebook whose cell metadata passes the configured filter."""
    return filtered(jupytext.reads(py_text, fmt="py:percent"), root)


def filtered(nb: nbformat.NotebookNode, root: Path = ROOT) -> nbformat.NotebookNode:
    """``nb`` with each cell's metadata cut down by the configured cell metadata filter (in place)."""
    keep = filters(root)["cell_metadata_filter"]
    for cell in nb.cells:
        cell.metadata = nbformat.NotebookNode(filter_metadata(dict(cell.metadata), keep, "-all"))
    return nb


def ipynb_text(nb: nbformat.NotebookNode, root: Path = ROOT, course: dict | None = None) -> str:
    """The exact .ipynb text of a parsed source (left unchanged): no outputs, content-derived cell ids.

    ``course``, when given, is written as ``metadata.course`` (``course_metadata.stamp``), in the same one write.
    """
    # A copy deep enough for what changes below (each cell and its metadata), not of every string and list.
    nb = nbformat.NotebookNode(dict(nb, cells=[nbformat.NotebookNode(dict(c, metadata=nbformat.NotebookNode(dict(c.metadata)))) for c in nb.cells]))
    config = filters(root)
    nb.metadata = nbformat.NotebookNode({
        "jupytext": {"cell_metadata_filter": config["cell_metadata_filter"], "formats": config["formats"],
                     "notebook_metadata_filter": config["notebook_metadata_filter"]},
        "kernelspec": KERNELSPEC,
        "language_info": {"name": "python"},
        **({"course": course} if course is not None else {}),
    })
    seen: dict[str, int] = {}
    for cell in nb.cells:
        base = cell_id(cell.cell_type, cell.source)
        seen[base] = seen.get(base, 0) + 1
        cell["id"] = base if seen[base] == 1 else f"{base}-{seen[base]}"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        if cells.HIDDEN_TAG in cell.metadata.get("tags", []):
            cell.metadata.update(copy.deepcopy(cells.COLLAPSED))
    nb.nbformat, nb.nbformat_minor = 4, 5
    invalid: dict = {}
    text = nbformat.writes(nb, capture_validation_error=invalid)  # validates once, as it writes
    if invalid:
        raise invalid["ValidationError"]
    return text + "\n"


def to_ipynb(py_text: str, root: Path = ROOT) -> str:
    """The exact .ipynb text paired with ``py_text``."""
    return ipynb_text(read_source(py_text, root), root)


def write_percent(nb: nbformat.NotebookNode, root: Path = ROOT) -> str:
    """A notebook (left unchanged) in jupytext's percent format, with the configured metadata filters."""
    nb = copy.copy(nb)
    config = filters(root)
    nb.metadata = nbformat.NotebookNode({"jupytext": {k: config[k] for k in ("notebook_metadata_filter", "cell_metadata_filter")}})
    return jupytext.writes(nb, fmt="py:percent")


def cell_lines(text: str, count: int) -> list[int]:
    """The 1-based line of each of ``count`` cells' ``# %%`` marker in a percent source (0 for a first cell without one)."""
    starts = [n for n, line in enumerate(text.split("\n"), start=1) if line.startswith("# %%")][-count:] if count else []
    return [0] * (count - len(starts)) + starts


def read_back(py_text: str, nb: nbformat.NotebookNode, root: Path = ROOT) -> list[str]:
    """How jupytext reads ``py_text`` (written from ``nb``) back otherwise than ``nb``: each cell split, joined, or changed.

    A written edition must read back as the notebook it was written from, or its .py and its .ipynb
    are two different notebooks (a translated ``%%`` line would be a cell marker in the .py only).
    """
    back = read_source(py_text, root).cells
    found = [f"cell {i + 1} ({a.cell_type}) reads back as {b.cell_type} {cells.first_line(b.source)!r}"
             for i, (a, b) in enumerate(zip(nb.cells, back)) if (a.cell_type, a.source) != (b.cell_type, b.source)]
    if len(back) != len(nb.cells):
        found.append(f"{len(nb.cells)} cells read back as {len(back)}")
    return found[:3]
