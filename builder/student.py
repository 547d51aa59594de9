"""Student editions: every exercise's solution becomes a stub, with a hidden reference to fall back on.

An exercise is one code cell tagged ``exercise``. It opens with a comment block
``# Exercise N: instructions...`` and wraps each solution in nbgrader-style markers::

    ### BEGIN SOLUTION
    ...
    ### END SOLUTION

The next code cell must call ``check_exercise("Exercise N", ...)``. In the student edition each
solution block becomes ``raise NotImplementedError("Exercise N: instructions")``, and a collapsed
cell right before the exercise defines the reference solution and files it under
``REFERENCE_SOLUTIONS["Exercise N"]``, which ``check_exercise`` swaps in when a student skips ahead.
"""

import ast
import re
from dataclasses import dataclass

import nbformat

from . import exits, pairing

TAG = "exercise"
HIDDEN_TAG = pairing.COLLAPSED_TAG
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
_LABEL = re.compile(r"^#\s*(?P<label>Exercise \d+):\s*(?P<text>.*)$")


class ExerciseError(ValueError):
    """An exercise cell that breaks the convention; the message names the cell."""

    exit_code = exits.MALFORMED


@dataclass(frozen=True)
class Exercise:
    """One exercise cell: its label, its instructions and the names it defines."""

    index: int
    label: str
    instructions: str
    names: tuple[str, ...]


def parse_exercise(cell: nbformat.NotebookNode, index: int) -> Exercise:
    """Read the label, instructions and defined names of one exercise cell."""
    lines = cell.source.splitlines()
    first = _LABEL.match(lines[0]) if lines else None
    if not first:
        raise ExerciseError(f"cell {index}: an exercise cell must start with '# Exercise N: instructions'")
    text = [first.group("text").strip()]
    for line in lines[1:]:
        if not line.startswith("#") or line.startswith("# %%"):
            break
        text.append(line.lstrip("#").strip())
    names = tuple(n.name for n in ast.parse(cell.source).body if isinstance(n, (ast.FunctionDef, ast.ClassDef)))
    if not names:
        raise ExerciseError(f"cell {index} ({first.group('label')}): an exercise cell must define a function or class")
    _solution_blocks(cell.source, f"cell {index} ({first.group('label')})")
    return Exercise(index, first.group("label"), " ".join(t for t in text if t), names)


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


def stubbed(source: str, exercise: Exercise) -> str:
    """The exercise cell with every solution block replaced by a NotImplementedError stub."""
    lines = source.splitlines()
    message = f"{exercise.label}: {exercise.instructions}"
    for begin, end in reversed(_solution_blocks(source, exercise.label)):
        indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
        lines[begin:end + 1] = [f"{indent}# Your code here.", f"{indent}raise NotImplementedError({message!r})"]
    return "\n".join(lines)


def without_markers(source: str) -> str:
    """The exercise cell with its solutions and without the solution marker lines."""
    return "\n".join(line for line in source.splitlines() if line.strip() not in (BEGIN, END))


def reference_cell(source: str, exercise: Exercise, first: bool) -> nbformat.NotebookNode:
    """A collapsed cell that defines the reference solution and files it for check_exercise."""
    registry = "REFERENCE_SOLUTIONS = {}\n" if first else ""
    names = ", ".join(f'"{n}": {n}' for n in exercise.names)
    body = (
        f"# @title Reference solution of {exercise.label} (a spoiler: it stands in only if you skip the exercise)\n"
        f"{without_markers(source)}\n\n\n{registry}REFERENCE_SOLUTIONS[\"{exercise.label}\"] = {{{names}}}"
    )
    return nbformat.v4.new_code_cell(body, metadata={"tags": [HIDDEN_TAG]})


def student_text(source_text: str) -> str:
    """The percent-format student edition of a percent-format source (regions not yet rendered)."""
    return pairing.write_percent(student_notebook(pairing.read_source(source_text)))


def student_notebook(nb: nbformat.NotebookNode, language: str = "en") -> nbformat.NotebookNode:
    """The student edition of a parsed source (left unchanged): stubs, hidden solutions and the guide, in ``language``, after the first cell."""
    found = exercises(nb)
    by_index = {e.index: e for e in found}
    cells = []
    for index, cell in enumerate(nb.cells):
        exercise = by_index.get(index)
        if exercise:
            cells.append(reference_cell(cell.source, exercise, first=exercise is found[0]))
            cell = nbformat.NotebookNode(dict(cell, source=stubbed(cell.source, exercise)))
        cells.append(cell)
    edition = nbformat.NotebookNode(dict(nb))
    edition.cells = cells[:1] + [nbformat.v4.new_markdown_cell(guide(found, language))] + cells[1:]
    return edition


GUIDE_RU = (
    "**Версия для студента.** Функции ниже — заготовки, которые вызывают `NotImplementedError`; "
    "замените строку `# Your code here.` и `raise` под ней своим кодом. Ячейка сразу после каждого "
    "упражнения запускает его контрактную проверку и сообщает, какое свойство выполнено, а какое нет, "
    "на каком входе, с ожидаемым и фактическим значениями.\n\n"
    "Если вы пропустили упражнение или ваш ответ не прошёл проверку, ячейка проверки останавливает "
    "*Run all* (для заготовки — с `NotImplementedError`), и дальше работает скрытое эталонное решение "
    "(свёрнутая ячейка над каждым упражнением): в Colab выберите на этой ячейке *Runtime → Run after*, "
    "в JupyterLab — *Run → Run Selected Cell and All Below* на следующей, и остальное выполнится. "
    "`show_reference(\"Exercise 1\")` печатает решение; последняя ячейка перечисляет упражнения, "
    "в которых работало эталонное решение.\n\n"
)


def guide(found: list[Exercise], language: str = "en") -> str:
    """The note at the top of a student edition: what to do and how the checks respond (English, or Russian for "ru")."""
    listing = "\n".join(f"- **{e.label}:** `{'`, `'.join(e.names)}`" for e in found) or "- (none yet)"
    if language == "ru":
        return GUIDE_RU + listing
    return (
        "**Student edition.** The functions below are stubs that raise `NotImplementedError`; "
        "replace the line `# Your code here.` and the `raise` under it with your code. The cell right "
        "after each exercise runs its contract check and tells you which property passes and which "
        "fails, on what input, with the expected and actual values.\n\n"
        "If you skip an exercise, or your answer fails its check, the check cell stops *Run all* (with "
        "`NotImplementedError` for a stub) and the hidden reference solution (the collapsed cell above "
        "each exercise) takes over: choose *Runtime → Run after* on that cell in Colab, or *Run → Run "
        "Selected Cell and All Below* on the next one in JupyterLab, and the rest runs. "
        "`show_reference(\"Exercise 1\")` prints a solution; the last cell lists the exercises that "
        "used the reference.\n\n" + listing
    )


def solution_sources(source_text: "str | nbformat.NotebookNode") -> dict[str, str]:
    """Each exercise's solution-edition cell, without the solution markers, by label (from the text or its parse)."""
    nb = pairing.read_source(source_text) if isinstance(source_text, str) else source_text
    return {e.label: without_markers(nb.cells[e.index].source) for e in exercises(nb)}


def solutions_code(source_text: "str | nbformat.NotebookNode") -> str:
    """Python that embeds every exercise's solution-edition cell as ``REFERENCE_SOURCES[label]``."""
    lines = [
        "# The solution edition of every exercise cell: show_reference(label) prints one, and",
        "# check_exercise runs it in place of an exercise that failed its check.",
        "REFERENCE_SOURCES = {",
    ]
    for label, text in solution_sources(source_text).items():
        if any(line.startswith("# %%") for line in text.splitlines()):
            raise ExerciseError(f"{label}: a line starting with '# %%' cannot be embedded in a percent-format cell")
        raw = "'''" not in text and not text.endswith("\\") and "\r" not in text  # a raw string keeps it readable
        lines.append(f'    "{label}": ' + (f"r'''{text}'''" if raw else repr(text)) + ",")
    return "\n".join(lines + ["}"]) + "\n"


def reinsert_solutions(student: str, source_text: str) -> str:
    """The student edition with every stub replaced again by the source's solution, cell by cell."""
    source_nb = pairing.read_source(source_text)
    solutions = {e.label: source_nb.cells[e.index].source for e in exercises(source_nb)}
    nb = pairing.read_source(student)
    for cell in nb.cells:
        if cell.cell_type == "code" and TAG in cell.metadata.get("tags", []):
            cell.source = solutions[_LABEL.match(cell.source.splitlines()[0]).group("label")]
    return pairing.write_percent(nb)


def shipped_run_problems(found: list[tuple[int, dict]], labels: list[str]) -> list[str]:
    """What is wrong with a run of the shipped student edition, from its (cell index, error output) pairs.

    It must fail exactly once per exercise, in that exercise's check cell, with the stub's
    NotImplementedError, and nowhere else. ``execute.RunResult.errors`` holds the pairs.
    """
    problems = [f"cell {i}: {out.ename}: {out.evalue[:300]}" for i, out in found if out.ename != "NotImplementedError"]
    raised = [out.evalue.split(":")[0] for _, out in found if out.ename == "NotImplementedError"]
    if raised != labels:
        problems.append(f"expected one NotImplementedError per exercise {labels}, got {raised}")
    return problems
