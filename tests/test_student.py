"""Student editions: stubs, hidden reference solutions, and re-inserted solutions."""

import textwrap

import pytest

from builder import pairing, student

SOURCE = textwrap.dedent('''\
    # %% [markdown]
    # # Title

    # %% tags=["exercise"]
    # Exercise 1: return twice the input.
    # Multiply, do not add.
    def double(x):
        """Twice x."""
        if x is None:
            raise TypeError("x must be a number")
        ### BEGIN SOLUTION
        return 2 * x
        ### END SOLUTION


    # %%
    check_exercise("Exercise 1", lambda f: f(2) == 4 or 1 / 0, double, globals())

    # %%
    print(double(21))
    ''')


def test_exercises_are_found_with_label_instructions_and_names():
    [exercise] = student.exercises(pairing.read_source(SOURCE))
    assert (exercise.label, exercise.instructions, exercise.names) == ("Exercise 1", "return twice the input. Multiply, do not add.", ("double",))


def test_student_edition_stubs_the_solution_and_keeps_validation():
    text = student.student_text(SOURCE)
    cells = pairing.read_source(text).cells
    stub = next(c for c in cells if "exercise" in c.metadata.get("tags", []))
    assert "return 2 * x" not in stub.source and 'raise TypeError("x must be a number")' in stub.source
    assert "    raise NotImplementedError('Exercise 1: return twice the input. Multiply, do not add.')" in stub.source
    assert "### BEGIN SOLUTION" not in text


def test_reference_solution_sits_collapsed_right_before_the_exercise():
    cells = pairing.read_source(student.student_text(SOURCE)).cells
    index = next(i for i, c in enumerate(cells) if "exercise" in c.metadata.get("tags", []))
    reference = cells[index - 1]
    assert reference.metadata["tags"] == ["hide-input"]
    assert "return 2 * x" in reference.source and 'REFERENCE_SOLUTIONS["Exercise 1"] = {"double": double}' in reference.source
    assert reference.source.startswith("# @title Reference solution of Exercise 1")


def test_collapsed_cells_open_as_forms_in_colab():
    import json

    nb = json.loads(pairing.to_ipynb(student.student_text(SOURCE)))
    hidden = [c for c in nb["cells"] if "hide-input" in c["metadata"].get("tags", [])]
    assert hidden and all(c["metadata"]["cellView"] == "form" and c["metadata"]["jupyter"]["source_hidden"] for c in hidden)


def test_student_edition_runs_to_the_stub_then_falls_back(capsys):
    from builder.contracts.exercises import check_exercise

    namespace = {"check_exercise": check_exercise}
    cells = [c for c in pairing.read_source(student.student_text(SOURCE)).cells if c.cell_type == "code"]
    for cell in cells[:2]:
        exec(cell.source, namespace)
    with pytest.raises(NotImplementedError, match="Exercise 1: double is still a stub"):
        exec(cells[2].source, namespace)
    exec(cells[3].source, namespace)
    assert capsys.readouterr().out.strip().endswith("42")


def test_reinserted_solutions_restore_the_source_cells():
    text = student.reinsert_solutions(student.student_text(SOURCE), SOURCE)
    exercise = next(c for c in pairing.read_source(text).cells if "exercise" in c.metadata.get("tags", []))
    assert exercise.source == pairing.read_source(SOURCE).cells[1].source


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
        student.student_text(broken)


def test_each_notebook_has_at_least_four_exercises(course):
    """Only parses the sources, so it sits in the default tier (Module 5.2 has four)."""
    for nb in course.notebooks:
        assert len(student.exercises(pairing.read_source(nb.source.read_text()))) >= 4, nb.name
