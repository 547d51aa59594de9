"""Translatable units of a percent-format notebook source: markdown paragraphs, exercise instructions, hidden cells'
titles, and the captions and alt texts of its figures."""

import ast
import functools
import re
from pathlib import Path
from dataclasses import dataclass

import nbformat

from ..cells import EXERCISE_LABEL
from ..config import ROOT
from ..pairing import cell_lines, read_source

EXERCISE_TAG = "exercise"
_HEADING = re.compile(r"^(#{1,6})\s+(.*\S)\s*$")
_LETTER = re.compile(r"[^\W\d_]")
NOT_PROSE = re.compile(r"\{[^{}\n]*\}|`[^`]*`|\$\$.*?\$\$|\$[^$]*\$|\]\([^)]*\)|<[^>]*>", re.DOTALL)
REGION_MARK = "builder:begin"
_REGION = re.compile(r"<!--\s*builder:begin.*?builder:end[^>]*-->", re.DOTALL)


@dataclass(frozen=True)
class Unit:
    """One piece of English text to translate: where it sits (its context) and its text."""

    context: str
    text: str
    cell: int
    line: int = 0  # its first line in the percent source, when cut from the source's text
    fields: tuple[str, ...] = ()  # an f-string's fields as the text writes them ({name:.2f}); a translation keeps each


@dataclass(frozen=True)
class CodeText:
    """Text a reader sees inside a code cell: a hidden cell's ``# @title`` or a ``show_figure`` caption or alt text.

    ``start``/``end`` are character offsets in the cell's source; ``literal`` says the span is a Python
    string literal (a caption), else the rest of a comment line (a title). ``fields`` are an
    f-string's fields, each as ``{expression!conversion:spec}``, written into ``text`` where they stand.
    """

    kind: str  # "title", "caption", "alt", "printed" or "label"
    figure: str  # the figure's drawing call (plot_masks), for the context; "" for a title
    text: str
    start: int
    end: int
    line: int  # the span's first line in the cell, from 0
    literal: bool
    fields: tuple[str, ...] = ()
    field_nodes: tuple[str, ...] = ()  # ast.dump of each field, to prove a rendered field is the English one


FIGURE_CALL = "show_figure"
PRINT_CALL = "print"
SECTION_CALL = "report_section"
# The calls whose string arguments a reader sees, and which ones (position, keyword); print only with one argument.
READER_ARGUMENTS = {
    FIGURE_CALL: (("caption", 1), ("alt", 2)),
    PRINT_CALL: (("printed", 0),),
    SECTION_CALL: (("printed", 0),),
    "judge_prediction": (("printed", 0), ("printed", 3)),
    "tr": (("label", 0),),  # a figure's label marked for translation (builder/contracts/messages.py's tr)
}
READER_CALLS = tuple(READER_ARGUMENTS)
_WORDS = re.compile(r"[^\W\d_]{3,}")
TITLE = "# @title "


def blocks(markdown: str) -> list[str]:
    """Split markdown into blocks at blank lines, keeping fenced code and $$ math whole."""
    out: list[str] = []
    current: list[str] = []
    fenced = in_math = False
    for line in markdown.split("\n"):
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
        if stripped.count("$$") % 2:
            in_math = not in_math
        if not stripped and not fenced and not in_math:
            if current:
                out.append("\n".join(current))
            current = []
        else:
            current.append(line)
    if current:
        out.append("\n".join(current))
    return out


# Words in a formula: a \text{...} phrase ("\text{ if allowed, }", "\text{sink share}"), not a subscript name (n_{\text{sink}}).
_MATH_WORDS = re.compile(r"\\text\{[^{}]*(?:[^\W\d_] | [^\W\d_])[^{}]*\}")


def is_prose(block: str) -> bool:
    """True when a block holds words to translate: prose, or a formula with words in it; not only code, links or tags."""
    words = _LETTER.search(NOT_PROSE.sub(" ", block)) or _MATH_WORDS.search(block)
    return bool(words) and not block.lstrip().startswith("```")


def translatable(cell: nbformat.NotebookNode) -> bool:
    """Markdown cells are translated, except generated regions (the header with its badge)."""
    return cell.cell_type == "markdown" and REGION_MARK not in cell.source


def exercise_instructions(source: str) -> tuple[str, str, int] | None:
    """An exercise cell's label, its instructions without comment marks, and their line count."""
    lines = source.split("\n")
    label = EXERCISE_LABEL.match(lines[0]) if lines else None
    if not label:
        return None
    comments = [label.group("text").strip()]
    for line in lines[1:]:
        if not line.startswith("#") or line.startswith("# %%"):
            break
        comments.append(line[1:].removeprefix(" "))
    return label.group("label"), "\n".join(comments), len(comments)


def units(source: "str | nbformat.NotebookNode", root: Path = ROOT) -> list[Unit]:
    """Every translatable unit of a percent source (text, or already parsed), in order, with heading-path contexts.

    Cut from the text, each unit also knows its line in it.
    """
    found, ordinal = [], 0
    path: list[tuple[int, str]] = []
    seen: set[str] = set()
    parsed = read_source(source, root) if isinstance(source, str) else source
    starts = cell_lines(source, len(parsed.cells)) if isinstance(source, str) else [0] * len(parsed.cells)
    for index, cell in enumerate(parsed.cells):
        if translatable(cell):
            for block, offset in _with_offsets(cell.source):
                heading = _HEADING.match(block.split("\n")[0])
                if heading:
                    level = len(heading.group(1))
                    path = [p for p in path if p[0] < level] + [(level, heading.group(2))]
                    ordinal = 0
                if is_prose(block):
                    found.append(Unit(_unique(f"{_path_text(path)} ¶{ordinal}", seen), block, index, starts[index] and starts[index] + 1 + offset))
                ordinal += 1
        elif cell.cell_type == "code":
            instructions = exercise_instructions(cell.source) if EXERCISE_TAG in cell.metadata.get("tags", []) else None
            if instructions:
                found.append(Unit(_unique(instructions[0], seen), instructions[1], index, starts[index] and starts[index] + 1))
            for text in code_texts(cell.source):
                where = f"figure {text.figure}: {text.kind}" if text.figure else f"{_path_text(path)} › {_KINDS[text.kind]}"
                found.append(Unit(_unique(where, seen), text.text, index, starts[index] and starts[index] + 1 + text.line, text.fields))
    return found


_KINDS = {"title": "cell title", "printed": "printed", "label": "figure label"}


@functools.lru_cache(maxsize=4096)  # check and build ask for each cell's texts several times; a cell parses once
def code_texts(source: str) -> tuple[CodeText, ...]:
    """The reader's text in one code cell, in order: its ``# @title``, then the string arguments of ``READER_ARGUMENTS``' calls.

    Calls inside generated regions are left out: their text is the builder's (``MESSAGES`` translates it).
    """
    return tuple(_code_texts(source))


def _code_texts(source: str) -> list[CodeText]:
    """``code_texts``, uncached."""
    found = []
    if source.startswith(TITLE) and source.split("\n")[0][len(TITLE):].strip():
        first = source.split("\n")[0]
        found.append(CodeText("title", "", first[len(TITLE):].strip(), len(TITLE), len(first), 0, False))
    if not any(call in source for call in READER_CALLS):
        return found
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return found  # IPython syntax: no figure is taken from it
    starts = [0]
    for line in source.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    inlined, inside = set(), False  # lines of generated regions: their code is the builder's, and stays as written
    for number, line in enumerate(source.split("\n"), start=1):
        inside = inside or line.startswith("# builder:begin")
        if inside:
            inlined.add(number)
        inside = inside and not line.startswith("# builder:end")
    calls = [(n, n.func.id) for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id in READER_CALLS and n.lineno not in inlined]
    for call, called in sorted(calls, key=lambda c: (c[0].lineno, c[0].col_offset)):
        if called == PRINT_CALL and len(call.args) != 1:
            continue  # print(a, b): its pieces are no sentence
        figure = call.args[0] if called == FIGURE_CALL and call.args else None
        name = (ast.unparse(figure.func) if isinstance(figure, ast.Call) else ast.unparse(figure)) if figure else ""
        name = name or ("?" if called == FIGURE_CALL else "")
        keywords = {k.arg: k.value for k in call.keywords}
        chosen = [(kind, call.args[at] if at < len(call.args) else keywords.get(kind))
                  for kind, at in READER_ARGUMENTS[called]]
        for kind, node in chosen:
            text = _string_text(node) if node is not None else None
            if node is not None and text is not None and _WORDS.search(re.sub(r"\{[^{}]*\}", " ", text[0])):
                if node.end_lineno is None or node.end_col_offset is None:  # ast.parse sets both on every expression
                    raise ValueError(f"line {node.lineno}: an argument without an end position")
                start = _char_offset(source, starts, node.lineno, node.col_offset)
                end = _char_offset(source, starts, node.end_lineno, node.end_col_offset)
                fields = tuple(_field_text(v) for v in getattr(node, "values", ()) if isinstance(v, ast.FormattedValue))
                dumps = tuple(ast.dump(v) for v in getattr(node, "values", ()) if isinstance(v, ast.FormattedValue))
                found.append(CodeText(kind, name, text[0], start, end, node.lineno - 1, True, fields, dumps))
    return found


def _char_offset(source: str, starts: list[int], lineno: int, byte_col: int) -> int:
    """The character offset in ``source`` of ast's (line, UTF-8 byte column)."""
    line = source.split("\n")[lineno - 1]
    return starts[lineno - 1] + len(line.encode("utf-8")[:byte_col].decode("utf-8"))


def _field_text(node: ast.FormattedValue) -> str:
    """An f-string field as its source writes it: {expression!r:.2f}."""
    conversion = f"!{chr(node.conversion)}" if node.conversion != -1 else ""
    spec = ""
    if node.format_spec is not None:
        written = _string_text(node.format_spec)
        if written is None:  # a format spec is a JoinedStr of strings and fields: always written
            raise ValueError(f"line {node.lineno}: an f-string format spec that is not a string")
        spec = f":{written[0]}"
    return "{" + ast.unparse(node.value) + conversion + spec + "}"


def _string_text(node: ast.AST) -> tuple[str] | None:
    """(the text of a string literal or f-string, its fields written as {expression}), or None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return (node.value,)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                parts.append(value.value)
            elif isinstance(value, ast.FormattedValue):
                parts.append(_field_text(value))
            else:
                return None
        return ("".join(parts),)
    return None


def python_literal(text: str) -> str:
    """``text`` as a Python string literal, written by ``repr`` (double quotes where repr would choose single ones)."""
    written = repr(text)
    if written.startswith("'") and '"' not in text:
        written = '"' + written[1:-1] + '"'
    if ast.literal_eval(written) != text:  # never: repr's output reads back as the same string
        raise ValueError(f"cannot write {text[:40]!r} as a literal")
    return written


def translated_code(text: CodeText, translation: str, indent: str, width: int = 110) -> str | None:
    """What replaces ``text``'s span in its cell: the translation as data, or None when it cannot stand there safely.

    A title is one comment line (white space, line breaks included, becomes one space). A caption
    is string literals written by ``python_literal``, with the English's own f-string fields between
    them; a translation whose fields differ from the English's (dropped, added, changed) gets None.
    """
    if not text.literal:
        return " ".join(translation.split())
    pieces = [translation]
    if text.fields:
        pattern = "(" + "|".join(re.escape(f) for f in sorted(set(text.fields), key=len, reverse=True)) + ")"
        pieces = re.split(pattern, translation)
        if sorted(pieces[1::2]) != sorted(text.fields) or any(c in p for p in pieces[::2] for c in "{}"):
            return None
    written = [_line_literal(line) for line in _lines(pieces, width)]
    source = f"\n{indent}".join(written) or '""'
    try:  # prove it: the source reads back as the translation, with the English's own fields
        node = ast.parse(f"(\n{source}\n)", mode="eval").body
    except SyntaxError:
        return None
    if _string_text(node) != (translation,):
        return None
    dumps = tuple(ast.dump(v) for v in getattr(node, "values", ()) if isinstance(v, ast.FormattedValue))
    return source if sorted(dumps) == sorted(text.field_nodes) else None


def _lines(pieces: list[str], width: int) -> list[list[tuple[str, bool]]]:
    """The translation cut after spaces into lines of about ``width`` characters: (text, is a field) runs, fields kept whole."""
    lines: list[list[tuple[str, bool]]] = []
    current: list[tuple[str, bool]] = []
    size = 0
    for i, piece in enumerate(pieces):
        for word in ([piece] if i % 2 else re.split(r"(?<= )", piece)):
            if word and current and size + len(word) > width:
                lines.append(current)
                current, size = [], 0
            if word:
                current.append((word, bool(i % 2)))
                size += len(word)
    return lines + [current] if current else lines


def _line_literal(runs: list[tuple[str, bool]]) -> str:
    """One line of a caption as Python: ``python_literal`` of its text, or an f-string when it holds the English's fields."""
    text = "".join(run for run, _ in runs)
    if not any(field for _, field in runs):
        return python_literal(text)
    quote = '"' if not any('"' in run for run, field in runs if field) else "'"
    return "f" + quote + "".join(run if field else _escaped(run, quote) for run, field in runs) + quote


def _escaped(text: str, quote: str) -> str:
    """Literal text inside an f-string delimited by ``quote``: repr's escapes, that quote escaped, braces doubled."""
    inner = repr(text)[1:-1]
    if repr(text)[0] != quote:  # repr chose the other quote: undo its escapes of that one, escape ours
        inner = inner.replace("\\" + repr(text)[0], repr(text)[0]).replace(quote, "\\" + quote)
    return inner.replace("{", "{{").replace("}", "}}")


def translate_code(source: str, translations: list[str | None], indent_of=None) -> tuple[str, list[bool]]:
    """A code cell with each of its ``code_texts`` replaced by its translation (None keeps the English); and which were written."""
    texts, done = code_texts(source), []
    for text, translation in reversed(list(zip(texts, translations))):
        line_start = source.rfind("\n", 0, text.start) + 1
        indent = " " * (text.start - line_start) if text.literal else ""
        written = translated_code(text, translation, indent) if translation is not None else None
        if written is not None:
            source = source[:text.start] + written + source[text.end:]
        done.append(written is not None)
    return source, done[::-1]


def untranslatable(nb: nbformat.NotebookNode) -> list[tuple[int, str]]:
    """(cell index, first words) of markdown cells left untranslated because their prose holds a region marker."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and REGION_MARK in cell.source:
            prose = [b for b in blocks(_REGION.sub("", cell.source)) if is_prose(b)]
            if prose:
                found.append((index, prose[0].strip().split("\n")[0][:50]))
    return found


def _with_offsets(markdown: str) -> list[tuple[str, int]]:
    """Each block of ``markdown`` with the number of lines before it."""
    lines, cursor, found = markdown.split("\n"), 0, []
    for block in blocks(markdown):
        first = block.split("\n")[0]
        while cursor < len(lines) and lines[cursor] != first:
            cursor += 1
        found.append((block, cursor))
        cursor += block.count("\n") + 1
    return found


def _path_text(path: list[tuple[int, str]]) -> str:
    """A heading path as one line: 'Module 3 › 4. Masks'."""
    return " › ".join(title for _, title in path) or "(before the first heading)"


def _unique(context: str, seen: set[str]) -> str:
    """``context``, or with a ' (2)', ' (3)' ... suffix when a repeated heading path already used it."""
    candidate, n = context, 1
    while candidate in seen:
        n += 1
        candidate = f"{context} ({n})"
    seen.add(candidate)
    return candidate
