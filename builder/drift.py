"""How the committed files drifted from what the builder would write, and the refusals that keep a person's edits.

``check`` reports these findings; ``build`` refuses, writing nothing, when writing would lose an edit made by hand in
a generated region, a generated file, or a cell edited only in a .ipynb (``adopt`` copies those into the .py).
"""

import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path

from . import exits, files, pairing, regions
from .adoption import ADOPT_COMMAND, adopt_blockers, readable_notebook
from .cells import cell_text, first_line
from .config import FIX_COMMAND, Course, Notebook
from .diagnostics import BuilderError, Finding


class HandEditError(BuilderError, RuntimeError):
    """``build`` refuses to overwrite a region that was edited by hand."""

    exit_code = exits.HAND_EDIT


class IpynbEditError(BuilderError, RuntimeError):
    """``build`` refuses to overwrite cells that were edited in a .ipynb (Jupyter, Colab) and not in its .py."""

    exit_code = exits.IPYNB_EDIT


@dataclass(frozen=True)
class CellEdit:
    """A cell of a committed .ipynb whose text is neither what the builder wrote nor what the .py pairs to."""

    path: Path
    index: int
    cell_type: str
    first_line: str

    def __str__(self) -> str:
        return f"{self.path.name} cell {self.index} ({self.cell_type}): {self.first_line!r}"


@dataclass
class Editions:
    """What the builder would write for one notebook, beside what is committed."""

    nb: Notebook
    source_text: str
    expected: dict[Path, str] = field(default_factory=dict)  # every output, solution .py first
    findings: list[Finding] = field(default_factory=list)  # problems in the source: hand-edited or stale regions, form
    hand_edited: list[regions.Region] = field(default_factory=list)
    translations: list[Notebook] = field(default_factory=list)  # the translated editions derived here
    fallbacks: dict[str, list[str]] = field(default_factory=dict)  # edition -> contexts still in English
    refused: list[str] = field(default_factory=list)  # translations that would end a comment line or add links or HTML
    on_disk: str = ""  # the source as read: a build refuses to write over anything else

    @property
    def generated(self) -> dict[Path, str]:
        """Every output except the English source: the files the builder alone writes."""
        return {path: text for path, text in self.expected.items() if path != self.nb.source}


def unified(old: str, new: str, label: str) -> str:
    """A unified diff from the committed text to the text the builder would write."""
    return "".join(difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"{label} (committed)", f"{label} (expected)"
    ))


def first_changed_line(old: str, new: str) -> int:
    """1-based number of the first line where two texts differ."""
    for number, (a, b) in enumerate(zip(old.splitlines(), new.splitlines()), start=1):
        if a != b:
            return number
    return min(len(old.splitlines()), len(new.splitlines())) + 1


def source_findings(course: Course, result: Editions, found: list[regions.Region], fresh: dict[str, str], label: str) -> list[Finding]:
    """Hand edits, stale regions and layout drift in one percent source."""
    path, shown = result.nb.source, course.shown(result.nb.source)
    findings = [
        Finding(
            shown, r.begin_line, "hand-edit",
            f"region '{r.key}' was edited by hand: its text no longer matches the sha256 on line {r.end_line}. "
            f"Move the change to its source ({regions.source_hint(r)}), then run `{FIX_COMMAND} --force`",
        )
        for r in result.hand_edited
    ]
    for old in found:
        if old.body != fresh[old.key] and old not in result.hand_edited:
            findings.append(Finding(
                shown, old.begin_line, "stale-region",
                f"region '{old.key}' is stale: {regions.source_hint(old)} changed since the last build; run `{FIX_COMMAND}`",
                diff=unified(old.body, fresh[old.key], f"{label} region '{old.key}'"),
            ))
    expected = result.expected[path]
    if not findings and result.source_text != expected:
        findings.append(Finding(
            shown, first_changed_line(result.source_text, expected), "layout",
            f"not in the form the builder writes (region markers or jupytext's percent layout); run `{FIX_COMMAND}`",
            diff=unified(result.source_text, expected, label),
        ))
    return findings


def ipynb_edits(path: Path, committed: str, expected: str) -> list[CellEdit]:
    """Cells of a committed .ipynb edited there: their id no longer matches their text, and the .py does not hold that text.

    The builder gives every cell an id derived from its text, and Jupyter keeps a cell's id when
    the cell is edited. A cell whose text matches its id was written by some build (it is merely
    stale), and a cell whose text the .py already pairs to loses nothing; anything else exists
    only in the .ipynb.
    """
    try:
        cells = json.loads(committed).get("cells", [])
        wanted = {(c["cell_type"], cell_text(c["source"])) for c in json.loads(expected)["cells"]}
    except (ValueError, AttributeError, KeyError, TypeError):
        return [CellEdit(path, 0, "file", "not a notebook the builder can read (a merge conflict?)")]
    edits = []
    for index, cell in enumerate(cells):
        kind, text = cell.get("cell_type", "?"), cell_text(cell.get("source", ""))
        if (kind, text) in wanted or str(cell.get("id", "")).split("-")[0] == pairing.cell_id(kind, text):
            continue
        edits.append(CellEdit(path, index, kind, first_line(text)))
    return edits


def generated_pairs(course: Course, result: Editions) -> list[tuple[Path, Path, str]]:
    """Each generated (.py, .ipynb) pair beside the English source, with what it is generated from."""
    nb = result.nb
    pairs = [(nb.student_source, nb.student_ipynb, course.shown(nb.source))]
    for edition in result.translations:
        sources = f"{course.shown(nb.source)} and {course.shown(edition.catalog)}"
        pairs += [(edition.source, edition.ipynb, sources), (edition.student_source, edition.student_ipynb, sources)]
    return pairs


def generated_edits(course: Course, result: Editions) -> list[tuple[Path, str, str]]:
    """Generated files edited by hand, as (path, what was edited, what it is generated from).

    A generated .ipynb was edited where a cell's text no longer matches its id; a generated .py where
    it differs from what the builder writes while the .ipynb written beside it is current (a stale
    pair differs in both).
    """
    found = []
    for py, ipynb, sources in generated_pairs(course, result):
        py_text, ipynb_text = files.read_if_exists(py), files.read_if_exists(ipynb)
        if ipynb_text is not None and ipynb_text != result.expected[ipynb]:
            found += [(ipynb, f"cell {e.index} ({e.cell_type}): {e.first_line!r}", sources) for e in ipynb_edits(ipynb, ipynb_text, result.expected[ipynb])]
        elif ipynb_text == result.expected[ipynb] and py_text is not None and py_text != result.expected[py]:
            found.append((py, f"line {first_changed_line(py_text, result.expected[py])}", sources))
    return found


def generated_advice(course: Course, sources: str) -> str:
    """What to do about an edit to a generated file: its sources, then the build that overwrites it."""
    return f"generated from {sources}: move the change there, then run `{FIX_COMMAND} --force`"


def pair_findings(course: Course, result: Editions) -> list[Finding]:
    """Generated files that differ from what the builder writes: every file ``build`` writes except the English source."""
    findings = []
    edited = {path: (what, sources) for path, what, sources in generated_edits(course, result)}
    for path, expected in result.generated.items():
        committed = files.read_if_exists(path)
        if committed is None:
            findings.append(Finding(course.shown(path), 1, "missing-file", f"generated file is missing; run `{FIX_COMMAND}`"))
        elif committed != expected:
            findings.append(Finding(course.shown(path), first_changed_line(committed, expected), "drift",
                                    _drift_message(course, result, path, committed, edited),
                                    diff=unified(committed, expected, course.shown(path))))
    return findings


def _drift_message(course: Course, result: Editions, path: Path, committed: str, edited: dict) -> str:
    """Why a generated file differs, and the command that fixes it without losing anything."""
    nb = result.nb
    if path == nb.ipynb:
        edits = ipynb_edits(path, committed, result.expected[path])
        if edits:
            cells = "; ".join(str(e) for e in edits)
            try:
                blocked = adopt_blockers(course, nb, readable_notebook(committed, course.shown(path)), result.expected[path])[1]
            except (files.MalformedFile, regions.RegionError) as exc:
                blocked = str(exc)
            if blocked:
                return f"edited in Jupyter or Colab ({cells}), and `adopt` cannot keep it: {blocked}"
            return f"edited in Jupyter or Colab ({cells}); `{ADOPT_COMMAND} {nb.name}` copies the edit into {course.shown(nb.source)}"
        return f"out of sync with {course.shown(nb.source)} (not rebuilt); run `{FIX_COMMAND}`"
    if path in edited:
        what, sources = edited[path]
        return f"edited by hand ({what}); it is {generated_advice(course, sources)}"
    sources = next(s for py, ipynb, s in generated_pairs(course, result) if path in (py, ipynb))
    return f"stale: it is generated from {sources} (not rebuilt); run `{FIX_COMMAND}`"


def refuse_lost_edits(course: Course, results: list[Editions]) -> None:
    """Raise before anything is written when a build would overwrite a hand-edited region, a cell edited in a .ipynb, or an edited generated file."""
    edited = [f"{course.shown(r.nb.source)}({g.begin_line}) '{g.key}'" for r in results for g in r.hand_edited]
    if edited:
        raise HandEditError(f"refusing to overwrite hand-edited region(s): {', '.join(edited)}. "
                            "Move the edit to its source, then rerun with --force")
    lost = []
    for result in results:
        committed = files.read_if_exists(result.nb.ipynb)
        if committed is not None and committed != result.expected[result.nb.ipynb]:
            lost += ipynb_edits(result.nb.ipynb, committed, result.expected[result.nb.ipynb])
    generated = [edit for result in results for edit in generated_edits(course, result)]
    if generated:
        raise IpynbEditError("refusing to overwrite generated files edited by hand: " + "; ".join(
            f"{course.shown(path)} {what}: {generated_advice(course, sources)}" for path, what, sources in generated))
    if lost:
        names = sorted({e.path.stem for e in lost})
        raise IpynbEditError(
            "refusing to overwrite cells edited only in a .ipynb: " + "; ".join(f"{course.shown(e.path)} cell {e.index} ({e.cell_type}): {e.first_line!r}" for e in lost)
            + f". Keep them with `{ADOPT_COMMAND} {' '.join(names)}` (copies the .ipynb into its .py), or discard them with `{FIX_COMMAND} --force`"
        )
