"""Write a translated edition: the English percent source with its prose taken from a catalog."""

import copy
import re
from pathlib import Path

import nbformat
import polib

from .. import exits
from ..config import ROOT
from ..diagnostics import BuilderError
from ..pairing import read_source, write_percent
from .catalog import translations
from .units import EXERCISE_TAG, blocks, code_texts, exercise_instructions, is_prose, translatable, translate_code, units

# How a unit left in English is marked in a translated edition's source: invisible in a rendered
# markdown cell, and a word a reader of the exercise's comment sees.
UNTRANSLATED_MARK = "<!-- untranslated -->"
UNTRANSLATED_EXERCISE = "(untranslated) "
_LANGUAGE_LINE = re.compile(r'^LANGUAGE = "en"(?P<rest>.*)$', re.MULTILINE)


class StaleTranslationError(BuilderError, ValueError):
    """A translated edition was asked for while some of its units are stale or missing."""

    exit_code = exits.MALFORMED


def render(py_text: str, catalog: polib.POFile, language: str, *, fallback: bool = False, root: Path = ROOT) -> tuple[str, list[str]]:
    """The translated percent source, and the contexts that fell back to English (see ``render_notebook``)."""
    nb, english = render_notebook(read_source(py_text, root), catalog, language, fallback=fallback)
    return write_percent(nb, root), english


def render_notebook(nb: nbformat.NotebookNode, catalog: polib.POFile, language: str, *, fallback: bool = False):
    """A translated copy of a parsed English source, and the contexts that fell back to English.

    Refuses (``StaleTranslationError``) when a unit is stale or missing, unless ``fallback`` is set,
    in which case those units stay in English and their contexts are returned.
    """
    nb = copy.deepcopy(nb)
    found = units(nb)
    chosen = translations(catalog, found)
    english = [found[i].context for i, (_, current) in chosen.items() if not current]
    if english and not fallback:
        shown = "; ".join(english[:5]) + (f"; and {len(english) - 5} more" if len(english) > 5 else "")
        raise StaleTranslationError(
            f"{len(english)} unit(s) have no current {language} translation ({shown}); translate them, "
            "or build with the English fallback")
    texts = iter((text if current else found[i].text, current, found[i].context) for i, (text, current) in sorted(chosen.items()))
    switched = 0
    for cell in nb.cells:
        if translatable(cell):
            cell.source = "\n\n".join(_marked(*next(texts)[:2], UNTRANSLATED_MARK + "\n") if is_prose(b) else b
                                      for b in blocks(cell.source))
        elif cell.cell_type == "code":
            if EXERCISE_TAG in cell.metadata.get("tags", []) and exercise_instructions(cell.source):
                cell.source = _translate_exercise(cell.source, _marked(*next(texts)[:2], UNTRANSLATED_EXERCISE), language)
            wanted = [next(texts) for _ in code_texts(cell.source)]
            cell.source, written = translate_code(cell.source, [text if current else None for text, current, _ in wanted])
            english += [f"{context} (its f-string fields differ from the English)" for (_, current, context), done in zip(wanted, written)
                        if current and not done]
            cell.source, n = _LANGUAGE_LINE.subn(lambda m: f'LANGUAGE = "{language}"{m.group("rest")}', cell.source)
            switched += n
    if switched != 1:
        raise ValueError(f'a translated edition needs exactly one line `LANGUAGE = "en"` in the source, found {switched}')
    return nb, english


def _marked(text: str, current: bool, mark: str) -> str:
    """A unit's text as the edition shows it: its translation, or its English behind the untranslated mark."""
    return text if current else mark + text


def _translate_exercise(source: str, instructions: str, language: str = "en") -> str:
    """An exercise cell with its leading comment block replaced; the grader's 'Exercise N' label stays, the reader's word follows it."""
    from .messages import reader_word

    found = exercise_instructions(source)
    if found is None:
        raise ValueError("an exercise cell needs its '# Exercise N: ...' line to be translated")
    label, _, count = found
    word = reader_word("Exercise", language)
    if word != "Exercise":
        label = f"{label} · {word} {label.split()[-1]}"  # "Exercise 3 · Упражнение 3"
    first, *rest = instructions.split("\n")
    comment = [f"# {label}: {first}".rstrip()] + [f"# {line}".rstrip() if line else "#" for line in rest]
    return "\n".join(comment + source.split("\n")[count:])


def localize_numbers(nb: nbformat.NotebookNode, language: str, root: Path = ROOT) -> None:
    """Give a translated edition its language's numbers: each field of a print or caption after the checks' table
    goes through ``number`` (inlined into that table's cell), so ``{x:,}`` prints 131 072 and ``{r:.1f}`` 3,7 in Russian."""
    from ..contracts.numerals import NUMBER_FORMS
    from ..inline import source_of
    from .messages import TABLE_REGION

    if language == "en" or language not in NUMBER_FORMS:
        return
    started = False
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if not started and TABLE_REGION in cell.source:
            helper = "\n\n".join(source_of(name, root).strip("\n") for name in ("NUMBER_FORMS", "number", "localize_figures"))
            cell.source = cell.source.rstrip("\n") + "\n\n" + helper + f"\n\n\nlocalize_figures({language!r})  # every figure's numbers in the reader's typography"
            started = True
        elif started:
            cell.source = numbered(cell.source, language)


def numbered(source: str, language: str) -> str:
    """A code cell whose reader's f-strings (prints, captions) format each plain field with ``number(value, spec, language)``."""
    for text in reversed(code_texts(source)):
        if not text.literal or not text.fields:
            continue
        lines = source[text.start:text.end].split("\n")
        source = source[:text.start] + "\n".join(_numbered_line(line, text.fields, language) for line in lines) + source[text.end:]
    return source


def _numbered_line(line: str, fields: tuple[str, ...], language: str) -> str:
    """One line of an f-string literal with its plain ``fields`` through ``number``; the line as it was where that cannot be proved."""
    import ast

    body = line.strip()
    if not body.startswith(("f'", 'f"')):
        return line
    other = "'" if body[1] == '"' else '"'
    new = body
    for field in sorted(set(fields), key=len, reverse=True):
        try:
            parsed = ast.parse(f"f{body[1]}{field}{body[1]}", mode="eval").body
        except SyntaxError:
            continue
        value = parsed.values[0] if isinstance(parsed, ast.JoinedStr) and parsed.values else None
        if not isinstance(value, ast.FormattedValue):  # a field reads back as one {...}; anything else stays as written
            continue
        spec = value.format_spec  # None or a JoinedStr, as Python parses it
        spec_parts = spec.values if isinstance(spec, ast.JoinedStr) else []
        if value.conversion != -1 or not all(isinstance(p, ast.Constant) for p in spec_parts):
            continue
        spec_text = "".join(str(p.value) for p in spec_parts if isinstance(p, ast.Constant))
        new = new.replace(field, f"{{number({ast.unparse(value.value)}, {other}{spec_text}{other}, {other}{language}{other})}}")
    try:
        before, after = ast.parse(body, mode="eval").body, ast.parse(new, mode="eval").body
    except SyntaxError:
        return line
    if not (isinstance(before, ast.JoinedStr) and isinstance(after, ast.JoinedStr)):
        return line
    literal = [v.value for v in before.values if isinstance(v, ast.Constant)]
    if [v.value for v in after.values if isinstance(v, ast.Constant)] != literal or len(after.values) != len(before.values):
        return line
    return line[:len(line) - len(line.lstrip())] + new
