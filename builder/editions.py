"""Both editions of one notebook from a single parse of its source, and every way the committed files drifted.

The data path: the source text, its regions rendered (``regions``), parsed once by jupytext
(``pairing``); from that one parse come the solution .py and .ipynb and, through ``student``, the
student .py and .ipynb. ``build`` writes what differs, all files at once; ``check`` diffs them.
"""

import difflib
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from . import __version__, canonical, course_metadata, exits, files, inline, pairing, regions, student
from .cells import first_line
from .config import FIX_COMMAND, Course, Notebook

ADOPT_COMMAND = "python -m builder adopt"


# Catalog findings that say only "not translated yet": warnings unless translations are strict.
UNTRANSLATED_KINDS = ("missing", "stale", "orphan", "untranslatable")


@dataclass(frozen=True)
class Finding:
    """One reason ``check`` fails: where (``file(line)``), what, and the diff that would fix it.

    ``untranslated`` marks a unit that is only behind its English: a warning by default, an error in strict mode.
    """

    path: Path
    line: int
    message: str
    diff: str = ""
    untranslated: bool = False

    def __str__(self) -> str:
        return f"{self.path}({self.line}): {self.message}"


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
    refused: list[str] = field(default_factory=list)  # translations that would end a comment line or add links or HTML
    on_disk: str = ""  # the source as read: a build refuses to write over anything else

    @property
    def generated(self) -> dict[Path, str]:
        """Every output except the English source: the files the builder alone writes."""
        return {path: text for path, text in self.expected.items() if path != self.nb.source}




def header_markdown(course: Course, nb: Notebook, ipynb_path: Path, title: str, language: str = "en") -> str:
    """Title, Open-in-Colab badge and provenance line of a notebook's first cell, in the edition's language."""
    url = course.colab_url(course.shown(ipynb_path))
    from .translation.messages import reader_message

    line = reader_message("provenance", language, course.root).format(
        version=__version__, path=f"references/{nb.reference}.json", sha256=nb.reference_sha256)
    return f"# {title}\n\n[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({url})\n\n{line}\n"


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


def renderer(course: Course, nb: Notebook, label: str, ipynb_path: Path, title: str, source, snapshot: tuple | None = None):
    """The function that writes each region of one notebook source (``source``: its text or its parse); RegionError names the region."""

    def render(region: regions.Region) -> str:
        try:
            if region.kind == "inline":
                return inline.source_of(region.arg, course.root, snapshot=snapshot)
            if region.kind == "frozen":
                if region.arg != nb.reference:
                    raise ValueError(f"this notebook's reference is {nb.reference!r}, not {region.arg!r}")
                return reference_code(course, nb, region.arg)
            if region.kind == "solutions":
                return student.solutions_code(source)  # the parse already made, not a second one
            return regions.as_markdown(header_markdown(course, nb, ipynb_path, title))
        except files.MalformedFile:
            raise
        except (inline.InlineError, ValueError, OSError) as exc:
            raise regions.RegionError(label, region.begin_line, str(exc)) from None

    return render


def check_dependencies(course: Course, found: list[regions.Region], path: str, snapshot: tuple | None = None) -> None:
    """Every inlined name must come after the regions of the names it uses."""
    done: set[str] = set()
    for region in found:
        if region.kind != "inline":
            continue
        try:
            needed = inline.dependencies(region.arg, course.root, snapshot=snapshot)
        except inline.InlineError as exc:
            raise regions.RegionError(path, region.begin_line, str(exc)) from None
        missing = sorted(needed - done)
        if missing:
            raise regions.RegionError(
                path, region.begin_line,
                f"inline {region.arg} uses {', '.join(missing)}; add an inline region for each one above it",
            )
        done.add(region.arg)


def editions(course: Course, nb: Notebook, text: str | None = None) -> Editions:
    """Render, parse once and derive all four outputs of one notebook; raise on a malformed source, write nothing.

    ``text`` stands in for the source on disk (``adopt``'s rewritten source, written with the rest).
    """
    label = course.shown(nb.source)
    on_disk = files.read_text(nb.source, label)
    text = on_disk if text is None else text
    found = regions.parse(text, label)
    snapshot = inline.contracts_snapshot(course.root)  # one look at builder/contracts per notebook
    check_dependencies(course, found, label, snapshot)
    result = Editions(nb, text, hand_edited=regions.hand_edited(found), on_disk=on_disk)
    fresh: dict[str, str] = {}

    def solution_region(region: regions.Region) -> str:
        fresh[region.key] = body = render(region)
        return body

    # The one parse of the source: exercise cells lie outside regions, so the solutions region can be
    # rendered from it, and when no region changed (check on a clean tree) it is the parse of the result too.
    parsed = pairing.read_source(text, course.root)
    render = renderer(course, nb, label, nb.ipynb, nb.title, parsed, snapshot)
    rendered = regions.render(text, solution_region, label)
    if rendered != text:
        parsed = pairing.read_source(rendered, course.root)
    solution_py = pairing.write_percent(parsed, course.root)
    if solution_py != rendered:  # jupytext would lay it out differently: pair what will be written
        parsed = pairing.read_source(solution_py, course.root)
    result.expected[nb.source] = solution_py
    result.expected[nb.ipynb] = pairing.ipynb_text(parsed, course.root, course_metadata.stamp(nb.name, "solution", nb.language))
    student_nb = student.student_notebook(parsed)  # leaves ``parsed`` as it is; swap_header replaces cells, never edits them
    student_header(course, nb, student_nb)
    result.expected[nb.student_source] = pairing.write_percent(student_nb, course.root)
    read_back(course, result, nb.student_source, student_nb)
    result.expected[nb.student_ipynb] = pairing.ipynb_text(student_nb, course.root, course_metadata.stamp(nb.name, "student", nb.language))
    result.findings = source_findings(course, result, found, fresh, label)
    if course.languages:
        result.findings += untranslatable_cells(course, result, parsed, solution_py)
    for language in course.languages:
        translate(course, nb.translated(language), parsed, result)
    return result


def untranslatable_cells(course: Course, result: Editions, parsed, text: str) -> list[Finding]:
    """Markdown cells whose prose no translation reaches, because the cell also holds a region marker."""
    from .translation.units import REGION_MARK, untranslatable

    starts = pairing.cell_lines(text, len(parsed.cells))
    return [Finding(Path(course.shown(result.nb.source)), starts[index] or 1, f"untranslatable: the markdown cell starting {words!r} holds '{REGION_MARK}' "
                    "outside a generated region, so no edition translates it; move the marker out of the prose or the prose into a cell of its own",
                    untranslated=True)
            for index, words in untranslatable(parsed)]


class UnsafeTranslation(files.MalformedFile):
    """A translation that would end a comment line or add a link or HTML the English lacks: never written."""


def refuse_unsafe_translations(results: list[Editions]) -> None:
    """Raise before anything is written when a translation is not plain text for its place in the edition."""
    refused = [line for result in results for line in result.refused]
    if refused:
        raise UnsafeTranslation("refusing to write translations that are not data: " + "; ".join(refused)
                                + ". Fix these entries in the catalog (a translation keeps the English's links, HTML and line structure)")


def translate(course: Course, edition: Notebook, english, result: Editions) -> None:
    """Add one translated edition's four outputs and its catalog's drift to ``result``.

    Units without a current translation keep their English, marked untranslated in the edition's
    source; ``build`` lists them and ``check`` reports each one (a warning, or an error when strict).
    """
    import nbformat

    from .translation import catalog as po
    from .translation import glossary, messages, typography
    from .translation.render import localize_numbers, render_notebook
    from .translation.units import units

    shown = course.shown(edition.catalog)
    try:
        catalog = po.load(edition.catalog, shown)
        glossary_path = edition.catalog.parent / "glossary.po"
        terms = glossary.load_terms(po.load(glossary_path, course.shown(glossary_path)))
    except po.CatalogError as exc:
        raise files.MalformedFile(str(exc)) from None
    found = units(english, course.root)
    drift = po.findings(catalog, found, shown, edition.language) + glossary.violations(catalog, terms, shown)
    source = result.source_text  # the English source being built (adopt's rewritten text, else as read): its figure labels
    drift += glossary.source_violations(source, terms, course.shown(result.nb.source))
    drift += typography.label_findings(source, course.shown(result.nb.source)) if edition.language == "ru" else []
    result.findings += [Finding(Path(f.path), f.line, f"{f.kind}: [{f.context}] {f.detail}", f.diff, untranslated=f.kind in UNTRANSLATED_KINDS)
                        for f in drift]
    result.refused += [f"{f.path}({f.line}): {f.kind}: [{f.context}] {f.detail}" for f in drift if f.kind in po.REFUSED]
    parsed, text_left = render_notebook(english, catalog, edition.language, fallback=True)
    messages.add_table(parsed, messages.table(message_catalog(course, edition.language), messages.units(course.root)))
    localize_numbers(parsed, edition.language, course.root)  # its prints and captions write numbers as the language does
    if terms:  # the reader-facing glossary closes the edition, as the Hugging Face course's Russian edition does
        parsed.cells.append(nbformat.v4.new_markdown_cell(glossary.page(terms)))
    result.translations.append(edition)
    result.fallbacks[edition.edition] = text_left
    swap_header(course, result.nb, parsed, edition.ipynb, edition.title, language=edition.language)
    result.expected[edition.source] = pairing.write_percent(parsed, course.root)
    read_back(course, result, edition.source, parsed)
    result.expected[edition.ipynb] = pairing.ipynb_text(parsed, course.root, course_metadata.stamp(edition.name, "solution", edition.language))
    student_nb = student.student_notebook(parsed, edition.language)
    swap_header(course, result.nb, student_nb, edition.student_ipynb, edition.student_title, after=(edition.ipynb, edition.title),
                language=edition.language)
    result.expected[edition.student_source] = pairing.write_percent(student_nb, course.root)
    read_back(course, result, edition.student_source, student_nb)
    result.expected[edition.student_ipynb] = pairing.ipynb_text(student_nb, course.root, course_metadata.stamp(edition.name, "student", edition.language))


def read_back(course: Course, result: Editions, path: Path, written) -> None:
    """Refuse an edition whose .py jupytext reads back as other cells than the .ipynb written beside it (check and build alike)."""
    for what in pairing.read_back(result.expected[path], written, course.root):
        message = f"read-back: {what}; its .py and .ipynb would be two notebooks (a translated line became a cell marker or code?)"
        result.findings.append(Finding(Path(course.shown(path)), 1, message))
        result.refused.append(f"{course.shown(path)}(1): {message}")


def message_catalog(course: Course, language: str):
    """The checks' message catalog of ``language``; a malformed one is a MalformedFile naming its line."""
    from .translation import catalog as po
    from .translation import messages

    try:
        return messages.load(language, course.root)
    except po.CatalogError as exc:
        raise files.MalformedFile(str(exc)) from None


def message_findings(course: Course) -> list[Finding]:
    """The drift of each language's message catalog from the checks' messages (once for the course, not per notebook)."""
    from .translation import catalog as po
    from .translation import messages

    found, drift = messages.units(course.root), []
    for language in course.languages:
        shown = f"translations/{language}/{messages.CATALOG}"
        drift += [Finding(Path(f.path), f.line, f"{f.kind}: [{f.context}] {f.detail}", f.diff, untranslated=f.kind in UNTRANSLATED_KINDS)
                  for f in po.findings(message_catalog(course, language), found, shown, language)]
    return drift


def fallback_notes(results: list[Editions]) -> list[str]:
    """One line per translated edition that keeps English text: how many units, and the first few contexts."""
    return [f"{edition}: {len(contexts)} unit(s) left in English, marked untranslated: {'; '.join(contexts[:3])}{' ...' if len(contexts) > 3 else ''}"
            for r in results for edition, contexts in r.fallbacks.items() if contexts]


def student_header(course: Course, nb: Notebook, edition) -> None:
    """Give the student edition (parsed) its own header region: its title and its Colab link, with a fresh digest."""
    swap_header(course, nb, edition, nb.student_ipynb, nb.student_title)


def swap_header(course: Course, nb: Notebook, edition, ipynb_path: Path, title: str, *, after: tuple[Path, str] | None = None,
                language: str = "en") -> None:
    """Replace the header region that ``nb``'s solution edition has (or, with ``after``, that one) by one for ``ipynb_path``.

    The new header is in ``language``; the one it replaces is English, or in ``language`` too when ``after`` names it.
    """
    before_path, before_title = after or (nb.ipynb, nb.title)
    solution = regions.as_markdown(header_markdown(course, nb, before_path, before_title, language if after else "en"))
    own = regions.as_markdown(header_markdown(course, nb, ipynb_path, title, language))
    swaps = [(_uncommented(solution), _uncommented(own)), (regions.digest(solution), regions.digest(own))]
    for index, cell in enumerate(edition.cells):
        if "builder:begin header" in cell.source:
            text = cell.source
            for old, new in swaps:
                if text.count(old) != 1:
                    raise regions.RegionError(course.shown(nb.source), 1, "the header region must hold exactly the text the builder writes")
                text = text.replace(old, new)
            edition.cells[index] = type(cell)(dict(cell, source=text))  # a new cell: the parse it came from stays as it was


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
    path, shown = result.nb.source, Path(course.shown(result.nb.source))
    findings = [
        Finding(
            shown, r.begin_line,
            f"region '{r.key}' was edited by hand: its text no longer matches the sha256 on line {r.end_line}. "
            f"Move the change to its source ({_source_hint(r)}), then run `{FIX_COMMAND} --force`",
        )
        for r in result.hand_edited
    ]
    for old in found:
        if old.body != fresh[old.key] and old not in result.hand_edited:
            findings.append(Finding(
                shown, old.begin_line,
                f"region '{old.key}' is stale: {_source_hint(old)} changed since the last build; run `{FIX_COMMAND}`",
                unified(old.body, fresh[old.key], f"{label} region '{old.key}'"),
            ))
    expected = result.expected[path]
    if not findings and result.source_text != expected:
        findings.append(Finding(
            shown, first_changed_line(result.source_text, expected),
            f"not in the form the builder writes (region markers or jupytext's percent layout); run `{FIX_COMMAND}`",
            unified(result.source_text, expected, label),
        ))
    return findings


def _source_hint(region: regions.Region) -> str:
    """Where a region's text comes from, for error messages."""
    if region.kind == "inline":
        return f"builder/contracts ({region.arg})"
    if region.kind == "frozen":
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
        edits.append(CellEdit(path, index, kind, first_line(text)))
    return edits


def _text(source) -> str:
    """A cell source as one string (nbformat stores it as a string or a list of lines)."""
    return "".join(source) if isinstance(source, list) else str(source)


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
    nb, findings = result.nb, []
    edited = {path: (what, sources) for path, what, sources in generated_edits(course, result)}
    for path, expected in result.generated.items():
        committed = files.read_if_exists(path)
        if committed is None:
            findings.append(Finding(Path(course.shown(path)), 1, f"generated file is missing; run `{FIX_COMMAND}`"))
        elif committed != expected:
            findings.append(Finding(Path(course.shown(path)), first_changed_line(committed, expected), _drift_message(course, result, path, committed, edited),
                                    unified(committed, expected, course.shown(path))))
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
        where = "; ".join(f"'{r.key}' (generated from {_source_hint(r)})" for r in inside)
        return exits.HAND_EDIT, (f"the edit in {course.shown(nb.ipynb)} lies inside generated region(s) {where}, which a build "
                                 f"rewrites: move the change to that source, then run `{FIX_COMMAND} --force`")
    return exits.OK, ""


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
                found.append(f"the .py has a {kind} cell the .ipynb lacks (added to the .py, or deleted in Jupyter): {first_line(text)!r}")
    return found
