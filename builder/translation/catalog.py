"""One gettext PO catalog per notebook and language: read, merge with the English units, and check."""

import difflib
from dataclasses import dataclass, field
from pathlib import Path

import polib

from .invariants import changed
from .units import Unit

FUZZY = "fuzzy"


class CatalogError(ValueError):
    """A catalog that cannot be read; the message names the file."""


@dataclass(frozen=True)
class Finding:
    """One drift between a catalog and its English source, reported as ``file(line): kind: ...``."""

    path: str
    line: int
    kind: str  # missing, stale, orphan, numbers
    context: str
    detail: str = ""
    diff: str = field(default="", compare=False)

    def __str__(self) -> str:
        text = f"{self.path}({self.line}): {self.kind}: [{self.context}]"
        return f"{text} {self.detail}" if self.detail else text


def load(path: Path) -> polib.POFile:
    """The catalog at ``path``; an empty one when the file does not exist yet."""
    if not path.exists():
        return polib.POFile(wrapwidth=0)
    try:
        catalog = polib.pofile(str(path), wrapwidth=0)
    except (OSError, ValueError) as exc:  # polib raises OSError/IOError on syntax errors
        raise CatalogError(f"{path}: not a readable PO file ({exc})") from exc
    return catalog


def dumps(catalog: polib.POFile, language: str, source_name: str) -> str:
    """The catalog's text, with a header naming the language and the English source."""
    catalog.metadata = {
        "Project-Id-Version": source_name,
        "Language": language,
        "MIME-Version": "1.0",
        "Content-Type": "text/plain; charset=UTF-8",
        "Content-Transfer-Encoding": "8bit",
    }
    catalog.wrapwidth = 0
    return str(catalog) + "\n"


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
    for i, unit in enumerate(units):
        how, old = pairs[i]
        entry = polib.POEntry(msgctxt=unit.context, msgid=unit.text, msgstr="", occurrences=[(occurrence, str(unit.cell))])
        if how == "same":
            entry.msgstr, entry.flags = old.msgstr, list(old.flags)
            entry.previous_msgid, entry.tcomment = old.previous_msgid, old.tcomment
        elif how == "changed":
            entry.msgstr, entry.tcomment = old.msgstr, old.tcomment
            entry.flags = sorted(set(old.flags) | {FUZZY}) if old.msgstr else list(old.flags)
            entry.previous_msgid = (old.previous_msgid or old.msgid) if old.msgstr else None
        merged.append(entry)
    for old in orphans + [e for e in catalog if e.obsolete]:
        if old.msgstr:
            old.obsolete = True
            merged.append(old)
    return merged


def findings(catalog: polib.POFile, units: list[Unit], path: str) -> list[Finding]:
    """Every drift of ``catalog`` against ``units``: missing, stale, orphan and numbers changed."""
    pairs, orphans = _match(units, catalog)
    found = []
    for i, unit in enumerate(units):
        how, entry = pairs[i]
        line = entry.linenum if entry is not None else 0
        if how == "new" or not entry.msgstr:
            found.append(Finding(path, line, "missing", unit.context, "no translation"))
        elif how == "changed" or FUZZY in entry.flags:
            old = entry.previous_msgid or entry.msgid
            found.append(Finding(path, line, "stale", unit.context, "the English changed since it was translated", _diff(old, unit.text)))
        else:
            found += [Finding(path, line, "numbers", unit.context, p) for p in changed(unit.text, entry.msgstr)]
    found += [Finding(path, e.linenum, "orphan", e.msgctxt or "", "its English text is gone") for e in orphans if e.msgstr]
    return found


def translations(catalog: polib.POFile, units: list[Unit]) -> dict[int, tuple[str, bool]]:
    """For each unit index, its translation and whether it is current (False: stale or missing)."""
    pairs, _ = _match(units, catalog)
    result = {}
    for i, unit in enumerate(units):
        how, entry = pairs[i]
        current = how == "same" and entry is not None and bool(entry.msgstr) and FUZZY not in entry.flags
        result[i] = (entry.msgstr if entry is not None and entry.msgstr else unit.text, current)
    return result


def _diff(old: str, new: str) -> str:
    """A unified diff of an English change, for the stale report."""
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), "English when translated", "English now", lineterm="")
    return "\n".join(lines)
