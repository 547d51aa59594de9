"""Student editions: every exercise's solution becomes a stub, with a hidden reference to fall back on.

An exercise is one code cell tagged ``exercise``. It opens with a comment block
``# Exercise N: instructions...`` and wraps each solution in nbgrader-style markers::

    ### BEGIN SOLUTION
    ...
    ### END SOLUTION

The next code cell must call ``check_exercise("Exercise N", ...)``. In the student edition each
solution block becomes ``raise NotImplementedError("Exercise N: see the instructions above")``. The one copy of
each solution is the notebook's ``solutions`` region (``solutions_code``), base64-encoded so that
no solution is read by accident; ``check_exercise`` runs it in place of an exercise that is not
attempted or fails, and ``show_reference`` prints it.
"""

import ast
import base64
import functools
import re
from dataclasses import dataclass

import nbformat

from . import exits, pairing
from .cells import EXERCISE_LABEL
from .config import worded
from .diagnostics import BuilderError

TAG = "exercise"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


class ExerciseError(BuilderError, ValueError):
    """An exercise cell that breaks the convention; the message names the cell."""

    exit_code = exits.MALFORMED


@dataclass(frozen=True)
class Exercise:
    """One exercise cell: its label, its instructions and the names it defines."""

    index: int
    label: str
    instructions: str
    names: tuple[str, ...]  # every function and class the cell defines
    written: tuple[str, ...] = ()  # the ones the student writes: those holding a solution block


def parse_exercise(cell: nbformat.NotebookNode, index: int) -> Exercise:
    """Read the label, instructions and defined names of one exercise cell."""
    lines = cell.source.splitlines()
    first = EXERCISE_LABEL.match(lines[0]) if lines else None
    if not first:
        raise ExerciseError(f"cell {index}: an exercise cell must start with '# Exercise N: instructions'")
    text = [first.group("text").strip()]
    for line in lines[1:]:
        if not line.startswith("#") or line.startswith("# %%"):
            break
        text.append(line.lstrip("#").strip())
    definitions = _top_level_definitions(cell.source)
    names = tuple(name for name, _, _ in definitions)
    if not names:
        raise ExerciseError(f"cell {index} ({first.group('label')}): an exercise cell must define a function or class")
    blocks = _solution_blocks(cell.source, f"cell {index} ({first.group('label')})")
    written = tuple(name for name, first_line, last_line in definitions if any(first_line <= begin + 1 <= last_line for begin, _ in blocks))
    return Exercise(index, first.group("label"), " ".join(t for t in text if t), names, written)


@functools.lru_cache(maxsize=1024)
def _top_level_definitions(source: str) -> tuple[tuple[str, int, int], ...]:
    """(name, first line, last line) of each top-level function and class; each edition of a cell is parsed once."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            if node.end_lineno is None:  # ast.parse sets it on every statement
                raise ValueError(f"the definition of {node.name} at line {node.lineno} has no end line")
            found.append((node.name, node.lineno, node.end_lineno))
    return tuple(found)


def _solution_blocks(source: str, where: str) -> list[tuple[int, int]]:
    """(begin, end) line indices of each solution block; raise on unbalanced or nested markers."""
    blocks, start = [], None
    for i, line in enumerate(source.splitlines()):
        if line.strip() == BEGIN:
            if start is not None:
                raise ExerciseError(f"{where}, line {i + 1}: nested '{BEGIN}'")
            start = i
        elif line.strip() == END:
            if start is None:
                raise ExerciseError(f"{where}, line {i + 1}: '{END}' without '{BEGIN}'")
            blocks.append((start, i))
            start = None
    if start is not None:
        raise ExerciseError(f"{where}, line {start + 1}: '{BEGIN}' without '{END}'")
    if not blocks:
        raise ExerciseError(f"{where}: no '{BEGIN}' ... '{END}' block")
    return blocks


def exercises(nb: nbformat.NotebookNode) -> list[Exercise]:
    """Every exercise of a notebook, each checked to be followed by its check_exercise cell."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or TAG not in cell.metadata.get("tags", []):
            continue
        exercise = parse_exercise(cell, index)
        following = next((c for c in nb.cells[index + 1:] if c.cell_type == "code"), None)
        if following is None or f'check_exercise("{exercise.label}"' not in following.source:
            raise ExerciseError(f"cell {index}: the code cell after {exercise.label} must call check_exercise(\"{exercise.label}\", ...)")
        found.append(exercise)
    labels = [e.label for e in found]
    if len(set(labels)) != len(labels):
        raise ExerciseError(f"exercise labels repeat: {labels}")
    return found


# What a student edition writes where a solution was, by language: a comment and one short raise (the label is the grader's key).
YOUR_CODE = {"en": "# Your code here.", "ru": "# Ваш код здесь."}
SEE_ABOVE = {"en": "see the instructions above", "ru": "инструкции выше"}


def stubbed(source: str, exercise: Exercise, language: str = "en") -> str:
    """The exercise cell with every solution block replaced by a short NotImplementedError stub (its message keeps the grader's label)."""
    lines = source.splitlines()
    message = f"{exercise.label}: {worded(SEE_ABOVE, language)}"
    for begin, end in reversed(_solution_blocks(source, exercise.label)):
        indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
        lines[begin:end + 1] = [f"{indent}{worded(YOUR_CODE, language)}", f"{indent}raise NotImplementedError({message!r})"]  # one short line
    return "\n".join(lines)


def without_markers(source: str) -> str:
    """The exercise cell with its solutions and without the solution marker lines."""
    return "\n".join(line for line in source.splitlines() if line.strip() not in (BEGIN, END))


def student_notebook(nb: nbformat.NotebookNode, language: str = "en") -> nbformat.NotebookNode:
    """The student edition of a parsed source (left unchanged): stubs, and the guide in ``language`` after the first cell."""
    found = exercises(nb)
    by_index = {e.index: e for e in found}
    cells = [nbformat.NotebookNode(dict(cell, source=stubbed(cell.source, by_index[i], language))) if i in by_index else cell
             for i, cell in enumerate(nb.cells)]
    edition = nbformat.NotebookNode(dict(nb))
    edition.cells = cells[:1] + [nbformat.v4.new_markdown_cell(guide(found, language))] + cells[1:]
    return edition


def listing(found: list[Exercise], language: str = "en") -> str:
    """The exercise index: each label, in the reader's language, with the names the student writes."""
    from .translation.messages import reader_word

    word = reader_word("Exercise", language)
    return "\n".join(f"- **{e.label.replace('Exercise', word, 1)}:** `{'`, `'.join(e.written)}`" for e in found) or "- (none yet)"


GRADING_EN = (
    "**How this notebook is graded.** The grader finds your exercise cells and takes the functions, classes, "
    "imports and UPPER_CASE constants you define there and in cells of your own. It runs the same contract "
    "checks, one exercise at a time, on the reference solutions of earlier exercises, so one mistake costs one "
    "exercise. Your code runs in a separate process with a time limit; editing other cells changes nothing.\n\n"
)


GUIDE_RU = (
    "**Версия для студента.** Функции ниже — заготовки, которые вызывают `NotImplementedError`; "
    "замените строку `# Ваш код здесь.` и `raise` под ней своим кодом. Ячейка сразу после каждого "
    "упражнения запускает его контрактную проверку и сообщает, какое свойство выполнено, а какое нет, "
    "на каком входе, с ожидаемым и фактическим значениями.\n\n"
    "*Выполнить все* доходит до конца: упражнение, которое вы ещё не трогали, печатает «ещё не начато», "
    "и следующие ячейки работают на эталонном решении. Упражнение, которое вы начали и которое не проходит "
    "проверку, останавливает выполнение на своей ячейке проверки; эталон подменяет его и там, поэтому "
    "в меню *Среда выполнения* выполнение ячеек после текущей (Colab; в английском интерфейсе *Runtime → Run after*) "
    "на этой ячейке или *Run → Run Selected Cell and All Below* "
    "на следующей (JupyterLab) продолжает работу. `show_reference(\"Упражнение 1\")` печатает решение; "
    "последняя ячейка перечисляет упражнения пройденные, не пройденные и не начатые.\n\n"
    "**Как оценивается ноутбук.** Оценщик находит ячейки упражнений и берёт из них, а также из ваших "
    "собственных ячеек, функции, классы, импорты и константы (имена ЗАГЛАВНЫМИ буквами). Каждое упражнение "
    "проверяется отдельно теми же контрактными проверками, поверх эталонных решений предыдущих упражнений: "
    "одна ошибка стоит одного упражнения. Ваш код выполняется в отдельном процессе с ограничением по времени; "
    "правка остальных ячеек ничего не меняет.\n\n"
)


def guide(found: list[Exercise], language: str = "en") -> str:
    """The note at the top of a student edition: what to do and how the checks respond (English, or Russian for "ru")."""
    if language == "ru":
        return GUIDE_RU + listing(found, language)
    return (
        "**Student edition.** The functions below are stubs that raise `NotImplementedError`; "
        "replace the line `# Your code here.` and the `raise` under it with your code. The cell right "
        "after each exercise runs its contract check and tells you which property passes and which "
        "fails, on what input, with the expected and actual values.\n\n"
        "*Run all* reaches the end: an exercise you have not touched prints \"not attempted yet\" and the "
        "cells after it use the reference solution. An exercise you attempted that fails stops *Run all* "
        "at its check cell; the reference takes over there too, so *Runtime → Run after* on that cell "
        "(Colab) or *Run → Run Selected Cell and All Below* on the next one (JupyterLab) goes on. "
        "`show_reference(\"Exercise 1\")` prints a solution; the last cell lists the exercises passed, "
        "failed and not attempted.\n\n" + GRADING_EN + listing(found)
    )


def solution_sources(source_text: "str | nbformat.NotebookNode") -> dict[str, str]:
    """Each exercise's solution-edition cell, without the solution markers, by label (from the text or its parse)."""
    nb = pairing.read_source(source_text) if isinstance(source_text, str) else source_text
    return {e.label: without_markers(nb.cells[e.index].source) for e in exercises(nb)}


def solutions_code(source_text: "str | nbformat.NotebookNode") -> str:
    """Python that embeds every exercise's solution-edition cell as ``REFERENCE_SOURCES[label]``, base64-encoded.

    Plain base64 (no compression) keeps the bytes the same on every platform, so ``check`` never
    sees a drift that only another zlib would make.
    """
    lines = [
        "# The solution edition of every exercise cell, base64-encoded so that no solution is read by accident:",
        "# show_reference(label) prints one, and check_exercise runs it in place of an exercise not attempted or failed.",
        "import base64",
        "",
        "REFERENCE_SOURCES = {label: base64.b64decode(\"\".join(packed)).decode(\"utf-8\") for label, packed in {",
    ]
    for label, text in solution_sources(source_text).items():
        packed = base64.b64encode(text.encode("utf-8")).decode("ascii")
        lines.append(f'    "{label}": (')
        lines += [f'        "{packed[i:i + 96]}",' for i in range(0, len(packed), 96)]
        lines.append("    ),")
    return "\n".join(lines + ["}.items()}"]) + "\n"


def reinsert_solutions(student: str, source_text: str) -> str:
    """The student edition with every stub replaced again by the source's solution, cell by cell."""
    source_nb = pairing.read_source(source_text)
    solutions = {e.label: source_nb.cells[e.index].source for e in exercises(source_nb)}
    nb = pairing.read_source(student)
    for cell in nb.cells:
        if cell.cell_type == "code" and TAG in cell.metadata.get("tags", []):
            line = cell.source.splitlines()[0]
            first = EXERCISE_LABEL.match(line)
            if first is None:
                raise ValueError(f"an exercise cell of the student edition lost its label line: {line!r}")
            cell.source = solutions[first.group("label")]
    return pairing.write_percent(nb)


def shipped_run_problems(found: list[tuple[int, nbformat.NotebookNode]], labels: list[str]) -> list[str]:
    """What is wrong with a run of the shipped student edition, from its (cell index, error output) pairs.

    *Run all* must reach the end: every exercise in ``labels`` is not attempted, so no cell may fail.
    ``execute.RunResult.errors`` holds the pairs.
    """
    return [f"cell {i}: {out.ename}: {out.evalue[:300]} (with {', '.join(labels) or 'no exercise'} untouched, no cell may fail)"
            for i, out in found]
