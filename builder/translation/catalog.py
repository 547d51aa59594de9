"""One gettext PO catalog per notebook and language: read, merge with the English units, and check."""

import difflib
import re
from pathlib import Path

import polib

from .. import exits
from ..diagnostics import BuilderError, Finding
from .invariants import LINE_SEPARATORS, differences, unsafe
from .typography import english_forms
from .units import Unit

FUZZY = "fuzzy"
BRACE_FORMAT = "python-brace-format"  # gettext's flag for a string with {fields}: Poedit and Weblate check them
# language -> gettext's Plural-Forms header (the GNU gettext manual's table)
PLURAL_FORMS = {"ru": "nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 || n%100>=20) ? 1 : 2);"}
# language -> a lint of its typography: English-form numbers and units a reader of that language would misread.
TYPOGRAPHY = {"ru": english_forms}
# Findings that make a translation unsafe to write: it would end a comment line, become code, or add a link or HTML.
REFUSED = ("line-break", "code-line", "markup")
_QUOTED = r'"(?:[^"\\]|\\.)*"'
_PO_LINE = re.compile(rf'^(?:(?:msgctxt|msgid|msgid_plural|msgstr(?:\[\d+\])?)\s+)?{_QUOTED}$')


class CatalogError(BuilderError, ValueError):
    """A catalog that cannot be read; the message names the file."""

    exit_code = exits.MALFORMED


def load(path: Path, shown: str | None = None) -> polib.POFile:
    """The catalog at ``path``; an empty one when the file does not exist yet. CatalogError names ``file(line)`` (``shown``)."""
    from ..files import MalformedFile, read_text

    if not path.exists():
        return polib.POFile(wrapwidth=0)
    path_shown = shown or str(path)
    try:
        text = read_text(path, path_shown, what="catalog")
    except MalformedFile as exc:
        raise CatalogError(str(exc)) from None
    return load_text(text, path_shown)


def load_text(text: str, path_shown: str) -> polib.POFile:
    """A catalog from its text (``load`` once the file is read); CatalogError names ``file(line)``."""
    for number, line in enumerate(text.split("\n"), start=1):
        odd = [c for c in line if c in LINE_SEPARATORS]
        if odd:  # polib would split the line there, and an edition's comment would end there
            raise CatalogError(f"{path_shown}({number}): line-break: holds the line separator {odd[0]!r}; "
                               "a translation may hold only LF line breaks (written \\n)")
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and not _PO_LINE.match(stripped):
            raise CatalogError(f"{path_shown}({number}): not a PO line (a keyword and one quoted string, a quoted string, or a # comment): {stripped[:60]!r}")
    try:
        catalog = polib.pofile(text, wrapwidth=0)
    except (OSError, ValueError) as exc:  # polib raises OSError/IOError on syntax errors
        raise CatalogError(f"{path_shown}(1): not a readable PO file ({exc})") from None
    return catalog


def dumps(catalog: polib.POFile, language: str, source_name: str, original: str | None = None) -> str:
    """The catalog's text in gettext's layout, its header kept: a translator's fields (Last-Translator, X-Generator) stay.

    The builder sets only what it owns (Language, the charset) and adds what is missing (Project-Id-Version,
    Plural-Forms). Every string whose text is the same as in ``original`` (the file as read) keeps that
    file's line layout, so a catalog saved by Poedit, Weblate or msgcat is not rewritten by a merge.
    """
    header = {"Project-Id-Version": source_name, "MIME-Version": "1.0", "Content-Transfer-Encoding": "8bit",
              **({"Plural-Forms": PLURAL_FORMS[language]} if language in PLURAL_FORMS else {})}
    catalog.metadata = {**header, **dict(catalog.metadata), "Language": language, "Content-Type": "text/plain; charset=UTF-8"}
    return written(catalog, original)


def written(catalog: polib.POFile, original: str | None = None) -> str:
    """``catalog`` as text: wrapped at 79 columns as gettext wraps, each string unchanged since ``original`` laid out as there."""
    from .layout import rewrap

    catalog.wrapwidth = 0
    return rewrap(str(catalog).rstrip("\n") + "\n", original)


def template_path(root: Path, catalog_path: Path) -> Path:
    """Where a catalog's POT template lives: ``translations/templates/<name>.pot``, one per catalog name, for every language."""
    return root / "translations" / "templates" / f"{catalog_path.stem}.pot"


def template(catalog: polib.POFile, source_name: str) -> str:
    """The POT template of a merged catalog: every live entry, untranslated, with its context, flags and reference."""
    pot = polib.POFile(wrapwidth=0)
    pot.metadata = {"Project-Id-Version": source_name, "MIME-Version": "1.0", "Content-Type": "text/plain; charset=UTF-8",
                    "Content-Transfer-Encoding": "8bit"}
    for entry in catalog:
        if not entry.obsolete:
            pot.append(polib.POEntry(msgctxt=entry.msgctxt, msgid=entry.msgid, msgstr="", occurrences=entry.occurrences,
                                     flags=[f for f in entry.flags if f != FUZZY], comment=entry.comment))
    return written(pot)


def _match(units: list[Unit], catalog: polib.POFile):
    """Pair units with entries: by English text first (context breaks ties), then by context."""
    live = [e for e in catalog if not e.obsolete]
    free = list(live)
    by_text: dict[str, list[polib.POEntry]] = {}
    for entry in live:
        by_text.setdefault(entry.msgid, []).append(entry)
    pairs: dict[int, tuple[str, polib.POEntry | None]] = {}
    for i, unit in enumerate(units):
        same = [e for e in by_text.get(unit.text, []) if e in free]
        if same:
            entry = next((e for e in same if e.msgctxt == unit.context), same[0])
            free.remove(entry)
            pairs[i] = ("same", entry)
    for i, unit in enumerate(units):
        if i in pairs:
            continue
        entry = next((e for e in free if e.msgctxt == unit.context), None)
        if entry is not None:
            free.remove(entry)
        pairs[i] = ("changed", entry) if entry is not None else ("new", None)
    return pairs, free


def merge(catalog: polib.POFile, units: list[Unit], occurrence: str) -> polib.POFile:
    """A new catalog for ``units`` that keeps every translation, as ``msgmerge`` would.

    Unchanged English keeps its translation; changed English under the same context keeps the old
    translation marked fuzzy, with the old English as ``#| msgid``; new English gets an empty entry;
    entries whose English is gone become obsolete (``#~``) instead of being deleted.
    """
    pairs, orphans = _match(units, catalog)
    merged = polib.POFile(wrapwidth=0)
    merged.header, merged.metadata = catalog.header, dict(catalog.metadata)  # the translator's header stays
    for i, unit in enumerate(units):
        how, old = pairs[i]
        # the reference is the file only: a line number would move whenever a line above it moves
        entry = polib.POEntry(msgctxt=unit.context, msgid=unit.text, msgstr="", occurrences=[(occurrence, "")])
        if how == "same":
            entry.msgstr, entry.flags = old.msgstr, list(old.flags)
            entry.previous_msgid, entry.tcomment = old.previous_msgid, old.tcomment
        elif how == "changed":
            entry.msgstr, entry.tcomment = old.msgstr, old.tcomment
            entry.flags = sorted(set(old.flags) | {FUZZY}) if old.msgstr else list(old.flags)
            entry.previous_msgid = (old.previous_msgid or old.msgid) if old.msgstr else None
        entry.flags = [f for f in entry.flags if f != BRACE_FORMAT] + ([BRACE_FORMAT] if unit.fields else [])
        merged.append(entry)
    for old in orphans + [e for e in catalog if e.obsolete]:
        if old.msgstr:
            old.obsolete = True
            merged.append(old)
    return merged


def findings(catalog: polib.POFile, units: list[Unit], path: str, language: str | None = None) -> list[Finding]:
    """Every drift of ``catalog`` against ``units``: missing, stale, orphan, and each invariant a translation changed, by its kind."""
    pairs, orphans = _match(units, catalog)
    found = []
    for i, unit in enumerate(units):
        how, entry = pairs[i]
        line = (entry.linenum or 0) if entry is not None else 0
        if how == "new" or not entry.msgstr:
            found.append(Finding(path, line, "missing", "no translation", context=unit.context))
        elif how == "changed" or FUZZY in entry.flags:
            old = entry.previous_msgid or entry.msgid
            found.append(Finding(path, line, "stale", "the English changed since it was translated", context=unit.context,
                                 diff=_diff(old, unit.text)))
        else:
            found += [Finding(path, line, kind, what, context=unit.context) for kind, what in differences(unit.text, entry.msgstr, language)]
            found += [Finding(path, line, "field", what, context=unit.context) for what in _field_changes(unit, entry.msgstr)]
            found += [Finding(path, line, "typography", what, context=unit.context) for what in TYPOGRAPHY.get(language or "", lambda *_: [])(entry.msgstr, unit.text)]
    found += [Finding(path, e.linenum, "orphan", "its English text is gone", context=e.msgctxt or "") for e in orphans if e.msgstr]
    return found


def _field_changes(unit: Unit, translation: str) -> list[str]:
    """An f-string field of the English that the translation drops or changes: the edition would fall back to English."""
    return [f"the f-string field {field} must appear in the translation exactly as in the English (it is code, not prose)"
            for field in dict.fromkeys(unit.fields) if translation.count(field) != unit.text.count(field)]


def translations(catalog: polib.POFile, units: list[Unit]) -> dict[int, tuple[str, bool]]:
    """For each unit index, its translation and whether it is current (False: stale, missing, or unsafe to write)."""
    pairs, _ = _match(units, catalog)
    result = {}
    for i, unit in enumerate(units):
        how, entry = pairs[i]
        current = how == "same" and entry is not None and bool(entry.msgstr) and FUZZY not in entry.flags
        current = current and not unsafe(unit.text, entry.msgstr)
        result[i] = (entry.msgstr if entry is not None and entry.msgstr else unit.text, current)
    return result


def _diff(old: str, new: str) -> str:
    """A unified diff of an English change, for the stale report."""
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), "English when translated", "English now", lineterm="")
    return "\n".join(lines)
