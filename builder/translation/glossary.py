"""The course glossary: one rendering per term, and a check that every translation keeps to it."""

import functools
import re
from dataclasses import dataclass

import polib

from .catalog import Finding
from .units import NOT_PROSE

EXEMPT_FLAG = "glossary-exempt"


@dataclass(frozen=True)
class Term:
    """A glossary term: the English pattern, its one rendering, and the stems an inflected form keeps."""

    english: str
    rendering: str
    stems: tuple[str, ...]

    @functools.cached_property
    def pattern(self) -> re.Pattern:
        """The English term as a whole word, singular or plural, any case."""
        return re.compile(rf"(?<![\w-]){re.escape(self.english)}(?:s|es)?(?![\w-])", re.IGNORECASE)


def load_terms(glossary: polib.POFile) -> list[Term]:
    """Terms from a glossary PO file: msgid the term, msgstr the rendering, ``stems:`` in a comment."""
    terms = []
    for entry in glossary:
        if entry.obsolete or not entry.msgstr:
            continue
        stems = re.search(r"stems:\s*(.+)", entry.comment or "")
        words = tuple(s.strip().lower() for s in stems.group(1).split(",")) if stems else (entry.msgstr.lower(),)
        terms.append(Term(entry.msgid, entry.msgstr, words))
    return terms


def violations(catalog: polib.POFile, terms: list[Term], path: str) -> list[Finding]:
    """Translated entries whose English uses a term that the translation renders otherwise."""
    found = []
    for entry in catalog:
        if entry.obsolete or not entry.msgstr or EXEMPT_FLAG in entry.flags:
            continue
        text, english = entry.msgstr.lower(), NOT_PROSE.sub(" ", entry.msgid)
        folded = english.lower()
        for term in terms:
            if term.english.lower() in folded and term.pattern.search(english) and not any(stem in text for stem in term.stems):
                found.append(Finding(path, entry.linenum, "glossary", entry.msgctxt or "",
                                     f"{term.english!r} should be rendered {term.rendering!r} (or an inflection of it)"))
    return found
