"""The course glossary: one rendering per term, and a check that every Russian string keeps to it.

A glossary entry gives the English term (msgid), its one rendering (msgstr) and, in its comment,
``stems:`` (what an inflected rendering keeps) and ``avoid:`` (other renderings met in the course,
as regular expressions). The check covers the notebook catalogs, every other catalog beside them
(captions, messages) and the Russian strings of the figures in the English sources
(``localized(language, "en", "ru")``, ``t("en", "ru")`` and ``{"en": ..., "ru": ...}`` tables).
"""

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path

import polib

from ..diagnostics import Finding
from .units import NOT_PROSE

EXEMPT_FLAG = "glossary-exempt"
GLOSSARY = "glossary.po"
PAGE_TITLE = "Словарь терминов"


@dataclass(frozen=True)
class Term:
    """A glossary term: the English pattern, its one rendering, the stems an inflected form keeps, and renderings to avoid."""

    english: str
    rendering: str
    stems: tuple[str, ...]
    avoid: tuple[str, ...] = ()
    note: str = ""

    @functools.cached_property
    def pattern(self) -> re.Pattern:
        """The English term as a whole word, singular or plural, any case."""
        return re.compile(rf"(?<![\w-]){re.escape(self.english)}(?:s|es)?(?![\w-])", re.IGNORECASE)

    @functools.cached_property
    def others(self) -> re.Pattern | None:
        """Any other rendering of the term, as the glossary lists them."""
        return re.compile("|".join(f"(?:{a})" for a in self.avoid), re.IGNORECASE) if self.avoid else None


def _comment_list(comment: str, key: str) -> tuple[str, ...]:
    """The comma-separated values of ``key:`` in a glossary comment."""
    found = re.search(rf"^{key}:\s*(.+)$", comment or "", re.MULTILINE)
    return tuple(s.strip() for s in found.group(1).split(",") if s.strip()) if found else ()


def load_terms(glossary: polib.POFile) -> list[Term]:
    """Terms from a glossary PO file: msgid the term, msgstr the rendering, ``stems:`` and ``avoid:`` in a comment."""
    terms = []
    for entry in glossary:
        if entry.obsolete or not entry.msgstr:
            continue
        stems = tuple(s.lower() for s in _comment_list(entry.comment, "stems")) or (entry.msgstr.lower(),)
        note = re.search(r"^note:\s*(.+)$", entry.comment or "", re.MULTILINE)
        terms.append(Term(entry.msgid, entry.msgstr, stems, _comment_list(entry.comment, "avoid"), note.group(1) if note else ""))
    return terms


def problems(english: str, russian: str, terms: list[Term]) -> list[str]:
    """How ``russian`` breaks the glossary: a term of ``english`` rendered otherwise, or a rendering the glossary avoids."""
    found, text = [], russian.lower()
    english_prose, russian_prose = NOT_PROSE.sub(" ", english), NOT_PROSE.sub(" ", russian)
    for term in terms:
        if term.english.lower() in english_prose.lower():  # else no longer-term removal can make it appear
            prose = _without_longer_terms(english_prose, term, terms)
            kept = term.pattern.search(russian)  # the English word kept as a name ("tile" for torch's tile)
            if term.english.lower() in prose.lower() and term.pattern.search(prose) and not kept and not any(stem in text for stem in term.stems):
                found.append(f"{term.english!r} should be rendered {term.rendering!r} (or an inflection of it)")
        other = term.others.search(russian_prose) if term.others else None
        if other:
            found.append(f"{term.english!r} is rendered {other.group(0)!r} here and {term.rendering!r} by the glossary; "
                         "one term, one rendering (translations/ru/glossary.po)")
    return found


def _without_longer_terms(prose: str, term: Term, terms: list[Term]) -> str:
    """``prose`` without the longer terms that hold ``term`` ("bit width" is not "width"): each has its own rendering."""
    for longer in terms:
        if longer is not term and len(longer.english) > len(term.english) and term.pattern.search(longer.english):
            prose = longer.pattern.sub(" ", prose)
    return prose


def violations(catalog: polib.POFile, terms: list[Term], path: str) -> list[Finding]:
    """Translated entries whose English uses a term that the translation renders otherwise, or that use an avoided rendering."""
    found = []
    for entry in catalog:
        if entry.obsolete or not entry.msgstr or EXEMPT_FLAG in entry.flags:
            continue
        found += [Finding(path, entry.linenum, "glossary", what, context=entry.msgctxt or "") for what in problems(entry.msgid, entry.msgstr, terms)]
    return found


def _text(node: ast.AST) -> str | None:
    """The text of a string literal, or of an f-string's literal parts; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    return None


# localized(language, en, ru), and t(en, ru) where a figure binds t = partial(localized, language).
_LOCALIZERS = {("localized", 3), ("t", 2)}


def _pairs(node: ast.AST) -> list[tuple[str, str]]:
    """(English, Russian) pairs of a ``localized(language, en, ru)`` call or an ``{"en": ..., "ru": ...}`` table."""
    func = getattr(node, "func", None)
    name = func and getattr(func, "id", getattr(func, "attr", None))
    if isinstance(node, ast.Call) and (name, len(node.args)) in _LOCALIZERS:
        en, ru = _text(node.args[-2]), _text(node.args[-1])
        return [(en, ru)] if en is not None and ru is not None else []
    if isinstance(node, ast.Dict):
        keyed = {k.value: v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant)}
        if "en" in keyed and "ru" in keyed:
            en_node, ru_node = keyed["en"], keyed["ru"]
            if isinstance(en_node, ast.Tuple | ast.List) and isinstance(ru_node, ast.Tuple | ast.List):
                return [(a, b) for a, b in zip(map(_text, en_node.elts), map(_text, ru_node.elts))
                        if a is not None and b is not None]
            en_text, ru_text = _text(en_node), _text(ru_node)
            return [(en_text, ru_text)] if en_text is not None and ru_text is not None else []
    return []


# What a cell must hold to give a label pair: a t(...) or localized(...) call, or an "ru" key.
_MAY_PAIR = re.compile(r"\blocalized\s*\(|\bt\s*\(|[\"']ru[\"']")
_CELL_MARK = re.compile(r"^# %%", re.MULTILINE)


@functools.lru_cache(maxsize=16)  # the glossary and the typography lint both read every source's labels
def figure_strings(source: str) -> tuple[tuple[int, str, str], ...]:
    """(line, English, Russian) for every label a notebook source gives in both languages.

    Only the cells that can hold a pair are parsed (most of a notebook cannot); a source whose cells do
    not parse one by one is parsed whole, and ``_pairs_in`` finds the same labels either way.
    """
    starts = [0] + [m.start() for m in _CELL_MARK.finditer(source)] + [len(source)]
    found = []
    try:
        for begin, end in zip(starts, starts[1:]):
            cell = source[begin:end]
            if _MAY_PAIR.search(cell):
                found += _pairs_in(ast.parse(cell), source.count("\n", 0, begin))
            elif (cell.count('"""') + cell.count("'''")) % 2:  # a string left open: a "# %%" line may lie inside it
                raise SyntaxError("a cell that does not stand alone")
    except SyntaxError:
        found = _pairs_in(ast.parse(source))
    return tuple(sorted(found))


def _pairs_in(tree: ast.AST, offset: int = 0) -> list[tuple[int, str, str]]:
    """(line, English, Russian) of every label pair in a parsed tree whose first line is line ``offset + 1`` of the source."""
    return [(node.lineno + offset, en, ru) for node in ast.walk(tree) if isinstance(node, ast.Call | ast.Dict)
            for en, ru in _pairs(node)]


def source_violations(source: str, terms: list[Term], path: str) -> list[Finding]:
    """Figure labels of a notebook source whose Russian breaks the glossary."""
    return [Finding(path, line, "glossary", f"{ru[:40]!r}: {what}", context="figure label")
            for line, en, ru in figure_strings(source) for what in problems(en, ru, terms)]


def other_catalogs(course, language: str) -> list[Path]:
    """The catalogs of ``language`` that no notebook owns (captions, messages), the glossary itself left out."""
    owned = {nb.catalog for nb in course.translations if nb.language == language}
    folder = course.root / "translations" / language
    return [p for p in sorted(folder.glob("*.po")) if p.name != GLOSSARY and p not in owned]


def page(terms: list[Term], title: str = PAGE_TITLE) -> str:
    """A reader-facing glossary: a markdown table of each term and its one rendering."""
    merged: dict[str, tuple[list[str], str]] = {}
    for term in sorted(terms, key=lambda t: t.english.lower()):  # one row per rendering: "K/V head, KV head"
        names, note = merged.setdefault(term.rendering, ([], ""))
        merged[term.rendering] = (names + [term.english], note or term.note)
    rows = [f"| {', '.join(names)} | {rendering} | {note} |".replace("|  |", "| |") for rendering, (names, note) in merged.items()]
    return "\n".join([f"## {title}", "", "Один термин, одно название: так термины курса переводятся во всех модулях.", "",
                      "| English | Русский | Примечание |", "|---|---|---|", *rows])


def weblate_files(path: Path, language: str, catalog: polib.POFile) -> dict[Path, str]:
    """The glossary as files Weblate (and translate-toolkit) import: ``glossary.csv`` and ``glossary.tbx`` beside ``glossary.po``.

    Both hold each term, its one rendering and, as a developer's comment, the stems and the renderings to avoid.
    """
    import csv
    import io
    from xml.sax.saxutils import escape, quoteattr

    rows = [(e.msgid, e.msgstr, e.msgctxt or "", " ".join((e.comment or "").split("\n")))
            for e in catalog if e.msgid and e.msgstr and not e.obsolete]
    table = io.StringIO()
    writer = csv.writer(table, lineterminator="\n")
    writer.writerow(("source", "target", "context", "developer_comments"))
    writer.writerows(rows)
    entries = "".join(
        f'<termEntry id={quoteattr(f"term-{number}")}>'
        + (f'<descrip type="definition">{escape(note)}</descrip>' if note else "")
        + f'<langSet xml:lang="en"><tig><term>{escape(source)}</term></tig></langSet>'
        + f'<langSet xml:lang={quoteattr(language)}><tig><term>{escape(target)}</term></tig></langSet></termEntry>\n'
        for number, (source, target, _, note) in enumerate(rows, start=1))
    tbx = ('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE martif SYSTEM "TBXcoreStructV02.dtd">\n'
           '<martif type="TBX" xml:lang="en">\n<martifHeader><fileDesc><sourceDesc><p>The course glossary, written from '
           f'translations/{language}/{GLOSSARY} by `python -m builder translations --update`</p></sourceDesc></fileDesc></martifHeader>\n'
           f"<text><body>\n{entries}</body></text>\n</martif>\n")
    return {path.with_suffix(".csv"): table.getvalue(), path.with_suffix(".tbx"): tbx}
