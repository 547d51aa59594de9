"""``python -m builder release NAME --out DIR``: the graded edition of a notebook, with no solution in any form.

It is the student edition less the ``solutions`` region (the one copy of every solution), less
``show_reference`` and the prose about falling back on a reference, with a guide of its own and one
hidden cell that makes a cell needing an unfinished exercise print which exercise it waits for
(``builder/contracts/waiting.py``). It is written on demand, never committed.
"""

import re
from pathlib import Path

import nbformat

from . import cells, course_metadata, editions, exits, files, inline, pairing, student
from .config import worded
from .diagnostics import BuilderError

GRADED_EDITION = {"en": "Graded edition", "ru": "версия для оценивания"}
_REGION = re.compile(r"^# builder:begin inline show_reference\n.*?^# builder:end[^\n]*\n", re.MULTILINE | re.DOTALL)


class ReleaseError(BuilderError, ValueError):
    """A graded edition that cannot be written where asked; nothing was written."""

    exit_code = exits.USAGE


GUIDE_RU = (
    "**Версия для оценивания.** Функции ниже — заготовки, которые вызывают `NotImplementedError`; замените строку "
    "`# Ваш код здесь.` и `raise` под ней своим кодом. Ячейка сразу после каждого упражнения запускает его контрактную "
    "проверку: она печатает «ПРОЙДЕНО» или называет невыполненное свойство, вход, ожидаемое и фактическое значения. "
    "В этой версии нет решений: ячейка, которой нужно незаконченное упражнение, печатает, какое упражнение она ждёт; "
    "когда это упражнение пройдёт проверку, запустите ячейки под ним снова. Сдайте этот ноутбук; оценщик читает только "
    "ячейки упражнений (ячейки кода, которые начинаются с `# Exercise N · Упражнение N:`), поэтому сохраните эту первую строку.\n\n"
)
WAITING_TITLE = {"en": "Graded edition: a cell that needs an unfinished exercise prints which one it waits for",
                 "ru": "Версия для оценивания: ячейка, которой нужно незаконченное упражнение, печатает, какое она ждёт"}


def guide(found: list[student.Exercise], language: str = "en") -> str:
    """The note at the top of a graded edition: what to write, what the checks say, and what to hand in."""
    if language == "ru":
        return GUIDE_RU + student.listing(found, language)
    return (
        "**Graded edition.** The functions below are stubs that raise `NotImplementedError`; replace the line "
        "`# Your code here.` and the `raise` under it with your code. The cell right after each exercise runs its "
        "contract check: it prints PASS, or names the property that fails, on what input, with the expected and "
        "actual values. This edition holds no solutions: a cell that needs an exercise you have not finished "
        "prints which exercise it waits for; once that exercise passes its check, run the cells below it again. "
        "Hand in this notebook; the grader reads only the exercise cells (the code cells that start with "
        "`# Exercise N:`), so keep that first line.\n\n" + student.listing(found)
    )


def waiting_cell(root: Path, language: str = "en") -> nbformat.NotebookNode:
    """The hidden cell that makes cells needing an unfinished exercise wait for it."""
    body = inline.source_of("wait_for_exercises", root)
    title = worded(WAITING_TITLE, language)
    source = f"# @title {title}\n{body}\n\nwait_for_exercises(globals())"
    return nbformat.v4.new_code_cell(source, metadata={"tags": [cells.HIDDEN_TAG]})


def without_reference_prose(markdown: str) -> str:
    """A markdown cell less every paragraph that mentions ``show_reference`` (how to fall back on a reference)."""
    return "\n\n".join(p for p in markdown.split("\n\n") if "show_reference" not in p)


def graded_cell_source(source: str) -> str:
    """A student edition's code cell as the graded edition holds it: without its reference-only regions."""
    return _REGION.sub("", source)


def graded_notebook(student_nb: nbformat.NotebookNode, found: list[student.Exercise], title: tuple[str, str], root: Path,
                    language: str = "en"):
    """The graded edition of a parsed student edition: (the notebook, or None; what is wrong)."""
    cells = []
    for cell in student_nb.cells:
        if cell.cell_type == "code" and "builder:begin solutions" in cell.source:
            continue
        source = graded_cell_source(cell.source) if cell.cell_type == "code" else without_reference_prose(cell.source)
        cells.append(nbformat.NotebookNode(dict(cell, source=source)))
    cells[0].source = cells[0].source.replace(title[0], title[1])
    cells[0].source = "\n".join(line for line in cells[0].source.splitlines() if "colab-badge.svg" not in line)
    cells[1] = nbformat.v4.new_markdown_cell(guide(found, language))  # student_notebook's guide
    first = next(i for i, c in enumerate(cells) if student.TAG in c.metadata.get("tags", []))
    cells.insert(first, waiting_cell(root, language))
    graded = nbformat.NotebookNode(dict(student_nb, cells=cells))
    left = [c.source.splitlines()[0] for c in cells if "def show_reference" in c.source or "REFERENCE_SOURCES =" in c.source]
    return graded, left


def releases(course, nb) -> dict[Path, str]:
    """Relative path -> .ipynb text of the graded edition of ``nb``, in English and every translation."""
    built = editions.editions(course, nb)
    found = student.exercises(pairing.read_source(nb.source.read_text(encoding="utf-8"), course.root))
    written: dict[Path, str] = {}
    for edition in [nb] + [nb.translated(language) for language in course.languages]:
        parsed = pairing.read_source(built.expected[edition.student_source], course.root)
        title = (edition.student_title, f"{edition.title} · {worded(GRADED_EDITION, edition.language)}")
        graded, left = graded_notebook(parsed, found, title, course.root, edition.language)
        if left:
            raise files.MalformedFile(f"{course.shown(edition.student_source)}: the graded edition would still mention a "
                                      f"solution in the cells starting {left}; keep show_reference in its own inline region")
        relative = Path(edition.name + ".ipynb") if edition.language == "en" else Path(edition.language) / f"{edition.name}.ipynb"
        written[relative] = pairing.ipynb_text(graded, course.root, course_metadata.stamp(edition.name, "graded", edition.language))
    return written


def options(p) -> None:
    """The flags of ``release``."""
    p.add_argument("names", nargs="+", metavar="NAME", help="notebook names or reference keys")
    p.add_argument("--out", type=Path, required=True, help="folder for NAME.ipynb and <language>/NAME.ipynb (outside notebooks/)")


def command(course, args) -> int:
    """Write the graded edition of each named notebook: no solution in any form, for a class that hands its work in.

    Each check says PASS or names what fails; a cell that needs an unfinished exercise prints which
    one it waits for. The edition is generated on demand and never committed: --out must lie outside
    notebooks/. Nothing is written unless every edition builds. Exit 2 on bad usage.
    """
    out = args.out.resolve()
    if out.is_relative_to((course.root / "notebooks").resolve()):
        raise ReleaseError(f"--out {args.out} lies inside notebooks/, where it could be committed; choose a folder outside it")
    texts = {out / path: text for nb in course.select(args.names) for path, text in releases(course, nb).items()}
    for path, text in texts.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return 0
