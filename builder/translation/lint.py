"""The course-wide lint of the translations: typography and glossary checks that read catalogs and English sources.

It sits above ``catalog``, ``glossary`` and ``typography``, which it uses, so none of them imports another to lint.
"""

from collections.abc import Callable
from pathlib import Path

from ..diagnostics import Finding
from . import catalog as po
from .glossary import GLOSSARY, figure_strings, load_terms, other_catalogs, violations
from .invariants import differences
from .typography import english_forms, typeset


def rewrite(paths: list[Path], language: str, shown: Callable[[Path], str]) -> tuple[dict[Path, str], list[str]]:
    """The new text of each catalog whose msgstr ``typeset`` changes, and every refusal (then nothing may be written).

    A rewrite is refused when it changes an invariant the entry kept (a number's value, a unit, a formula).
    """

    outputs, refused = {}, []
    for path in paths:
        catalog = po.load(path, shown(path))
        changed = 0
        for entry in catalog:
            if entry.obsolete or not entry.msgstr:
                continue
            new = typeset(entry.msgstr, entry.msgid)
            if new == entry.msgstr:
                continue
            before = {what for _, what in differences(entry.msgid, entry.msgstr, language)}
            added = [what for _, what in differences(entry.msgid, new, language) if what not in before]
            if added:
                refused.append(f"{shown(path)}({entry.linenum}): [{entry.msgctxt or entry.msgid[:30]}] typography would change: {'; '.join(added)}")
            entry.msgstr, changed = new, changed + 1
        if changed:
            outputs[path] = po.written(catalog, path.read_text(encoding="utf-8"))
    return outputs, refused


def label_findings(source: str, path: str) -> list[Finding]:
    """Figure labels of a notebook source whose Russian still writes a number or unit in the English form."""

    return [Finding(path, line, "typography", f"{ru[:40]!r}: {what}", context="figure label")
            for line, en, ru in figure_strings(source) for what in english_forms(ru, en)]


def other_catalog_findings(course) -> list[Finding]:
    """The lint for the catalogs no notebook owns (captions, messages): English-form numbers and units in their Russian."""

    found = []
    for language in (lang for lang in course.languages if lang in po.TYPOGRAPHY):
        for path in other_catalogs(course, language):
            found += [Finding(course.shown(path), e.linenum, "typography", what, context=e.msgctxt or "")
                      for e in po.load(path, course.shown(path)) if e.msgstr and not e.obsolete
                      for what in po.TYPOGRAPHY[language](e.msgstr, e.msgid)]
    return found


def course_violations(course) -> list[Finding]:
    """Glossary findings in the catalogs no notebook owns (captions, messages), for every language of ``course``."""

    found = []
    for language in course.languages:
        glossary_path = course.root / "translations" / language / GLOSSARY
        if not glossary_path.exists():
            continue
        terms = load_terms(po.load(glossary_path, course.shown(glossary_path)))
        for path in other_catalogs(course, language):
            found += violations(po.load(path, course.shown(path)), terms, course.shown(path))
    return found
