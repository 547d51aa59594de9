"""Both editions of one notebook from a single parse of its source, and every way the committed files drifted.

The data path: the source text, its regions rendered (``regions``), parsed once by jupytext
(``pairing``); from that one parse come the solution .py and .ipynb and, through ``student``, the
student .py and .ipynb. ``build`` writes what differs, all files at once; ``check`` diffs them.
"""

import copy
import difflib
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from . import __version__, canonical, course_metadata, exits, files, inline, pairing, regions, student
from .config import FIX_COMMAND, Course, Notebook

ADOPT_COMMAND = "python -m builder adopt"


@dataclass(frozen=True)
class Finding:
    """One reason ``check`` fails: where (``file(line)``), what, and the diff that would fix it."""

    path: Path
    line: int
    message: str
    diff: str = ""

    def __str__(self) -> str:
        return f"{self.path}({self.line}): {self.message}"


class StaleTranslation(RuntimeError):
    """A build would write a translated edition that still holds English (missing or stale catalog entries)."""

    exit_code = exits.FAILED


class HandEditError(RuntimeError):
    """``build`` refuses to overwrite a region that was edited by hand."""

    exit_code = exits.HAND_EDIT


class IpynbEditError(RuntimeError):
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


def header_markdown(course: Course, nb: Notebook, ipynb_path: Path, title: str) -> str:
    """Title, Open-in-Colab badge and provenance line of a notebook's first cell."""
    url = course.colab_url(course.shown(ipynb_path))
    return (
        f"# {title}\n\n"
        f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({url})\n\n"
        f"*Provenance: course builder {__version__}; reference `references/{nb.reference}.json`, "
        f"SHA-256 `{nb.reference_sha256}`.*\n"
    )


def reference_code(course: Course, nb: Notebook, name: str) -> str:
    """Python that embeds a reference file's exact text and the SHA-256 of its bytes; the file must be canonical JSON."""
    path = course.root / "references" / f"{name}.json"
    shown = course.shown(path)
    text = files.read_text(path, shown, what="reference file")
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise files.MalformedFile(f"{shown}({exc.lineno}): not valid JSON at column {exc.colno}: {exc.msg}; "
                                  "regenerate it with `python -m builder refs --update`") from None
    if not canonical.is_canonical(text):
        raise files.MalformedFile(f"{shown}(1): valid JSON but not in canonical form; run `python -m builder refs --update`")
    if '"""' in text or "\\" in text:
        raise files.MalformedFile(f"{shown}(1): holds a backslash or triple quote; keep reference strings plain")
    return (
        f'REFERENCE_SOURCE = "references/{name}.json"\n'
        f'REFERENCE_SHA256 = "{hashlib.sha256(text.encode("utf-8")).hexdigest()}"\n'
        f'REFERENCE_JSON = r"""{text}"""\n'
    )


def renderer(course: Course, nb: Notebook, label: str, ipynb_path: Path, title: str, source_text: str):
    """The function that writes each region of one notebook source; RegionError names the region on failure."""

    def render(region: regions.Region) -> str:
        try:
            if region.kind == "inline":
                return inline.source_of(region.arg, course.root)
            if region.kind == "reference":
                if region.arg != nb.reference:
                    raise ValueError(f"this notebook's reference is {nb.reference!r}, not {region.arg!r}")
                return reference_code(course, nb, region.arg)
            if region.kind == "solutions":
                return student.solutions_code(source_text)  # the text already read, not a second read
            return regions.as_markdown(header_markdown(course, nb, ipynb_path, title))
        except files.MalformedFile:
            raise
        except (inline.InlineError, ValueError, OSError) as exc:
            raise regions.RegionError(label, region.begin_line, str(exc)) from None

    return render


def check_dependencies(course: Course, found: list[regions.Region], path: str) -> None:
    """Every inlined name must come after the regions of the names it uses."""
    done: set[str] = set()
    for region in found:
        if region.kind != "inline":
            continue
        try:
            needed = inline.dependencies(region.arg, course.root)
        except inline.InlineError as exc:
            raise regions.RegionError(path, region.begin_line, str(exc)) from None
        missing = sorted(needed - done)
        if missing:
            raise regions.RegionError(
                path, region.begin_line,
                f"inline {region.arg} uses {', '.join(missing)}; add an inline region for each one above it",
            )
        done.add(region.arg)


def editions(course: Course, nb: Notebook) -> Editions:
    """Render, parse once and derive all four outputs of one notebook; raise on a malformed source, write nothing."""
    label = course.shown(nb.source)
    text = files.read_text(nb.source, label)
    found = regions.parse(text, label)
    check_dependencies(course, found, label)
    result = Editions(nb, text, hand_edited=regions.hand_edited(found))
    fresh: dict[str, str] = {}

    def solution_region(region: regions.Region) -> str:
        fresh[region.key] = body = render(region)
        return body

    render = renderer(course, nb, label, nb.ipynb, nb.title, text)
    rendered = regions.render(text, solution_region, label)
    parsed = pairing.read_source(rendered, course.root)  # the one parse of the source
    solution_py = pairing.write_percent(parsed, course.root)
    if solution_py != rendered:  # jupytext would lay it out differently: pair what will be written
        parsed = pairing.read_source(solution_py, course.root)
    result.expected[nb.source] = solution_py
    result.expected[nb.ipynb] = pairing.ipynb_text(parsed, course.root)
    student_nb = student.student_notebook(copy.deepcopy(parsed))
    student_header(course, nb, student_nb)
    result.expected[nb.student_source] = pairing.write_percent(student_nb, course.root)
    result.expected[nb.student_ipynb] = pairing.ipynb_text(student_nb, course.root)
    result.findings = source_findings(course, result, found, fresh, label)
    for language in course.languages:
        translate(course, nb.translated(language), parsed, result)
    course_metadata.stamp_all(course, nb, result.expected)  # the grader recognises every edition by it
    return result


def translate(course: Course, edition: Notebook, english, result: Editions) -> None:
    """Add one translated edition's four outputs and its catalog's drift to ``result``.

    Units without a current translation stay in English here; ``build`` refuses to write them unless told
    to fall back (``refuse_fallbacks``), and ``check`` reports each one as a catalog finding.
    """
    from .translation import catalog as po
    from .translation import glossary
    from .translation.render import render_notebook
    from .translation.units import units

    shown = course.shown(edition.catalog)
    try:
        catalog = po.load(edition.catalog)
        terms = glossary.load_terms(po.load(edition.catalog.parent / "glossary.po"))
    except po.CatalogError as exc:
        raise files.MalformedFile(str(exc)) from None
    found = units(english, course.root)
    drift = po.findings(catalog, found, shown) + glossary.violations(catalog, terms, shown)
    result.findings += [Finding(Path(f.path), f.line, f"{f.kind}: [{f.context}] {f.detail}", f.diff) for f in drift]
    parsed, text_left = render_notebook(english, catalog, edition.language, fallback=True)
    result.translations.append(edition)
    result.fallbacks[edition.edition] = text_left
    swap_header(course, result.nb, parsed, edition.ipynb, edition.title)
    result.expected[edition.source] = pairing.write_percent(parsed, course.root)
    result.expected[edition.ipynb] = pairing.ipynb_text(parsed, course.root)
    student_nb = student.student_notebook(copy.deepcopy(parsed))
    swap_header(course, result.nb, student_nb, edition.student_ipynb, edition.student_title, after=(edition.ipynb, edition.title))
    result.expected[edition.student_source] = pairing.write_percent(student_nb, course.root)
    result.expected[edition.student_ipynb] = pairing.ipynb_text(student_nb, course.root)


def refuse_fallbacks(course: Course, results: list[Editions], allowed: bool) -> list[str]:
    """Raise before anything is written when a translated edition would keep English text; with ``allowed``, say which."""
    stale = [(edition, contexts) for r in results for edition, contexts in r.fallbacks.items() if contexts]
    notes = [f"{edition}: {len(contexts)} unit(s) left in English: {'; '.join(contexts[:3])}{' ...' if len(contexts) > 3 else ''}"
             for edition, contexts in stale]
    if stale and not allowed:
        raise StaleTranslation("refusing to write translated editions with untranslated or stale units (" + " | ".join(notes)
                               + "). Translate them in translations/ (`python -m builder translations --update` marks them), "
                               "or build with --english-fallback")
    return notes


def student_header(course: Course, nb: Notebook, edition) -> None:
    """Give the student edition (parsed) its own header region: its title and its Colab link, with a fresh digest."""
    swap_header(course, nb, edition, nb.student_ipynb, nb.student_title)


def swap_header(course: Course, nb: Notebook, edition, ipynb_path: Path, title: str, *, after: tuple[Path, str] | None = None) -> None:
    """Replace the header region that ``nb``'s solution edition has (or, with ``after``, that one) by one for ``ipynb_path``."""
    before_path, before_title = after or (nb.ipynb, nb.title)
    solution = regions.as_markdown(header_markdown(course, nb, before_path, before_title))
    own = regions.as_markdown(header_markdown(course, nb, ipynb_path, title))
    swaps = [(_uncommented(solution), _uncommented(own)), (regions.digest(solution), regions.digest(own))]
    for cell in edition.cells:
        if "builder:begin header" in cell.source:
            for old, new in swaps:
                if cell.source.count(old) != 1:
                    raise regions.RegionError(course.shown(nb.source), 1, "the header region must hold exactly the text the builder writes")
                cell.source = cell.source.replace(old, new)


def _uncommented(markdown_region: str) -> str:
    """A markdown region body as it reads inside the parsed cell: jupytext drops the '# ' that as_markdown adds."""
    return "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#") for line in markdown_region.splitlines())


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
    path = result.nb.source
    findings = [
        Finding(
            path, r.begin_line,
            f"region '{r.key}' was edited by hand: its text no longer matches the sha256 on line {r.end_line}. "
            f"Move the change to its source ({_source_hint(r)}), then run `{FIX_COMMAND} --force`",
        )
        for r in result.hand_edited
    ]
    for old in found:
        if old.body != fresh[old.key] and old not in result.hand_edited:
            findings.append(Finding(
                path, old.begin_line,
                f"region '{old.key}' is stale: {_source_hint(old)} changed since the last build; run `{FIX_COMMAND}`",
                unified(old.body, fresh[old.key], f"{label} region '{old.key}'"),
            ))
    expected = result.expected[path]
    if not findings and result.source_text != expected:
        findings.append(Finding(
            path, first_changed_line(result.source_text, expected),
            f"not in the form the builder writes (region markers or jupytext's percent layout); run `{FIX_COMMAND}`",
            unified(result.source_text, expected, label),
        ))
    return findings


def _source_hint(region: regions.Region) -> str:
    """Where a region's text comes from, for error messages."""
    if region.kind == "inline":
        return f"builder/contracts ({region.arg})"
    if region.kind == "reference":
        return f"references/{region.arg}.json"
    if region.kind == "solutions":
        return "the exercise cells of the notebook source"
    return "pyproject.toml [tool.course] and the reference checksum"


def ipynb_edits(path: Path, committed: str, expected: str) -> list[CellEdit]:
    """Cells of a committed .ipynb edited there: their id no longer matches their text, and the .py does not hold that text.

    The builder gives every cell an id derived from its text, and Jupyter keeps a cell's id when
    the cell is edited. A cell whose text matches its id was written by some build (it is merely
    stale), and a cell whose text the .py already pairs to loses nothing; anything else exists
    only in the .ipynb.
    """
    try:
        cells = json.loads(committed).get("cells", [])
        wanted = {(c["cell_type"], _text(c["source"])) for c in json.loads(expected)["cells"]}
    except (ValueError, AttributeError, KeyError, TypeError):
        return [CellEdit(path, 0, "file", "not a notebook the builder can read (a merge conflict?)")]
    edits = []
    for index, cell in enumerate(cells):
        kind, text = cell.get("cell_type", "?"), _text(cell.get("source", ""))
        if (kind, text) in wanted or str(cell.get("id", "")).split("-")[0] == pairing.cell_id(kind, text):
            continue
        first = next((line.strip() for line in text.splitlines() if line.strip()), "(empty)")
        edits.append(CellEdit(path, index, kind, first[:60]))
    return edits


def _text(source) -> str:
    """A cell source as one string (nbformat stores it as a string or a list of lines)."""
    return "".join(source) if isinstance(source, list) else str(source)


def pair_findings(course: Course, result: Editions) -> list[Finding]:
    """Generated files that differ from what the builder writes: the .ipynb of each edition and the student .py."""
    nb, findings = result.nb, []
    for path in (nb.ipynb, nb.student_source, nb.student_ipynb):
        committed, expected = files.read_if_exists(path), result.expected[path]
        if committed is None:
            findings.append(Finding(path, 1, f"{'student edition' if 'student' in path.parts else 'paired notebook'} is missing; run `{FIX_COMMAND}`"))
        elif committed != expected:
            findings.append(Finding(path, first_changed_line(committed, expected), _drift_message(course, result, path, committed),
                                    unified(committed, expected, course.shown(path))))
    return findings


def _drift_message(course: Course, result: Editions, path: Path, committed: str) -> str:
    """Why a generated file differs, and the command that fixes it without losing anything."""
    nb = result.nb
    edits = ipynb_edits(path, committed, result.expected[path]) if path.suffix == ".ipynb" else []
    if edits and path == nb.ipynb:
        cells = "; ".join(str(e) for e in edits)
        return f"edited in Jupyter or Colab ({cells}); `{ADOPT_COMMAND} {nb.name}` copies the edit into {course.shown(nb.source)}"
    if path != nb.ipynb:
        return f"student edition is stale or was edited by hand; it is generated from {course.shown(nb.source)}: move any edit there and run `{FIX_COMMAND}`"
    return f"out of sync with {course.shown(nb.source)} (not rebuilt); run `{FIX_COMMAND}`"


def refuse_lost_edits(course: Course, results: list[Editions]) -> None:
    """Raise before anything is written when a build would overwrite a hand-edited region or a cell edited in a .ipynb."""
    edited = [f"{course.shown(r.nb.source)}({g.begin_line}) '{g.key}'" for r in results for g in r.hand_edited]
    if edited:
        raise HandEditError(f"refusing to overwrite hand-edited region(s): {', '.join(edited)}. "
                            "Move the edit to its source, then rerun with --force")
    lost = []
    for result in results:
        for path in [result.nb.ipynb, result.nb.student_ipynb] + [p for t in result.translations for p in (t.ipynb, t.student_ipynb)]:
            committed = files.read_if_exists(path)
            if committed is not None and committed != result.expected[path]:
                lost += ipynb_edits(path, committed, result.expected[path])
    if lost:
        names = sorted({e.path.stem for e in lost})
        raise IpynbEditError(
            "refusing to overwrite cells edited only in a .ipynb: " + "; ".join(f"{course.shown(e.path)} cell {e.index} ({e.cell_type}): {e.first_line!r}" for e in lost)
            + f". Keep them with `{ADOPT_COMMAND} {' '.join(names)}` (copies the .ipynb into its .py), or discard them with `{FIX_COMMAND} --force`"
        )


def adopted_source(course: Course, nb: Notebook) -> str:
    """The .py source rewritten from the committed .ipynb (outputs dropped): how ``adopt`` keeps an edit made in Jupyter."""
    import jupytext

    shown = course.shown(nb.ipynb)
    try:
        notebook = jupytext.reads(files.read_text(nb.ipynb, shown, what="notebook"), fmt="ipynb")
    except files.MalformedFile:
        raise
    except Exception as exc:  # nbformat raises several private types for a broken .ipynb
        raise files.MalformedFile(f"{shown}(1): not a readable notebook: {exc}") from None
    return pairing.write_percent(pairing.filtered(notebook, course.root), course.root)


def adopt_conflicts(path: Path, committed: str, expected: str) -> list[str]:
    """Why adopting a committed .ipynb would lose work in its .py: cells the .py changed, added or removed since that build.

    The two cell lists are aligned; where they differ, a committed cell whose id still matches its
    text was written by a build, so the .py changed it since, and a .py cell with nothing in its
    place in the .ipynb was added to the .py (or deleted in Jupyter: the builder cannot tell which).
    """
    ours = [(c["cell_type"], _text(c["source"])) for c in json.loads(expected)["cells"]]
    cells = json.loads(committed)["cells"]
    theirs = [(c.get("cell_type", "?"), _text(c.get("source", ""))) for c in cells]
    found = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ours, theirs, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        for j in range(j1, j2):
            if str(cells[j].get("id", "")).split("-")[0] == pairing.cell_id(*theirs[j]):
                found.append(f"{path.name} cell {j} was changed in the .py since the .ipynb was built")
        if op == "delete":
            for kind, text in ours[i1:i2]:
                first = next((line.strip() for line in text.splitlines() if line.strip()), "(empty)")
                found.append(f"the .py has a {kind} cell the .ipynb lacks (added to the .py, or deleted in Jupyter): {first[:60]!r}")
    return found
