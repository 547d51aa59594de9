"""A wrong answer costs one cell: its check cell fails naming the property, and the rest of the notebook runs.

Every exercise is found by the notebooks' own convention (a cell tagged ``exercise`` followed by its
``check_exercise`` cell), so a new exercise gets a test of its own. Its wrong version is the first
bug of ``tests/bug_catalog.py`` for that exercise whose edits fall inside the solution block; an
exercise without one fails here, by name. ``-m wrong_answer`` runs every exercise; the slow tier
runs a seeded sample of three per module, each with a seeded choice among its fitting bugs
(``COURSE_SAMPLE_SEED`` picks both, default 0: the same tests run every day, and a seed that finds a bug can be rerun).
Each failure must render in at most 15 lines with no frame of the course's machinery. ``COURSE_COLAB_VENV=.colab-venv``
runs the notebooks on the Colab-pinned kernel that ``python -m builder colab`` set up there.
"""

import ast
import copy
import os
import random
import re
import subprocess
import sys
from dataclasses import dataclass

import nbformat
import pytest

from builder import execute, pairing, student
from tests.bug_catalog import CATALOG
from tests.support import NOTEBOOK_SOURCES

def kernel_name() -> str:
    """``python3``, or with ``COURSE_COLAB_VENV=DIR`` the Colab-pinned kernel that ``python -m builder colab --venv DIR`` set up."""
    from pathlib import Path

    from builder import colab

    venv = os.environ.get("COURSE_COLAB_VENV")
    return colab.use_kernel(Path(venv).resolve()) if venv else "python3"


CHECK_CALL = re.compile(r'check_exercise\("(?P<label>Exercise \d+)", (?P<contract>\w+), (?P<target>\w+), globals\(\)\)')


@dataclass(frozen=True)
class Judged:
    """One exercise of a notebook source: where it sits, what judges it, and the cell that does."""

    module: str
    label: str
    cell: int
    check_cell: int
    contract: str
    target: str

    def __str__(self) -> str:
        return f"{self.module}-{self.label.replace(' ', '')}-{self.target}"


def source_notebook(module: str) -> nbformat.NotebookNode:
    """A fresh parse of a module's percent source."""
    return pairing.read_source(NOTEBOOK_SOURCES[module].read_text(encoding="utf-8"))


def judged_exercises(module: str, nb: nbformat.NotebookNode) -> list[Judged]:
    """Every exercise of a module's parsed source, with its check cell, contract and function."""
    found = []
    for exercise in student.exercises(nb):
        check = next(i for i in range(exercise.index + 1, len(nb.cells)) if nb.cells[i].cell_type == "code")
        call = CHECK_CALL.search(nb.cells[check].source)
        if call is None or call["label"] != exercise.label:
            raise AssertionError(f"{module} {exercise.label}: its check cell does not call check_exercise as the convention says")
        found.append(Judged(module, exercise.label, exercise.index, check, call["contract"], call["target"]))
    return found


def inside_solutions(source: str, edits) -> str | None:
    """``source`` with every (old, new) edit made inside its solution blocks, or None when one does not fit there."""
    lines = source.splitlines()
    blocks = student._solution_blocks(source, "exercise")
    texts = ["\n".join(lines[b:e + 1]) for b, e in blocks]
    for old, new in edits:
        hits = [i for i, text in enumerate(texts) if old in text]
        if len(hits) != 1 or texts[hits[0]].count(old) != 1:
            return None
        texts[hits[0]] = texts[hits[0]].replace(old, new)
    for (b, e), text in reversed(list(zip(blocks, texts))):
        lines[b:e + 1] = text.splitlines()
    return "\n".join(lines)


def wrong_version(exercise: Judged, source: str, rng: random.Random | None = None):
    """(catalog bug, mutated exercise cell): the first catalogued bug that fits inside the solution block, or a random one."""
    fitting = []
    for bug in CATALOG:
        if (bug.module, bug.contract, bug.target) == (exercise.module, exercise.contract, exercise.target) and bug.source_edits:
            mutated = inside_solutions(source, bug.source_edits)
            if mutated is not None and mutated != source:
                fitting.append((bug, mutated))
    if not fitting:
        pytest.fail(
            f"Module {exercise.module} {exercise.label} ({exercise.target}, judged by {exercise.contract}) has no bug in "
            f"tests/bug_catalog.py whose edits fall inside its solution block; add a realistic one"
        )
    return fitting[0] if rng is None else rng.choice(fitting)


def run_with_wrong_answer(exercise: Judged, tmp_path, rng=None):
    """Execute the solution notebook with ``exercise`` made wrong, every cell run; return (bug, executed notebook)."""
    nb = copy.deepcopy(PARSED[exercise.module])  # the notebook the exercises were collected from
    bug, nb.cells[exercise.cell].source = wrong_version(exercise, nb.cells[exercise.cell].source, rng)
    ipynb = tmp_path / NOTEBOOK_SOURCES[exercise.module].with_suffix(".ipynb").name
    ipynb.write_text(pairing.to_ipynb(pairing.write_percent(nb)), encoding="utf-8")
    result = execute.run(ipynb, tmp_path / "executed", allow_errors=True, kernel_name=kernel_name())
    return bug, nbformat.read(result.executed, as_version=4)


def printed(nb) -> str:
    """Everything the executed notebook printed to stdout."""
    return "".join(
        "".join(out.get("text", "")) for cell in nb.cells for out in cell.get("outputs", []) if out.get("name") == "stdout"
    )


COURSE_FRAME = re.compile(r", in (check_exercise|contract_\w+|check_\w+_contract|judge|use_reference)$")


def shown_lines(error) -> list[str]:
    """The non-blank lines a front end shows for an error output (its rendered traceback), ANSI colours removed."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error.get("traceback", [])))
    return [line for line in text.splitlines() if line.strip()]


def assert_short_failure(error, prop: str, where: str) -> None:
    """The rendered failure: at most 15 lines, the property and the usual cause, no frame of the course's machinery."""
    lines = shown_lines(error)
    assert len(lines) <= 15, f"{where}: {len(lines)} lines shown:\n" + "\n".join(lines)
    assert prop in "\n".join(lines) and any(line.strip().startswith("usual cause:") for line in lines), f"{where}: {lines}"
    assert not [line for line in lines if COURSE_FRAME.search(line)], f"{where}: a course frame is shown: {lines}"


def assert_one_named_failure(exercise: Judged, tmp_path, rng=None):
    bug, executed = run_with_wrong_answer(exercise, tmp_path, rng)
    errors = execute.error_outputs(executed)
    where = [f"cell {i}: {out.ename}: {out.evalue.splitlines()[0][:200] if out.evalue else ''}" for i, out in errors]
    assert len(errors) == 1, f"{exercise} with bug {bug.id}: expected exactly one error cell, got {len(errors)}:\n" + "\n".join(where)
    [(cell, error)] = errors
    assert cell == exercise.check_cell, f"{exercise} with bug {bug.id}: the error is in cell {cell}, not its check cell {exercise.check_cell}"
    assert error.ename == "ContractViolation" and "contract property '" in error.evalue, f"{exercise}: {where}"
    assert bug.property in error.evalue.splitlines()[0], f"{exercise} with bug {bug.id}: expected {bug.property!r}: {where}"
    assert "Runtime → Run after" in error.evalue, "the failure says how to go on"
    assert_short_failure(error, bug.property, f"{exercise} with bug {bug.id}")
    out = printed(executed)
    assert f"{exercise.label}: PASS" not in out, f"{exercise}: a PASS line for the exercise whose check failed"
    assert not re.search(r"^Module \d: PASS$", out, flags=re.MULTILINE), "the final summary claims a pass"
    assert f"Exercises failed: {exercise.label}\n" in out, out[-2000:]
    assert f"First failing check: the check cell of {exercise.label} ({exercise.target} failed '" in out, out[-2000:]


PARSED = {module: source_notebook(module) for module in NOTEBOOK_SOURCES}
ALL = [exercise for module in NOTEBOOK_SOURCES for exercise in judged_exercises(module, PARSED[module])]
SEED = int(os.environ.get("COURSE_SAMPLE_SEED", "0"))
SAMPLE = [e for module in NOTEBOOK_SOURCES for e in random.Random(f"{SEED}-{module}").sample([e for e in ALL if e.module == module], 3)]


@pytest.mark.wrong_answer
@pytest.mark.parametrize("exercise", ALL, ids=str)
def test_every_wrong_exercise_costs_exactly_its_own_check_cell(exercise, tmp_path):
    assert_one_named_failure(exercise, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("exercise", SAMPLE, ids=lambda e: f"seed{SEED}-{e}")
def test_a_seeded_sample_of_wrong_exercises_costs_one_cell_each(exercise, tmp_path):
    assert_one_named_failure(exercise, tmp_path, random.Random(f"{SEED}-{exercise}"))


def student_ipynb(module: str):
    """The committed student edition of a module."""
    source = NOTEBOOK_SOURCES[module]
    return source.parent / "student" / source.with_suffix(".ipynb").name


@pytest.mark.slow
@pytest.mark.parametrize("exercise", [next(e for e in SAMPLE if e.module == m) for m in NOTEBOOK_SOURCES], ids=lambda e: f"seed{SEED}-{e}")
def test_one_wrong_exercise_in_the_student_edition_costs_exactly_its_check_cell(exercise, tmp_path):
    nb = nbformat.read(student_ipynb(exercise.module), as_version=4)
    at = exercise.cell + 1  # the student edition has its guide after the first cell
    assert nb.cells[at].source.startswith(f"# {exercise.label}:"), f"{exercise}: cell {at} of the student edition is not the exercise"
    bug, nb.cells[at].source = wrong_version(exercise, PARSED[exercise.module].cells[exercise.cell].source)
    nbformat.write(nb, tmp_path / "one_wrong.ipynb")
    run = execute.run(tmp_path / "one_wrong.ipynb", tmp_path / "out", allow_errors=True, kernel_name=kernel_name())
    executed = nbformat.read(run.executed, as_version=4)
    errors = execute.error_outputs(executed)
    assert [i for i, _ in errors] == [exercise.check_cell + 1], f"{exercise} with bug {bug.id}: error cells {[(i, e.ename) for i, e in errors]}"
    assert_short_failure(errors[0][1], bug.property, f"{exercise} with bug {bug.id}")
    out = printed(executed)
    others = [e.label for e in ALL if e.module == exercise.module and e.label != exercise.label]
    assert f"Exercises failed: {exercise.label}\n" in out and f"Exercises not attempted: {', '.join(others)}\n" in out


@pytest.mark.slow
def test_an_error_raised_in_the_students_code_shows_the_students_line_and_no_course_frame(tmp_path):
    exercise = ALL[0]
    nb = copy.deepcopy(PARSED[exercise.module])
    source = nb.cells[exercise.cell].source
    begin = student._solution_blocks(source, exercise.label)[0][0]
    lines = source.splitlines()
    indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
    nb.cells[exercise.cell].source = "\n".join(lines[:begin + 1] + [f'{indent}raise IndexError("a slip of my own")'] + lines[begin + 1:])
    ipynb = tmp_path / NOTEBOOK_SOURCES[exercise.module].with_suffix(".ipynb").name
    ipynb.write_text(pairing.to_ipynb(pairing.write_percent(nb)), encoding="utf-8")
    executed = nbformat.read(execute.run(ipynb, tmp_path / "out", allow_errors=True, kernel_name=kernel_name()).executed, as_version=4)
    [(cell, error)] = execute.error_outputs(executed)
    assert cell == exercise.check_cell
    shown = shown_lines(error)
    assert len(shown) <= 15 and not [line for line in shown if COURSE_FRAME.search(line)], "\n".join(shown)
    assert shown[0] == "Your code raised IndexError here (the course's frames are left out):", "\n".join(shown)
    assert shown[1].endswith(f"in {exercise.target}") and shown[2].strip() == 'raise IndexError("a slip of my own")', "\n".join(shown)


@pytest.mark.parametrize("exercise", ALL, ids=str)
def test_every_exercise_has_a_catalogued_bug_inside_its_solution_block(exercise):
    wrong_version(exercise, PARSED[exercise.module].cells[exercise.cell].source)


@pytest.mark.parametrize("module", list(NOTEBOOK_SOURCES))
def test_no_notebook_source_holds_an_assert_statement(module):
    tree = ast.parse(NOTEBOOK_SOURCES[module].read_text(encoding="utf-8"))
    lines = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assert)]
    assert not lines, f"{NOTEBOOK_SOURCES[module].name}: assert statements vanish under python -O; use expect(...) on lines {lines}"


def script_exit_codes(path, cwd):
    """The exit codes of ``python path`` and ``python -O path``."""
    return [subprocess.run([sys.executable, *flags, str(path)], cwd=cwd, capture_output=True, text=True).returncode for flags in ([], ["-O"])]


@pytest.mark.slow
@pytest.mark.parametrize("module", list(NOTEBOOK_SOURCES))
def test_python_dash_o_keeps_every_check(module, tmp_path, script_runs):
    source = NOTEBOOK_SOURCES[module].read_text(encoding="utf-8")
    # conftest's script_runs: the plain run is the one test_execution's plain-script test makes
    assert [script_runs(NOTEBOOK_SOURCES[module], *flags).returncode for flags in ([], ["-O"])] == [0, 0]
    broken = tmp_path / f"broken_{NOTEBOOK_SOURCES[module].name}"
    first = next(line for line in source.splitlines() if line.startswith("expect(") and '"==", ' in line)
    broken.write_text(source.replace(first, first.replace('"==", ', '"!=", '), 1), encoding="utf-8")
    assert script_exit_codes(broken, tmp_path) == [1, 1], f"breaking {first!r} must fail with and without -O"


TOOLKIT = ("MESSAGES", "say", "in_language", "shown_label", "key_label", "require_namespace", "ContractViolation", "contract_assert", "contract_call", "use_reference", "exercises_on_reference",
           "check_exercise", "exercise_summary", "CheckFailed", "expect")
SESSION = [
    'def contract(f):\n    got = contract_call("double(3) is 6", "x=3", "the lines above show where", f, 3)\n'
    '    contract_assert(got == 6, "double(3) is 6", "x=3", "6", repr(got), "multiply by 2, do not add 2")',
    "def double(x):\n    return x + 2",
    'check_exercise("Exercise 1", contract, double, globals())',
    "def double(x):\n    return [1][x]",
    'check_exercise("Exercise 1", contract, double, globals())',
    'expect("one is two", 1, "==", 2)',
]


def ipython_transcript(python: str) -> list[str]:
    """What an IPython shell of ``python`` shows for SESSION on the inlined toolkit, colours removed."""
    from builder import inline

    script = ("import sys\nfrom IPython.core.interactiveshell import InteractiveShell\nshell = InteractiveShell.instance()\n"
              "for cell in sys.argv[1:]:\n    print('>>>')\n    shell.run_cell(cell)\n")
    toolkit = "\n\n".join(inline.source_of(name) for name in TOOLKIT)
    done = subprocess.run([python, "-c", script, toolkit, *SESSION], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return re.sub(r"\x1b\[[0-9;]*m", "", done.stdout).split(">>>\n")[1:]


def assert_short_session(shown: list[str]) -> None:
    """The failures of SESSION as a student sees them: the message, the student's frame, no course frame."""
    wrong, crash, check = (shown[i].splitlines() for i in (3, 5, 6))
    assert wrong[0] == "ContractViolation: contract property 'double(3) is 6' failed" and len(wrong) == 6, wrong
    assert wrong[4] == "  usual cause: multiply by 2, do not add 2" and wrong[5].startswith("  to go on:"), wrong
    assert crash[0] == "Your code raised IndexError here (the course's frames are left out):" and len(crash) == 9, crash
    assert crash[1].endswith(", line 2, in double") and crash[2] == "    return [1][x]", crash
    assert not [line for line in crash if COURSE_FRAME.search(line) or "contract_call" in line], crash
    assert check == ["CheckFailed: check failed: one is two", "  expected: == 2", "  actual:   1"], check


def test_failures_render_short_in_current_ipython():
    assert_short_session(ipython_transcript(sys.executable))


@pytest.mark.colab
def test_failures_render_short_in_colabs_ipython_7_34(tmp_path):
    """Colab's IPython 7.34, in a virtual environment of its own (network to the package index)."""
    import venv

    venv.create(tmp_path / "venv", with_pip=True)
    python = str(tmp_path / "venv" / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "-q", "ipython==7.34.0"], check=True, timeout=600)
    assert_short_session(ipython_transcript(python))


def test_a_failure_in_a_plain_script_exits_non_zero_with_the_same_message(tmp_path):
    from builder import inline

    script = tmp_path / "notebook.py"
    script.write_text("\n\n".join([inline.source_of(name) for name in TOOLKIT] + SESSION[:3]), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    shown = ipython_transcript(sys.executable)[3].splitlines()
    assert done.returncode == 1 and done.stderr.splitlines()[-6:] == shown, done.stderr[-2000:]
