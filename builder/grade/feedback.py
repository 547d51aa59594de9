"""The grader's feedback in the submission's language: every line from the messages catalog.

The English of each line is a key of ``builder/contracts/messages.py``'s ``MESSAGES`` (the keys that
start with "grade "); ``translations/<language>/messages.po`` translates them, with the contracts'
properties and usual causes. The judge renders its own lines with ``say``; the lines that the
student's process and the judge process write in English (a missing cell, a syntax error, a time
limit) are matched against their English template and written again with ``localize``.
"""

import functools
import re
import string

# Lines written in English outside the judge: each key's English template, read back by ``localize``.
READ_BACK = ("grade missing cell", "grade missing names", "grade syntax", "grade defining", "grade timed out", "grade ended",
             "grade check stopped", "grade killed parent", "grade note skipped", "grade note shadows", "grade not graded")


@functools.cache
def table(language: str) -> dict:
    """Key or English text -> its translation in ``language`` (empty for English or a language with no catalog)."""
    if language in ("", "en"):
        return {}
    from ..translation import messages as catalog

    path = catalog.ROOT / "translations" / language / catalog.CATALOG
    if not path.exists():
        return {}
    return catalog.table(catalog.load(language), catalog.units())


def english() -> dict:
    """The English messages."""
    from ..contracts.messages import MESSAGES

    return MESSAGES


def say(language: str, key: str, **fields) -> str:
    """The grader's message ``key`` in ``language`` (English where the catalog has no translation), its fields filled in."""
    template = table(language).get(key) or english()[key]
    return template.format(**fields)


def word(language: str, text: str) -> str:
    """A contract's property or usual cause in ``language``, else itself."""
    return table(language).get(text, text)


def shown_name(language: str, name: str) -> str:
    """A label or test name ("Exercise 3", "Exercise 3: f") in the reader's word ("Упражнение 3: f")."""
    exercise = table(language).get("Exercise")
    return f"{exercise}{name[len('Exercise'):]}" if exercise and name.startswith("Exercise ") else name


@functools.cache
def _pattern(key: str) -> tuple[re.Pattern, tuple[str, ...]]:
    """A regular expression that reads a line written from ``key``'s English template back into its fields."""
    parts: list[str] = []
    names: list[str] = []
    for literal, name, _, _ in string.Formatter().parse(english()[key]):
        parts.append(re.escape(literal))
        if name is not None:
            parts.append(f"(?P<f{len(names)}>.*?)")
            names.append(name)
    return re.compile("".join(parts) + r"\Z", re.DOTALL), tuple(names)


def read_back(key: str, text: str) -> dict | None:
    """The fields of ``text`` when it is ``key``'s English line, else None."""
    pattern, names = _pattern(key)
    match = pattern.match(text)
    return None if match is None else {name: match.group(f"f{i}") for i, name in enumerate(names)}


_WHERE = re.compile(r"  at line (\d+) of your (own cell \d+|Exercise \d+ cell), in (.+)")


def localize(text: str, language: str) -> str:
    """Each line of ``text`` written in English from one of READ_BACK's templates, in ``language``; other lines unchanged."""
    if not table(language) or not text:
        return text
    return "\n".join(_line(line, language) for line in text.split("\n"))


def _line(line: str, language: str) -> str:
    """One line in ``language`` when it is a READ_BACK template's or a student frame's, else itself."""
    found = _WHERE.fullmatch(line)
    if found:
        return "  " + say(language, "grade where", line=found.group(1), cell=_cell(found.group(2), language), name=found.group(3))
    for key in READ_BACK:
        fields = read_back(key, line)
        if fields is not None:
            if "label" in fields:
                fields["label"] = shown_name(language, fields["label"])
            return say(language, key, **fields)
    return line


def _cell(cell: str, language: str) -> str:
    """'Exercise 3 cell' or 'own cell 2' in the reader's words."""
    if cell.startswith("own cell "):
        return say(language, "grade own cell", number=cell.removeprefix("own cell "))
    return say(language, "grade exercise cell", label=shown_name(language, cell.removesuffix(" cell")))
