"""``python -m builder grade``: submissions scored by the course's contracts, results.json, grades.csv, Gradescope.

Fast tests work on parts: reading submissions, points, the results format, the judge on a toy
course, the bundle's files. The slow tier forks and runs processes: six kinds of submission per
module graded through the command line, and the bundle's ``run_autograder`` in a simulated
``/autograder``.
"""

import csv
import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import nbformat
import pytest

from builder import cli
from builder.config import ConfigError
from builder.grade import batch, gradescope, judge, report, runner, submission
from tools import grade_variants as variants
from tests.support import NOTEBOOK_SOURCES, ROOT

SCHEMA = json.loads((Path(__file__).parent / "gradescope_results.schema.json").read_text(encoding="utf-8"))
TIMEOUT = 10  # seconds per exercise in the slow tests: far above any check, and the cost of the infinite loop


def validate(result: dict) -> None:
    """Fail unless ``result`` follows Gradescope's results.json format."""
    jsonschema.Draft202012Validator(SCHEMA).validate(result)


def write(nb, path: Path) -> Path:
    """Write a notebook and return its path."""
    nbformat.write(nb, path)
    return path


# ---- reading submissions ------------------------------------------------------------------------------------


def test_files_that_are_not_notebooks_get_a_reason(tmp_path, course):
    book = course.notebooks[0]
    text = book.student_ipynb.read_text(encoding="utf-8")
    files = {"words.ipynb": "hello", "truncated.ipynb": text[: len(text) // 2], "list.ipynb": "[1, 2]", "binary.ipynb": b"\xff\xfe\x00"}
    for name, content in files.items():
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        found = submission.read(path, course)
        assert found.module is None and found.error.startswith("not a readable notebook"), (name, found.error)


def test_the_module_is_recognised_from_the_notebook_header(course):
    for book in course.notebooks:
        for path in (book.ipynb, book.student_ipynb):
            found = submission.read(path, course)
            assert (found.module, found.error) == (book.name, None)


def test_a_notebook_of_another_module_is_refused_and_an_unknown_one_needs_module(tmp_path, course):
    first, second = course.notebooks[0], course.notebooks[1]
    refused = submission.read(second.student_ipynb, course, module=first.name)
    assert refused.module is None and f"belongs to {second.name}, not to {first.name}" in refused.error
    bare = write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("my homework")]), tmp_path / "bare.ipynb")
    assert "cannot tell which module" in submission.read(bare, course).error
    assert submission.read(bare, course, module=first.name).module == first.name


def test_exercise_cells_are_found_by_their_header_and_reference_cells_are_not(course):
    from builder import pairing, student

    for book in course.notebooks:
        shipped = variants.shipped(book)
        source = student.exercises(pairing.read_source(book.source.read_text(encoding="utf-8")))
        cells = submission.exercise_cells(shipped)
        assert list(cells) == [e.label for e in source]
        assert all("NotImplementedError" in code for code in cells.values())


# ---- points, results.json, grades.csv -----------------------------------------------------------------------


def pyproject(tmp_path: Path, points: str) -> Path:
    """A course config whose first notebook has the given ``points = ...`` line."""
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.course]\n[[tool.course.notebooks]]\nname = "m"\n{points}\n', encoding="utf-8")
    return tmp_path


def test_points_default_to_one_and_come_from_the_course_config(tmp_path):
    labels = ["Exercise 1", "Exercise 2", "Exercise 3"]
    assert report.points(pyproject(tmp_path, ""), "m", labels) == dict.fromkeys(labels, 1.0)
    assert report.points(pyproject(tmp_path, 'points = { "Exercise 2" = 2.5 }'), "m", labels)["Exercise 2"] == 2.5
    for bad, says in [('points = { "Exercise 9" = 1 }', "Exercise 9"), ('points = { "Exercise 1" = -1 }', ">= 0"),
                      ('points = { "Exercise 1" = true }', ">= 0"), ("points = 3", "must be a table")]:
        with pytest.raises(ConfigError, match=says):
            report.points(pyproject(tmp_path, bad), "m", labels)


class Ex:
    """A stand-in for builder.student.Exercise."""

    def __init__(self, n):
        self.label, self.names = f"Exercise {n}", (f"f{n}",)


def test_results_follow_gradescope_format_and_the_schema_can_fail():
    exercises = [Ex(1), Ex(2)]
    verdicts = {"Exercise 1": {"passed": True, "output": "PASS"}, "Exercise 2": {"passed": False, "output": "FAIL: ..."}}
    result = report.results("Module X", exercises, {"Exercise 1": 1.0, "Exercise 2": 2.0}, verdicts, 3.4)
    validate(result)
    validate(report.failed("not a readable notebook"))
    assert result["score"] == 1.0 and result["execution_time"] == 3
    assert [(t["name"], t["score"], t["max_score"], t["status"]) for t in result["tests"]] == [
        ("Exercise 1: f1", 1.0, 1.0, "passed"), ("Exercise 2: f2", 0.0, 2.0, "failed")]
    for broken in ({"name": "Part 1"}, {"visibility": "public"}, {"score": "1"}):
        bad = json.loads(report.dumps(result))
        bad["tests"][0].update(broken)
        with pytest.raises(jsonschema.ValidationError):
            validate(bad)


def test_grades_csv_has_a_column_per_exercise_the_total_and_error_rows():
    ok = report.results("M", [Ex(1), Ex(2)], {"Exercise 1": 1.0, "Exercise 2": 1.0},
                        {"Exercise 1": {"passed": True, "output": ""}, "Exercise 2": {"passed": False, "output": ""}}, 1)
    text = report.grades_csv([report.Row("s1/a.ipynb", "class/s1/a.ipynb", "m", ok), report.Row("bob", "b.ipynb", "", report.failed("not a readable notebook")),
                              report.Row("=cmd|' /C calc'!A0", "x", "", report.failed("-2+3"))])
    assert text.splitlines() == ["id,path,module,Exercise 1,Exercise 2,total,max,status,error", "s1/a.ipynb,class/s1/a.ipynb,m,1,0,1,2,graded,",
                                 "bob,b.ipynb,,,,,,not graded,not a readable notebook", "'=cmd|' /C calc'!A0,x,,,,,,not graded,'-2+3"]


def test_summary_counts_each_kind_of_verdict_and_the_most_common_failing_properties():
    def failing(prop):
        return {"passed": False, "output": f"FAIL: `f` breaks its contract.\ncontract property '{prop}' failed\n  usual cause: x"}

    outputs = [failing("scaled by sqrt(d_k)"), failing("scaled by sqrt(d_k)"), failing("rows sum to 1"),
               {"passed": True, "output": "PASS"}, {"passed": False, "output": "TIMED OUT after 1 s"},
               {"passed": False, "output": "NOT DONE: stub"}, {"passed": False, "output": "ERROR: f raised"}]
    rows = [report.Row(f"s{i}", f"s{i}.ipynb", "m", report.results("M", [Ex(1)], {"Exercise 1": 1.0}, {"Exercise 1": v}, 1))
            for i, v in enumerate(outputs)]
    lines = report.summary_csv(rows).splitlines()
    assert lines[0] == "exercise,passed,failed,error,timed out,not attempted,not graded,cause 1,cause 2,cause 3,failures per property"
    assert lines[1] == "Exercise 1,1,3,1,1,1,0,scaled by sqrt(d_k) (2),ERROR: f raised (1),rows sum to 1 (1),"
    page = report.summary_html(rows)
    assert "<svg" in page and "14% passed (1/7)" in page and "http" not in page.replace("http://www.w3.org/2000/svg", "")


# ---- the judge, on a toy course ------------------------------------------------------------------------------

TOY_COURSE = '''
class ContractViolation(AssertionError):
    pass

def check_exercise(label, contract, implementation, namespace):
    raise RuntimeError("the grader must replace check_exercise")

def double_contract(f):
    if f(2) != 4:
        raise ContractViolation("contract property 'doubles' failed: f(2) != 4")
'''
REFERENCE = "# Exercise 1: double x.\ndef double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION\n"
CHECK = 'check_exercise("Exercise 1", double_contract, double, globals())'


def toy(source, own=(), course=TOY_COURSE, names=("double",), check=CHECK):
    """The judge's verdict on ``source`` as the student's Exercise 1 cell of the toy course (the student side in a thread)."""
    import socket
    import threading

    from builder.grade import worker

    judged, student = {}, {}
    exec(course, judged)
    exec(course, student)
    ours, theirs = socket.socketpair()
    server = threading.Thread(target=worker.Server(theirs, student).serve, daemon=True)
    server.start()
    try:
        return judge.judge(judged, "Exercise 1", names, check, ours, source, list(own))
    finally:
        ours.close()
        server.join(5)
        theirs.close()


@pytest.mark.parametrize("source, passed, says", [
    ("# Exercise 1: double x.\ndef double(x):\n    return x + x\n", True, "PASS"),
    ("def double(x):\n    return x\n", False, "FAIL: `double` breaks its contract.\ncontract property 'doubles'"),
    ("def double(x):\n    raise NotImplementedError('Exercise 1: double x.')\n", False, "NOT DONE: `double` still raises"),
    ("def double(x):\n    return 2 *\n", False, "ERROR: your Exercise 1 cell does not compile: SyntaxError at line 2"),
    ("def double(x):\n    return x / 0\n", False, "ZeroDivisionError: division by zero\n  at line 2 of your Exercise 1 cell, in double"),
    ("def twice(x):\n    return 2 * x\n", False, "MISSING: your Exercise 1 cell does not define `double`"),
    (None, False, "MISSING: the submission has no Exercise 1 cell"),
    ("def double(x):\n    return x\n\ndef double_contract(f):\n    return None\n", False, "shares a name with the course's"),
    ("def double(x):\n    return x\n\ndouble_contract = print\nwhile True:\n    pass\n", False, "FAIL"),  # loops do not run
    ("def double(x):\n    return 2 * helper(x) // 2\n\ndef helper(x):\n    return 2 * x\n", True, "PASS"),  # new helpers are kept
    ("import operator as op\nfrom math import *\n\ndef double(x):\n    return op.mul(2, x)\n", True, "PASS"),  # and new imports
    ("from operator import mul as double_contract\n\ndef double(x):\n    return x\n", False, "FAIL"),  # the judge keeps its own
    ("%%time\n# exercise 1 - mine\n%matplotlib inline\nTWO = 2\ndef double(x):\n    return TWO * x\n", True, "PASS"),
    ("class F(float):\n    def __eq__(self, other):\n        return True\ndef double(x):\n    return F(x)\n", False,
     "only plain torch.Tensor"),
    ("def double(x):\n    raise ValueError('\\udc80')\n", False, "ValueError: \udc80"),
])
def test_the_judge_scores_only_the_students_definitions(source, passed, says):
    result = toy(source)
    assert result["passed"] is passed and says in result["output"], result["output"]


MODULE_COURSE = '''
import torch

class ContractViolation(AssertionError):
    pass

def check_exercise(label, contract, implementation, namespace):
    raise RuntimeError("the grader must replace check_exercise")

class Sizes:
    FIELDS = ("d_in", "d_out")

    def __init__(self, d_in=2, d_out=3):
        if d_in < 1 or d_out < 1:
            raise ValueError("sizes must be >= 1")
        self.d_in, self.d_out = d_in, d_out

class Recorder:
    def __init__(self):
        self.seen = []
        self.secret = lambda x: 2 * x  # a function the check holds: never handed out

    def append(self, x):
        if x.shape[0] == 0:
            raise ContractViolation("contract property 'no empty append' failed")
        self.seen.append(x.shape[0])
        return x.sum()

    @property
    def count(self):
        return len(self.seen)

    def _answer(self):
        return 42

def fail(prop):
    raise ContractViolation(f"contract property {prop!r} failed")

def net_contract(Net):
    torch.manual_seed(0)
    net = Net(Sizes(2, 3))
    if not isinstance(net.proj, torch.nn.Linear) or net.proj.weight.shape != (3, 2):
        fail("a Linear 2 -> 3")
    if type(net.sizes).__name__ != "Sizes" or net.sizes.d_out != 3:
        fail("keeps its sizes")
    x, recorder = torch.randn(4, 2), Recorder()
    out = net(x, recorder)
    if not torch.allclose(out, net.proj(x) * net.gain):
        fail("output")
    if recorder.seen != [4]:
        fail("one append of 4 rows")
    out.sum().backward()
    if net.gain.grad is None or net.proj.weight.grad is None:
        fail("the parameters receive gradients")
'''
NET = """import torch

class Net(torch.nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.sizes = sizes
        self.proj = torch.nn.Linear(sizes.d_in, sizes.d_out)
        self.gain = torch.nn.Parameter(torch.full((sizes.d_out,), 2.0))

    def forward(self, x, recorder):
        FIRST
        return self.proj(x) * self.gain
"""


RAW = 'server, ref = (object.__getattribute__(recorder, n) for n in ("_server", "_ref")); server.'  # past JudgeRef's guards


@pytest.mark.parametrize("first, passed, says", [
    ("recorder.append(x)", True, "PASS"),
    ("assert recorder.count == 0; recorder.append(x)", True, "PASS"),  # a property is read in the judge
    ("recorder.append(x); recorder.append(x)", False, "one append of 4 rows"),  # what it records is what the code did
    ("x = x.detach()", False, "one append of 4 rows"),
    ("recorder.secret(x)", False, "an object's functions are not handed out"),
    ("recorder._answer()", False, "AttributeError"),
    ("recorder.seen.append(4)", False, "one append of 4 rows"),  # its list crosses as a copy
    (RAW + 'ask({"op": "attr", "ref": ref, "name": "_answer"})', False, "only public names are read"),  # a hand-made request
    (RAW + 'invoke(ref, "secret", x)', False, "which is not a method of its class"),
    (RAW + 'ask({"op": "attr", "ref": ref + 1, "name": "seen"})', False, "an object the check never gave"),
    ("try:\n            recorder.append(x[:0])\n        except Exception:\n            pass\n        recorder.append(x)", False,
     "no empty append"),  # a fault the check's object found stands, even when the student's code swallowed it
])
def test_a_module_exercise_is_judged_across_the_channel(first, passed, says):
    """The student's module reaches the judge as a mirror: torch.nn's own parts as themselves, a course value class by its
    fields, gradients to its parameters; the check's own objects stay in the judge and record what the student's code did."""
    check = 'check_exercise("Exercise 1", net_contract, Net, globals())'
    result = toy(NET.replace("FIRST", first), course=MODULE_COURSE, names=("Net",), check=check)
    assert result["passed"] is passed and says in result["output"], result["output"]


def test_helpers_and_constants_in_the_students_own_cells_are_taken_and_may_shadow_course_names():
    own = ["SCALE = 2\n\ndef ContractViolation(x):\n    return SCALE * x\n", "print('scratch')\nx = undefined_name + 1\n"]
    result = toy("def double(x):\n    return ContractViolation(x)\n", own)
    assert result["passed"], result["output"]
    assert "`ContractViolation` shares a name with the course's" in result["output"]


def test_feedback_has_no_memory_addresses():
    result = toy("def double(x):\n    return object()\n")
    assert " at 0x" not in judge.verdict(False, f"{object()!r}")["output"] and not result["passed"]


# ---- the bundle's files --------------------------------------------------------------------------------------


def test_the_bundle_holds_the_course_and_two_executable_scripts_and_is_reproducible(tmp_path, course):
    first = gradescope.bundle(course, tmp_path / "a.zip")
    second = gradescope.bundle(course, tmp_path / "b.zip", module="module5_1")
    with zipfile.ZipFile(first) as archive:
        names = archive.namelist()
        modes = {i.filename: stat.S_IMODE(i.external_attr >> 16) for i in archive.infolist()}
        run = archive.read("run_autograder").decode()
    assert {"setup.sh", "run_autograder", "pyproject.toml", "builder/grade/runner.py", "references/module3.json"} <= set(names)
    assert {f"notebooks/{b.name}.py" for b in course.notebooks} <= set(names)
    assert not [n for n in names if "__pycache__" in n]
    assert {f"notebooks/ru/student/{b.name}.ipynb" for b in course.notebooks} <= set(names)  # cell ids of every edition
    assert modes["setup.sh"] == modes["run_autograder"] == 0o755
    assert "grade --gradescope-root" in run and "--module" not in run
    assert "--timeout 60 --budget 540 --visibility visible" in run
    tuned = gradescope.bundle(course, tmp_path / "t.zip", timeout=20, budget=300, visibility="after_due_date")
    assert "--timeout 20 --budget 300 --visibility after_due_date" in zipfile.ZipFile(tuned).read("run_autograder").decode()
    setup = zipfile.ZipFile(first).read("setup.sh").decode()
    assert setup.index("apt-get update") < setup.index("apt-get install") and "needs Python 3.11 or newer" in setup
    assert "--module module5_1_exact_attention" in zipfile.ZipFile(second).read("run_autograder").decode()
    assert first.read_bytes() == gradescope.bundle(course, tmp_path / "c.zip").read_bytes()
    for script in ("setup.sh", "run_autograder"):
        (tmp_path / script).write_bytes(zipfile.ZipFile(first).read(script))
        subprocess.run(["bash", "-n", str(tmp_path / script)], check=True)
    assert "download.pytorch.org/whl/cpu" in zipfile.ZipFile(first).read("setup.sh").decode()


@pytest.mark.parametrize("argv, code", [
    (["grade"], 2), (["grade", "x.ipynb"], 2), (["grade", "--gradescope-bundle", "b.zip", "x.ipynb"], 2),
    (["grade", "x.ipynb", "--out", "o", "--timeout", "0"], 2), (["grade", "x.ipynb", "--out", "o", "--module", "module9"], 2),
    (["grade", "x.ipynb", "--out", "o", "--timeout", "nan"], 2), (["grade", "x.ipynb", "--out", "o", "--timeout", "inf"], 2),
    (["grade", "x.ipynb", "--out", "o", "--jobs", "0"], 2),
])
def test_usage_errors_write_nothing(tmp_path, argv, code, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["--root", str(ROOT), *argv]) == code
    assert list(tmp_path.iterdir()) == []


def test_a_grading_environment_that_fails_its_selftest_is_reported_in_results_json(tmp_path, monkeypatch, course):
    """run_in_container catches the selftest module's EnvironmentProblem, not an attribute of its selftest command."""
    from builder.grade import selftest

    (tmp_path / "submission").mkdir()
    write(nbformat.v4.new_notebook(), tmp_path / "submission" / "mine.ipynb")
    monkeypatch.setattr(batch, "grade", lambda *a, **kw: (_ for _ in ()).throw(selftest.EnvironmentProblem("no torch")))
    result = gradescope.run_in_container(course, tmp_path, timeout=1, module=None)
    assert "grading environment: no torch" in result["output"] and result["tests"] == []
    assert json.loads((tmp_path / "results" / "results.json").read_text(encoding="utf-8")) == result


def test_an_out_that_is_a_file_and_invalid_points_are_refused_before_grading(tmp_path, monkeypatch, course):
    (tmp_path / "o").write_text("not a folder")
    assert cli.main(["--root", str(ROOT), "grade", str(course.notebooks[0].ipynb), "--out", str(tmp_path / "o")]) == 2
    assert (tmp_path / "o").read_text() == "not a folder"
    monkeypatch.setattr(report, "points", lambda *a: (_ for _ in ()).throw(ConfigError("points of m 'Exercise 1' must be a number >= 0")))
    monkeypatch.setattr(batch, "_judge", lambda *a: pytest.fail("graded before the config was read"))
    with pytest.raises(ConfigError):
        batch.grade(course, [course.notebooks[0].ipynb])


# ---- slow: processes ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_an_isolated_check_runs_in_an_empty_folder_and_is_killed_at_its_time_limit():
    seen = runner.isolated(lambda: {"passed": True, "output": json.dumps([os.getcwd(), os.listdir(".")])}, 30, "Exercise 1")
    folder, listing = json.loads(seen["output"])
    assert listing == [] and folder != os.getcwd() and not os.path.exists(folder)

    def forever():
        while True:
            pass

    assert runner.isolated(forever, 1, "Exercise 1")["output"].startswith("TIMED OUT after 1 s")
    assert "SystemExit" in runner.isolated(lambda: sys.exit(3), 30, "Exercise 1")["output"]
    assert "ended (exit code 7)" in runner.isolated(lambda: os._exit(7), 30, "Exercise 1")["output"]


KINDS = ("solution", "shipped", "wrong", "loop", "wrong_check_pass", "tampered", "not_a_notebook")


@pytest.fixture(scope="session")
def graded_kinds(tmp_path_factory, course):
    """Grade each module's seven kinds of submission once, in one batch per module, through the CLI."""
    done = {}

    def grade(book):
        if book.name not in done:
            folder = tmp_path_factory.mktemp(book.reference)
            solved = variants.solved(book)
            labels = variants.graded(book)
            middle = labels[len(labels) // 2]  # later exercises run on its reference
            tampered = variants.broken(solved, middle)
            for cell in tampered.cells:  # every check cell, helper, setup cell and embedded reference: gone
                if cell.cell_type == "code" and not cell.source.startswith("# Exercise"):
                    cell.source = "pass"
            paths = [
                folder / "solution.ipynb", write(variants.shipped(book), folder / "shipped.ipynb"),
                write(variants.broken(solved, middle), folder / "wrong.ipynb"),
                write(variants.broken(solved, middle, variants.LOOP), folder / "loop.ipynb"),
                write(variants.broken(solved, middle, check="pass"), folder / "wrong_check_pass.ipynb"),
                write(tampered, folder / "tampered.ipynb"), folder / "not_a_notebook.ipynb",
            ]
            paths[0].write_bytes(book.ipynb.read_bytes())
            paths[-1].write_text("this is my essay, not a notebook\n", encoding="utf-8")
            out = folder / "out"
            code = cli.main(["--root", str(ROOT), "grade", *map(str, paths), "--out", str(out), "--timeout", str(TIMEOUT)])
            results = {k: json.loads((out / k / "results.json").read_text(encoding="utf-8")) for k in KINDS}
            done[book.name] = {"code": code, "results": results, "middle": middle, "labels": labels, "out": out,
                               "paths": dict(zip(KINDS, paths))}
        return done[book.name]

    return grade


@pytest.fixture(params=list(NOTEBOOK_SOURCES))
def kinds(request, graded_kinds, course):
    return graded_kinds(course.select([request.param])[0])


def scores(result):
    return {t["name"].split(":")[0]: t["score"] for t in result["tests"]}


@pytest.mark.slow
def test_six_kinds_of_submission_score_as_stated(kinds):
    results, middle, labels = kinds["results"], kinds["middle"], kinds["labels"]
    full = dict.fromkeys(labels, 1.0)
    assert scores(results["solution"]) == full
    assert scores(results["shipped"]) == dict.fromkeys(labels, 0.0)
    assert all(t["output"].startswith("NOT DONE") for t in results["shipped"]["tests"])
    for kind in ("wrong", "loop", "wrong_check_pass", "tampered"):
        assert scores(results[kind]) == dict(full, **{middle: 0.0}), kind
    assert [t["output"] for t in results["wrong"]["tests"] if t["score"] == 0][0].startswith("FAIL")
    assert "contract property" in results["wrong"]["tests"][labels.index(middle)]["output"]
    assert results["loop"]["tests"][labels.index(middle)]["output"].startswith(f"TIMED OUT after {TIMEOUT} s")
    assert results["not_a_notebook"]["tests"] == [] and "not a readable notebook" in results["not_a_notebook"]["output"]
    assert kinds["code"] == 1  # one submission could not be graded; all the others were


@pytest.mark.slow
def test_every_results_json_validates_and_grades_csv_has_a_row_each(kinds):
    for result in kinds["results"].values():
        validate(result)
    with open(kinds["out"] / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["id", "path", "module", *kinds["labels"], "total", "max", "status", "error"]
    by_name = {row[0].removesuffix(".ipynb"): row for row in rows[1:]}
    assert list(by_name) == list(KINDS)
    assert [row[1] for row in rows[1:]] == [str(kinds["paths"][k]) for k in KINDS]
    assert by_name["not_a_notebook"][-1].startswith("not a readable notebook (NotJSONError: Notebook does not appear to be JSON")
    assert by_name["not_a_notebook"][2:-2] == [""] * (len(kinds["labels"]) + 3) and by_name["not_a_notebook"][-2] == "not graded"
    n = len(kinds["labels"])
    assert by_name["wrong"][-4:] == [f"{n - 1}", f"{n}", "graded", ""]


@pytest.mark.slow
def test_run_autograder_grades_a_submission_where_gradescope_places_it(tmp_path, course, graded_kinds):
    book = course.select(["module5_1"])[0]
    kinds = graded_kinds(book)
    root = tmp_path / "autograder"
    with zipfile.ZipFile(gradescope.bundle(course, tmp_path / "autograder.zip", module=book.name)) as archive:
        archive.extractall(root / "source")
    (root / "submission").mkdir()
    (root / "submission" / "homework 5.ipynb").write_bytes(kinds["paths"]["wrong"].read_bytes())
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable, PYTHONPATH="")
    subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, check=True, timeout=600, capture_output=True)
    result = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    validate(result)
    expected = dict(kinds["results"]["wrong"])
    assert dict(result, execution_time=0) == dict(expected, execution_time=0)  # deterministic: same bytes but the time

    (root / "submission" / "second.ipynb").write_bytes(kinds["paths"]["solution"].read_bytes())
    subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, check=True, timeout=600, capture_output=True)
    again = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert again["tests"] == [] and "submit exactly one .ipynb notebook; found 2" in again["output"]


@pytest.mark.slow
def test_the_gradescope_selftest_passes_on_a_bundle_built_here(tmp_path, course, capsys):
    bundle = gradescope.bundle(course, tmp_path / "autograder.zip", module="module3", timeout=TIMEOUT)
    assert cli.main(["--root", str(ROOT), "grade", "--gradescope-selftest", str(bundle)]) == 0
    shown = capsys.readouterr().out
    count = len(variants.graded(course.select(["module3"])[0]))
    assert f"selftest module3_basic_transformer solution: {count} points, {count} exercises: ok" in shown
    assert f"selftest module3_basic_transformer stub: 0 points, {count} exercises: ok" in shown


def test_setup_sh_fails_clearly_without_python_3_11(tmp_path, course):
    with zipfile.ZipFile(gradescope.bundle(course, tmp_path / "a.zip")) as archive:
        (tmp_path / "setup.sh").write_bytes(archive.read("setup.sh"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("apt-get", 'echo "apt-get $*" >> "$LOG"'), ("python3", "exit 1")):  # an old python3, an apt that installs nothing
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin".replace(":/usr/bin:/bin", ""), "LOG": str(tmp_path / "apt.log")}
    done = subprocess.run(["/bin/bash", str(tmp_path / "setup.sh")], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "needs Python 3.11 or newer" in done.stderr
    assert (tmp_path / "apt.log").read_text().splitlines()[0] == "apt-get update"


@pytest.mark.slow
def test_the_capstone_module_exercises_are_graded_and_their_catalogued_bugs_score_0(tmp_path, course):
    """Exercises 10-13 hand the grader modules, a CapstoneConfig and the check's recording caches: a solved submission
    scores them, and the first catalogued bug of each (all four in one submission) costs exactly that exercise."""
    from tests.bug_catalog import CATALOG
    from tests.test_wrong_answers import inside_solutions

    book = course.select(["module3_basic_transformer"])[0]
    labels = variants.graded(book)
    capstone = {"Exercise 10": "RMSNorm", "Exercise 11": "SwiGLU", "Exercise 12": "CapstoneAttention", "Exercise 13": "CapstoneLM"}
    assert set(capstone) <= set(labels), labels
    wrong = variants.solved(book)
    for label, target in capstone.items():
        cell = wrong.cells[variants._exercise_index(wrong, label)]
        bugs = [bug for bug in CATALOG if (bug.module, bug.target) == ("module3", target) and bug.source_edits]
        made = [inside_solutions(cell.source, bug.source_edits) for bug in bugs]
        cell.source = next(m for m in made if m not in (None, cell.source))  # the first bug whose edits fit the solution
    paths = [write(variants.solved(book), tmp_path / "solved.ipynb"), write(wrong, tmp_path / "wrong.ipynb")]
    out = tmp_path / "out"
    cli.main(["--root", str(ROOT), "grade", *map(str, paths), "--out", str(out), "--timeout", str(TIMEOUT)])
    results = {p.stem: json.loads((out / p.stem / "results.json").read_text(encoding="utf-8")) for p in paths}
    assert scores(results["solved"]) == dict.fromkeys(labels, 1.0)
    assert scores(results["wrong"]) == {label: 0.0 if label in capstone else 1.0 for label in labels}
    assert all("contract property" in t["output"] for t in results["wrong"]["tests"] if t["score"] == 0)
