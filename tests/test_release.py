"""The graded edition (``python -m builder release``): no solution in any form, runs to the end, and the grader accepts it."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from builder import cli, execute, inline, pairing, release, student
from builder.cells import EXERCISE_LABEL
from builder.config import load_course
from tools import grade_variants as variants
from tests.support import ROOT


def solution_lines(source_text: str) -> list[str]:
    """Every non-blank, non-comment line inside the solution blocks of a notebook source, stripped."""
    nb = pairing.read_source(source_text)
    found = []
    for exercise in student.exercises(nb):
        lines = nb.cells[exercise.index].source.splitlines()
        for begin, end in student._solution_blocks(nb.cells[exercise.index].source, exercise.label):
            found += [line.strip() for line in lines[begin + 1:end] if line.strip() and not line.strip().startswith("#")]
    return found


def cell_text(ipynb_text: str) -> str:
    """The source of every cell of a notebook's .ipynb text."""
    return "\n".join("".join(cell["source"]) for cell in json.loads(ipynb_text)["cells"])


@pytest.fixture(scope="module")
def graded(course):
    """Each notebook: (its Notebook, its source text, the relative path -> .ipynb text of its graded editions)."""
    return [(nb, nb.source.read_text(encoding="utf-8"), release.releases(course, nb)) for nb in course.notebooks]


def test_the_graded_edition_holds_no_solution_line(graded):
    for nb, source, written in graded:
        student_text = nb.student_source.read_text(encoding="utf-8")  # as built: `check` keeps it so
        elsewhere = {line.strip() for line in student_text.splitlines()}  # lines a solution shares with the rest of the lesson
        distinctive = [line for line in solution_lines(source) if line not in elsewhere]
        assert len(distinctive) > len(solution_lines(source)) / 2, f"{nb.name}: too few distinctive solution lines to test"
        for path, text in written.items():
            shown = {line.strip() for line in cell_text(text).splitlines()}
            leaked = [line for line in distinctive if line in shown]
            assert not leaked, f"{path}: solution lines in the graded edition: {leaked[:5]}"


def test_the_graded_edition_has_no_reference_fallback_and_a_hidden_waiting_cell(graded, course):
    for nb, _, written in graded:
        assert set(written) == {Path(f"{nb.name}.ipynb")} | {Path(language, f"{nb.name}.ipynb") for language in course.languages}
        for path, text in written.items():
            cells = json.loads(text)["cells"]
            body = cell_text(text)
            assert "def show_reference" not in body and "REFERENCE_SOURCES =" not in body and 'show_reference("' not in body, path
            waiting = [c for c in cells if "wait_for_exercises(globals())" in "".join(c["source"])]
            assert len(waiting) == 1 and waiting[0]["metadata"]["cellView"] == "form", path
            language = "en" if path.parent.name == "" else "ru"
            assert "".join(waiting[0]["source"]).startswith(f"# @title {release.WAITING_TITLE[language]}\n")
            assert release.GRADED_EDITION[language] in "".join(cells[0]["source"])


def test_release_refuses_a_folder_inside_notebooks_and_writes_nothing(tmp_path):
    inside = ROOT / "notebooks" / "graded-by-mistake"
    assert cli.main(["--root", str(ROOT), "release", "module3", "--out", str(inside)]) == 2
    assert not inside.exists()


WAITING_SESSION = textwrap.dedent('''\
    import sys
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_cell(sys.argv[1] + "\\nwait_for_exercises(globals())")
    for cell in sys.argv[2:]:
        shell.run_cell(cell)
    ''')


def ipython_session(*cells: str) -> list[str]:
    """The lines an IPython shell prints for ``cells``, after the graded edition's waiting cell."""
    toolkit = "\n".join(inline.source_of(name) for name in ("MESSAGES", "say", "shown_label", "wait_for_exercises"))  # as the edition inlines them
    code = [sys.executable, "-c", WAITING_SESSION, toolkit, *cells]
    done = subprocess.run(code, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.splitlines()


def test_a_cell_that_needs_an_unfinished_exercise_prints_one_line_and_keeps_its_definitions():
    out = ipython_session(
        "def stub():\n    raise NotImplementedError('Exercise 1: write it')",
        "table = [(1, len), (2, {'f': stub})]",
        "EXERCISES_WAITING['stub'] = 'Exercise 1'",
        "def helper(x):\n    return 2 * x\nvalue = stub()\nprint('ran')",
        "print(helper(21))",
        "def uses():\n    return stub()",
        "later = value + uses()",
        "for _, entry in table:\n    print(entry)",
        "print('independent')",
        "del EXERCISES_WAITING['stub']\nprint('passed')",
        "print(later if 'later' in globals() else 'later is unset')",
    )
    waits = "This cell waits for Exercise 1: run it again once Exercise 1 passes its check."
    assert out == [waits, "42", waits, waits, "independent", "passed", "later is unset"]  # the table holds stub


def solved(graded_path, source_text: str, out):
    """The graded edition with every exercise cell replaced by the source's: a class that solved everything."""
    solutions = {e.label: pairing.read_source(source_text).cells[e.index].source for e in student.exercises(pairing.read_source(source_text))}
    nb = nbformat.read(graded_path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and student.TAG in cell.metadata.get("tags", []):
            cell.source = solutions[EXERCISE_LABEL.match(cell.source.splitlines()[0]).group("label")]
    nbformat.write(nb, out)
    return out


def printed(path) -> str:
    """Everything an executed notebook printed."""
    return "".join(o.get("text", "") for c in nbformat.read(path, as_version=4).cells for o in c.get("outputs", []))


def grade_total(path, out) -> str:
    """'score/max' of one submission, graded through the command line as an instructor would."""
    done = subprocess.run([sys.executable, "-m", "builder", "grade", str(path), "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    import csv

    row = next(csv.DictReader((out / "grades.csv").read_text(encoding="utf-8").splitlines()))
    return f"{row['total']}/{row['max']}"


@pytest.mark.slow
@pytest.mark.parametrize("name", [nb.name for nb in load_course(ROOT).notebooks])
def test_the_graded_edition_runs_to_the_end_and_grades_as_expected(name, tmp_path, course):
    nb = next(n for n in course.notebooks if n.name == name)
    labels = [e.label for e in student.exercises(pairing.read_source(nb.source.read_text(encoding="utf-8")))]
    assert cli.main(["--root", str(ROOT), "release", name, "--out", str(tmp_path / "graded")]) == 0
    shipped = tmp_path / "graded" / f"{name}.ipynb"
    run = execute.run(shipped, tmp_path / "shipped")
    assert run.error is None, f"the graded edition as shipped stopped at cell {run.failed_cell}: {run.error[-1500:]}"
    out = printed(run.executed)
    assert f"Exercises not attempted: {', '.join(labels)}\n" in out and "This cell waits for Exercise 1: " in out
    assert "wait with the cells that wait for Exercise 1" in out and "were used or checked by a cell" not in out, "the last cell says the true thing"
    answered = solved(shipped, nb.source.read_text(encoding="utf-8"), tmp_path / f"{name}.ipynb")
    run = execute.run(answered, tmp_path / "solved")
    assert run.error is None, f"the graded edition with every solution stopped at cell {run.failed_cell}: {run.error[-1500:]}"
    out = printed(run.executed)
    assert "This cell waits" not in out and f"Exercises passed with your own code: {', '.join(labels)}\n" in out
    points = len(variants.graded(nb))  # an exercise worth 0 points is not graded
    assert grade_total(shipped, tmp_path / "grades-shipped") == f"0/{points}"
    assert grade_total(answered, tmp_path / "grades-solved") == f"{points}/{points}"
