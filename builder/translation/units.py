"""Translatable units of a percent-format notebook source: markdown paragraphs and exercise instructions."""

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
NOT_PROSE = re.compile(r"`[^`]*`|\$\$.*?\$\$|\$[^$]*\$|\]\([^)]*\)|<[^>]*>", re.DOTALL)
REGION_MARK = "builder:begin"
_REGION = re.compile(r"<!--\s*builder:begin.*?builder:end[^>]*-->", re.DOTALL)


@dataclass(frozen=True)
class Unit:
    """One piece of English text to translate: where it sits (its context) and its text."""

    context: str
    text: str
    cell: int
    line: int = 0  # its first line in the percent source, when cut from the source's text


def blocks(markdown: str) -> list[str]:
    """Split markdown into blocks at blank lines, keeping fenced code and $$ math whole."""
    out, current, fenced, in_math = [], [], False, False
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
    found, path, ordinal, seen = [], [], 0, set()
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
        elif cell.cell_type == "code" and EXERCISE_TAG in cell.metadata.get("tags", []):
            instructions = exercise_instructions(cell.source)
            if instructions:
                found.append(Unit(_unique(instructions[0], seen), instructions[1], index, starts[index] and starts[index] + 1))
    return found


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
