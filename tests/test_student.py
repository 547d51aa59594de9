"""Student editions: stubs, hidden reference solutions, and re-inserted solutions."""

import textwrap

import pytest

from builder import pairing, student
from builder.config import load_course
from tests.support import ROOT

SOURCE = textwrap.dedent('''\
    # %% [markdown]
    # # Title

    # %% tags=["hide-input"]
    # @title The toolkit
    LIMIT = 10

    # %% tags=["exercise"]
    # Exercise 1: return twice the input.
    # Multiply, do not add.
    def double(x):
        """Twice x."""
        _require_number(x)
        ### BEGIN SOLUTION
        return 2 * x
        ### END SOLUTION


    def _require_number(x):
        """A helper the student does not write."""
        if x is None:
            raise TypeError("x must be a number")


    # %%
    check_exercise("Exercise 1", lambda f: f(2) == 4 or 1 / 0, double, globals())

    # %%
    print(double(21))
    ''')


def student_text(source_text: str) -> str:
    """The percent-format student edition of a percent-format source (regions not yet rendered)."""
    return pairing.write_percent(student.student_notebook(pairing.read_source(source_text)))


def test_exercises_are_found_with_label_instructions_and_the_names_the_student_writes():
    [exercise] = student.exercises(pairing.read_source(SOURCE))
    assert (exercise.label, exercise.instructions) == ("Exercise 1", "return twice the input. Multiply, do not add.")
    assert exercise.names == ("double", "_require_number") and exercise.written == ("double",)


def test_the_exercise_index_names_only_what_the_student_writes():
    guide = pairing.read_source(student_text(SOURCE)).cells[1].source
    assert "- **Exercise 1:** `double`" in guide and "_require_number" not in guide


def test_student_edition_stubs_the_solution_and_keeps_validation():
    text = student_text(SOURCE)
    cells = pairing.read_source(text).cells
    stub = next(c for c in cells if "exercise" in c.metadata.get("tags", []))
    assert "return 2 * x" not in stub.source and "_require_number(x)" in stub.source
    assert "    raise NotImplementedError('Exercise 1: see the instructions above')" in stub.source
    assert "### BEGIN SOLUTION" not in text


def test_no_solution_sits_in_a_cell_of_the_student_edition():
    text = student_text(SOURCE)
    assert "return 2 * x" not in text and "Reference solution" not in text and "REFERENCE_SOLUTIONS" not in text


def test_the_solutions_region_holds_each_solution_once_encoded():
    code = student.solutions_code(SOURCE)
    assert "return 2 * x" not in code and code.count('"Exercise 1": (') == 1
    namespace = {}
    exec(code, namespace)
    assert namespace["REFERENCE_SOURCES"] == student.solution_sources(SOURCE)
    assert "    return 2 * x" in namespace["REFERENCE_SOURCES"]["Exercise 1"]


def test_collapsed_cells_open_as_forms_in_colab():
    import json

    nb = json.loads(pairing.to_ipynb(student_text(SOURCE)))
    hidden = [c for c in nb["cells"] if "hide-input" in c["metadata"].get("tags", [])]
    assert hidden and all(c["metadata"]["cellView"] == "form" and c["metadata"]["jupyter"]["source_hidden"] for c in hidden)


def test_an_untouched_stub_prints_one_line_and_the_notebook_goes_on_on_the_reference(capsys):
    from builder.contracts.exercises import check_exercise, exercise_summary

    namespace = {"check_exercise": check_exercise}
    exec(student.solutions_code(SOURCE), namespace)
    cells = [c for c in pairing.read_source(student_text(SOURCE)).cells if c.cell_type == "code"]
    for cell in cells:
        exec(cell.source, namespace)
    exercise_summary(namespace)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Exercise 1: not attempted yet; later cells use the reference solution"
    assert out[1] == "42" and "Exercises not attempted: Exercise 1" in out and "Exercises failed: none" in out


def test_reinserted_solutions_restore_the_source_cells():
    text = student.reinsert_solutions(student_text(SOURCE), SOURCE)
    exercise = next(c for c in pairing.read_source(text).cells if "exercise" in c.metadata.get("tags", []))
    assert exercise.source == pairing.read_source(SOURCE).cells[2].source


@pytest.mark.parametrize(
    ("broken", "words"),
    [
        (SOURCE.replace("# Exercise 1: return", "# Return"), "must start with '# Exercise N: instructions'"),
        (SOURCE.replace('check_exercise("Exercise 1"', 'check_exercise("Exercise 2"'), "must call check_exercise(\"Exercise 1\""),
        (SOURCE.replace("    ### END SOLUTION\n", ""), "without '### END SOLUTION'"),
        (SOURCE.replace("    ### BEGIN SOLUTION\n", "    ### BEGIN SOLUTION\n    ### BEGIN SOLUTION\n"), "nested"),
    ],
)
def test_broken_exercises_are_named(broken, words):
    with pytest.raises(student.ExerciseError, match=words.replace("(", r"\(").replace(")", r"\)")):
        student_text(broken)


def test_each_notebook_has_at_least_four_exercises(course):
    """Only parses the sources, so it sits in the default tier (Module 5.2 has four)."""
    for nb in course.notebooks:
        assert len(student.exercises(pairing.read_source(nb.source.read_text()))) >= 4, nb.name


def printed(path) -> str:
    """Everything an executed notebook printed."""
    import nbformat

    return "".join(o.get("text", "") for c in nbformat.read(path, as_version=4).cells for o in c.get("outputs", []))


@pytest.mark.slow
@pytest.mark.parametrize("name", [nb.name for nb in load_course(ROOT).notebooks])
def test_the_shipped_student_edition_runs_to_the_end_and_passes_with_its_solutions_back(name, course, student_runs):
    nb = next(n for n in course.notebooks if n.name == name)
    labels = ", ".join(e.label for e in student.exercises(pairing.read_source(nb.source.read_text(encoding="utf-8"))))
    shipped = student_runs.shipped(nb)  # every cell runs, so an error anywhere is in ``errors``
    first = shipped.errors[0] if shipped.errors else None
    assert shipped.error is None and not shipped.errors, f"{name} student edition failed at cell {first and first[0]}: {shipped.error or first}"
    out = printed(shipped.executed)
    assert f"Exercises failed: none\nExercises not attempted: {labels}\n" in out, out[-1500:]
    assert "Exercise 1: not attempted yet; later cells use the reference solution\n" in out
    run = student_runs.reinserted(nb)
    assert run.error is None, f"{name} with its solutions back stopped at cell {run.failed_cell}: {run.error[-1500:]}"
    out = printed(run.executed)
    assert f"Exercises passed with your own code: {labels}\n" in out and "not attempted yet" not in out


def test_the_student_guide_says_how_the_notebook_is_graded_in_each_language():
    assert "How this notebook is graded." in student.guide([], "en")
    assert "Как оценивается ноутбук." in student.guide([], "ru") and "How this notebook" not in student.guide([], "ru")
