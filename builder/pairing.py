"""The jupytext pair: the .ipynb is a pure function of the percent-format .py source."""

import hashlib

import jupytext
import nbformat

FILTERS = {"notebook_metadata_filter": "-all", "cell_metadata_filter": "tags,-all"}
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
# Cells with this tag open collapsed: in Colab as a titled form, in Jupyter with the input hidden.
COLLAPSED_TAG = "hide-input"


def read_source(py_text: str) -> nbformat.NotebookNode:
    """Parse a percent-format source into a notebook with only tags kept in cell metadata."""
    nb = jupytext.reads(py_text, fmt="py:percent")
    for cell in nb.cells:
        tags = cell.metadata.get("tags")
        cell.metadata = nbformat.NotebookNode({"tags": list(tags)} if tags else {})
    return nb


def to_ipynb(py_text: str) -> str:
    """The exact .ipynb text paired with ``py_text``: no outputs, content-derived cell ids."""
    nb = read_source(py_text)
    nb.metadata = nbformat.NotebookNode({
        "jupytext": dict(FILTERS, formats="ipynb,py:percent"),
        "kernelspec": KERNELSPEC,
        "language_info": {"name": "python"},
    })
    seen: dict[str, int] = {}
    for cell in nb.cells:
        base = hashlib.sha256(f"{cell.cell_type}\n{cell.source}".encode()).hexdigest()[:8]
        seen[base] = seen.get(base, 0) + 1
        cell["id"] = base if seen[base] == 1 else f"{base}-{seen[base]}"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        if COLLAPSED_TAG in cell.metadata.get("tags", []):
            cell.metadata.update({"cellView": "form", "jupyter": {"source_hidden": True}})
    nb.nbformat, nb.nbformat_minor = 4, 5
    nbformat.validate(nb)
    return nbformat.writes(nb) + "\n"


def write_percent(nb: nbformat.NotebookNode) -> str:
    """A notebook in jupytext's percent format, with only cell tags kept as metadata."""
    nb.metadata = nbformat.NotebookNode({"jupytext": dict(FILTERS)})
    return jupytext.writes(nb, fmt="py:percent")


def to_percent(py_text: str) -> str:
    """``py_text`` as jupytext itself would write it; a source in canonical form is unchanged."""
    return write_percent(read_source(py_text))
