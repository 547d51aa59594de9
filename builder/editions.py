"""Both editions of one notebook from a single parse of its source, and its translated editions.

The data path: the source text, its regions rendered (``regions``), parsed once by jupytext
(``pairing``); from that one parse come the solution .py and .ipynb and, through ``student``, the
student .py and .ipynb. ``build`` writes what differs, all files at once; ``check`` diffs them
(``drift``), and ``adopt`` keeps edits made in a .ipynb (``adoption``).
"""

from pathlib import Path

from . import __version__, course_metadata, files, frozen, inline, pairing, regions, student
from .config import Course, Notebook
from .diagnostics import Finding
from .drift import Editions, source_findings


def header_markdown(course: Course, nb: Notebook, ipynb_path: Path, title: str, language: str = "en") -> str:
    """Title, Open-in-Colab badge and provenance line of a notebook's first cell, in the edition's language."""
    url = course.colab_url(course.shown(ipynb_path))
    from .translation.messages import reader_message

    line = reader_message("provenance", language, course.root).format(
        version=__version__, path=f"references/{nb.reference}.json", sha256=nb.reference_sha256)
    return f"# {title}\n\n[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({url})\n\n{line}\n"


def renderer(course: Course, nb: Notebook, label: str, ipynb_path: Path, title: str, source, snapshot: tuple | None = None):
    """The function that writes each region of one notebook source (``source``: its text or its parse); RegionError names the region."""

    def render(region: regions.Region) -> str:
        try:
            if region.kind == "inline":
                return inline.source_of(region.arg, course.root, snapshot=snapshot)
            if region.kind == "frozen":
                if region.arg != nb.reference:
                    raise ValueError(f"this notebook's reference is {nb.reference!r}, not {region.arg!r}")
                return frozen.reference_code(course, nb, region.arg)
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
    return [Finding(course.shown(result.nb.source), starts[index] or 1, "untranslatable",
                    f"untranslatable: the markdown cell starting {words!r} holds '{REGION_MARK}' outside a generated region, so no "
                    "edition translates it; move the marker out of the prose or the prose into a cell of its own")
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
    from .translation import glossary, lint, messages
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
    drift += lint.label_findings(source, course.shown(result.nb.source)) if edition.language == "ru" else []
    result.findings += drift
    result.refused += [str(f) for f in drift if f.kind in po.REFUSED]
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
        result.findings.append(Finding(course.shown(path), 1, "read-back", message))
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
        drift += po.findings(message_catalog(course, language), found, shown, language)
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
