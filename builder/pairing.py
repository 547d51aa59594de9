"""The jupytext pair: the .ipynb is a pure function of the percent-format .py source.

The metadata filters are jupytext's own configuration, the ``[tool.jupytext]`` table of the
course's pyproject.toml, read by ``jupytext.config``.
"""

import contextlib
import copy
import functools
import hashlib
import re
from pathlib import Path

import jupytext
import jupytext.cell_to_text
import jupytext.pep8
import jupytext.stringparser
import nbformat
import nbformat.v4.nbbase
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
    with _cells_validated_once():
        return filtered(jupytext.reads(py_text, fmt="py:percent"), root)


@contextlib.contextmanager
def _cells_validated_once():
    """While jupytext builds a notebook's cells, skip the schema check each ``new_*_cell`` runs on its cell alone.

    That check (jsonschema with a ``$ref``) was 40% of a read; ``ipynb_text`` validates the whole notebook as it writes it.
    """
    check = nbformat.v4.nbbase.validate
    nbformat.v4.nbbase.validate = lambda node, ref=None: None
    try:
        yield
    finally:
        nbformat.v4.nbbase.validate = check


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


def _memo_lines(function, *, in_place: bool, key=tuple):
    """``function(lines, *flags)`` remembered by its arguments' values; ``in_place`` for one that rewrites ``lines`` itself.

    jupytext scans every line of every cell character by character when it writes; the four editions
    of a notebook share most cells, so ``check`` and ``build`` scan each distinct cell once.
    """
    seen: dict = {}
    lines_key = key

    def remembered(lines, *flags, **options):
        key = (lines_key(lines), flags, tuple(sorted(options.items())))
        if key not in seen:
            if len(seen) > 50_000:  # a long-lived process (the tests) building many variants
                seen.clear()
            seen[key] = function(list(lines) if in_place else lines, *flags, **options)
            seen[key] = list(seen[key]) if in_place else seen[key]
        if in_place:
            lines[:] = seen[key]
            return lines
        return seen[key]

    remembered.__wrapped__ = function
    return remembered


def _remember_cell_scans() -> None:
    """Memoise jupytext's two per-cell scans (pure functions of a cell's lines) where this jupytext has them."""
    for module, name, in_place, key in ((jupytext.cell_to_text, "comment_magic", True, tuple),
                                        (jupytext.pep8, "cell_ends_with_function_or_class", False, _without_marker)):
        function = getattr(module, name, None)
        if callable(function) and not hasattr(function, "__wrapped__"):
            setattr(module, name, _memo_lines(function, in_place=in_place, key=key))


def _without_marker(lines) -> tuple:
    """A cell's lines without a leading ``# %%`` marker: a comment line the scan skips, so a read and a write share one entry."""
    return tuple(lines[1:]) if lines and lines[0].startswith("# %%") else tuple(lines)


_remember_cell_scans()


_QUOTE_OR_COMMENT = re.compile(r"[\"'#]")


def _read_python_line(self, line: str) -> None:
    """jupytext's ``StringParser.read_line`` for Python, visiting only the quotes and ``#`` instead of every character."""
    if not self.is_quoted() and line.lstrip().startswith("#"):
        return
    self.triple_start = -1
    for match in _QUOTE_OR_COMMENT.finditer(line):
        i, char = match.start(), match.group()
        if char == "#":
            if self.single is None and self.triple is None:
                break
        elif line[i - 1:i] == "\\":
            continue
        elif self.single == char:
            self.single = None
        elif self.single is not None:
            continue
        elif line[i - 2:i + 1] == 3 * char and i >= self.triple_start + 3:
            if self.triple == char:
                self.triple, self.triple_start = None, i
            elif self.triple is None:
                self.triple, self.triple_start = char, i
        elif self.triple is None:
            self.single = char
    self.single = None


def _scan_only_quotes() -> None:
    """Replace jupytext's character-by-character quote tracker with ``_read_python_line`` for Python sources.

    ``StringParser.read_line`` was most of ``check``'s time: a read calls it on every line of every cell.
    Other languages keep jupytext's own loop.
    """
    parser = getattr(jupytext.stringparser, "StringParser", None)
    scan = getattr(parser, "read_line", None)
    if not callable(scan) or hasattr(scan, "__wrapped__"):
        return

    def read_line(self, line):
        if self.ignore or not self.python or self.comment != "#":
            return scan(self, line)
        return _read_python_line(self, line)

    read_line.__wrapped__ = scan
    parser.read_line = read_line


_scan_only_quotes()


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
