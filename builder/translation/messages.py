"""The checks' messages in a translated edition: ``translations/<language>/messages.po``, inlined as a table.

Its units are the sentences of ``builder/contracts/messages.py``'s ``MESSAGES`` (context: their key)
and the usual causes and property names the contract checks of ``builder/contracts`` write as plain
string literals (context: their file), each looked up by its English text. A translated edition
gets one line after the inlined ``MESSAGES``, ``MESSAGES.update({...})``, written by
``python_literal``: translations are data there, never code. A translation whose ``{fields}``
differ from the English keeps the English.
"""

import ast
import functools
import re
import string
from pathlib import Path

import polib

from ..config import ROOT
from .catalog import translations
from .units import Unit, python_literal

CATALOG = "messages.po"
TABLE_REGION = "# builder:begin inline MESSAGES"
# Modules whose texts are not a student's usual causes: guards, figures, the environment, the machinery, and the
# lesson functions shared by two notebooks (their texts are guard errors, which stay English).
_NOT_CHECKS = {"__init__", "calls", "diagrams", "environment", "exact_attention", "exercises", "frozen", "messages", "style",
               "validation", "violations", "waiting"}
_MIN_WORDS = 4
# A shorter text is a unit too when it is a property, a value or an input a student reads ("output matches F.layer_norm",
# "returned normally", "shape {tuple(x.shape)}"): two words or more, one of them an English word, outside a raise.
_SHORT_WORDS = 2
_ENGLISH_WORD = re.compile(r"(?<![\w.{])[A-Za-z]{3,}(?![\w.(=}])")
# Modules whose plain texts are no checks' words but which hand a check its values ("a result (the input is valid)").
_VALUES_ONLY = {"calls"}


def units(root: Path = ROOT) -> list[Unit]:
    """The keyed messages, then each contract check's plain usual causes and property names, in file order."""
    from ..contracts.messages import MESSAGES

    found = [Unit(key, text, 0, fields=tuple(_template_fields(text))) for key, text in MESSAGES.items()]
    seen = set(MESSAGES.values())
    for path in sorted((root / "builder" / "contracts").glob("*.py")):
        stat = path.stat()
        texts, short, labels = _contract_texts_of(str(path), stat.st_mtime_ns, stat.st_size)
        groups = (("l", labels),) if path.stem in _NOT_CHECKS - _VALUES_ONLY else (
            ("", () if path.stem in _VALUES_ONLY else texts), ("t", short), ("l", labels))
        for label, group in groups:
            count = 0
            for text in group:
                if text not in seen:
                    seen.add(text)
                    count += 1
                    found.append(Unit(f"{path.stem}: {label}{count}", text, 0, fields=tuple(_template_fields(text)) if label else ()))
    return found


def _template_fields(text: str) -> list[str]:
    """The ``{fields}`` of a template as it writes them: a translation keeps each."""
    return re.findall(r"\{[^{}]*\}", text)


@functools.cache
def _contract_texts_of(path: str, mtime_ns: int, size: int) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """``contract_texts``, ``short_texts`` and ``label_texts`` of one file as it stands (its time and size key the cache: build and check ask once per edition)."""
    source = Path(path).read_text(encoding="utf-8")
    return tuple(contract_texts(source)), tuple(short_texts(source)), tuple(label_texts(source))


def label_texts(source: str) -> list[str]:
    """The figure labels an inlined helper marks for translation: the string given to each ``tr("...")`` call."""
    tree = ast.parse(source)
    calls = [(n.lineno, n.col_offset, n.args[0].value) for n in ast.walk(tree)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "tr" and n.args
             and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)]
    return [text for *_, text in sorted(calls, key=lambda c: (c[0], c[1]))]


def _raises_violation(node: ast.Raise) -> bool:
    """Whether a ``raise`` raises a check's failure, which a student reads, rather than a guard's error."""
    call = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    name = call.attr if isinstance(call, ast.Attribute) else getattr(call, "id", "")
    return name in ("ContractViolation", "CheckFailed") or (
        name == "of" and call is not None and "CheckFailed" in ast.unparse(call))


def short_texts(source: str) -> list[str]:
    """A contracts module's shorter texts and f-string templates a student reads, outside ``raise`` and docstrings.

    An f-string is written with its fields as the source writes them (``shape {tuple(x.shape)}``):
    ``in_language`` matches a message against it and carries the fields' values into the translation.
    """
    from .units import _field_text

    tree = ast.parse(source)
    skipped = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            skipped.add(id(body[0].value))
        if isinstance(node, ast.Raise) and not _raises_violation(node):
            skipped.update(id(n) for n in ast.walk(node))  # a guard's error: for programmers, it stays English
        if isinstance(node, ast.JoinedStr):
            skipped.update(id(v) for v in ast.walk(node) if v is not node)
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text, words = node.value, node.value
        elif isinstance(node, ast.JoinedStr):
            parts = [(str(v.value), True) if isinstance(v, ast.Constant) else (_field_text(v), False)
                     for v in node.values if isinstance(v, ast.Constant | ast.FormattedValue)]  # all a JoinedStr holds
            text, words = "".join(p for p, _ in parts), " ".join(p for p, literal in parts if literal)
            found += [(c.lineno, c.col_offset, c.value)  # a field's own words ('may not'): a value the reader sees
                      for v in node.values if isinstance(v, ast.FormattedValue) for choice in ast.walk(v.value)
                      if isinstance(choice, ast.IfExp) for c in (choice.body, choice.orelse)
                      if isinstance(c, ast.Constant) and isinstance(c.value, str)
                      and re.search(r"[A-Za-z]{2}", c.value)]
        else:
            continue
        templated = text != words  # a template needs one English word of two letters ("{value} at {index}")
        english = _ENGLISH_WORD.search(words) or (templated and re.search(r"(?<![\w.])[A-Za-z]{2}(?![\w.(=])", words))
        if (len(words.split()) >= _SHORT_WORDS or templated) and english and "\n" not in text:
            found.append((node.lineno, node.col_offset, text))
    return [text for *_, text in sorted(found)]

def contract_texts(source: str) -> list[str]:
    """Plain string literals of at least four words in a contracts module, docstrings and f-string parts left out."""
    tree = ast.parse(source)
    skipped = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            skipped.add(id(body[0].value))
        if isinstance(node, ast.JoinedStr):
            skipped.update(id(v) for v in node.values)
    texts = [(n.lineno, n.col_offset, n.value) for n in ast.walk(tree)
             if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skipped
             and len(n.value.split()) >= _MIN_WORDS]
    return [text for *_, text in sorted(texts, key=lambda t: (t[0], t[1]))]


def load(language: str, root: Path = ROOT) -> polib.POFile:
    """The message catalog of ``language`` (empty when there is none yet)."""
    from .catalog import load as load_catalog

    path = root / "translations" / language / CATALOG
    return load_catalog(path, str(path.relative_to(root)))


def reader_word(word: str, language: str, root: Path = ROOT) -> str:
    """What a reader of ``language`` calls ``word`` ("Exercise", "Module"): the messages catalog's word, which the checks print too."""
    path = root / "translations" / language / CATALOG
    if language == "en" or not path.exists():
        return word
    stat = path.stat()
    return _keyed_table(str(path), stat.st_mtime_ns, stat.st_size).get(word, word)


def reader_message(key: str, language: str, root: Path = ROOT) -> str:
    """A keyed message of ``MESSAGES`` in ``language``: the messages catalog's translation, or the English."""
    from ..contracts.messages import MESSAGES

    path = root / "translations" / language / CATALOG
    if language == "en" or not path.exists():
        return MESSAGES[key]
    stat = path.stat()
    return _keyed_table(str(path), stat.st_mtime_ns, stat.st_size).get(key, MESSAGES[key])


@functools.cache
def _keyed_table(path: str, mtime_ns: int, size: int) -> dict[str, str]:
    """``table`` of one catalog's keyed messages as it stands (its time and size key the cache: every exercise cell asks)."""
    from ..contracts.messages import MESSAGES
    from .catalog import load as load_catalog

    return table(load_catalog(Path(path)), [Unit(key, text, 0) for key, text in MESSAGES.items()])


def _fields(text: str) -> list[str]:
    """The names of a message's ``{fields}``, sorted."""
    try:
        return sorted(name for _, name, _, _ in string.Formatter().parse(text) if name is not None)
    except ValueError:
        return ["(unbalanced braces)"]


def table(catalog: polib.POFile, found: list[Unit]) -> dict[str, str]:
    """Key or English text -> translation, for every current translation that keeps the English's fields."""
    result = {}
    for i, (text, current) in translations(catalog, found).items():
        unit = found[i]
        keyed = ":" not in unit.context  # a MESSAGES key; a contract's text has "file: n"
        if current and (_fields(text) == _fields(unit.text) or not keyed):
            result[unit.context if keyed else unit.text] = text
    return result


def table_line(entries: dict[str, str]) -> str:
    """The line a translated edition runs after the inlined ``MESSAGES``: the table, every key and text a literal."""
    body = ",\n".join(f"    {python_literal(key)}: {python_literal(text)}" for key, text in entries.items())
    return f"MESSAGES.update({{\n{body},\n}})" if entries else ""


def add_table(nb, entries: dict[str, str]) -> None:
    """Put the translated table right after the region that inlines ``MESSAGES``, in the same (hidden) cell."""
    line = table_line(entries)
    for cell in nb.cells:
        if cell.cell_type == "code" and TABLE_REGION in cell.source:
            start = cell.source.index(TABLE_REGION)
            end = re.compile(r"^# builder:end[^\n]*\n?", re.MULTILINE).search(cell.source, start)
            if line and end:
                cell.source = cell.source[:end.end()] + ("" if cell.source[end.end() - 1:end.end()] == "\n" else "\n") + line + "\n" + cell.source[end.end():]
            return
