"""Grading a real class: the machine proves itself first, every edition and LMS layout is read, feedback speaks the
submission's language, and a contract judged as a table of properties gives partial credit.

Fast tests work on parts (folders and ids, the tables, the property harness, the catalog's lines, the warm-up);
the slow tier grades through the command line: an LMS folder with feedback pages, a Russian wrong answer, a solved
graded edition, and a self-test that refuses to grade.
"""

import csv
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
import torch

from builder import cli, release
from builder.contracts import norms, positions
from builder.contracts.violations import ContractViolation

contract_properties = ContractViolation.run_properties
from builder.grade import batch, feedback, judge, progress, report, selftest, submission, worker
from tools import grade_variants as variants
from tests.bug_catalog import QUERY_POSITION
from tests.support import ROOT

TIMEOUT = 10  # seconds per exercise in the slow tests


def ignores_offset(t_q, t_k, *, query_offset=0):
    """A causal mask right for plain attention that forgets query_offset."""
    return torch.arange(t_k)[None, :] <= torch.arange(t_q)[:, None]


def right(t_q, t_k, *, query_offset=0):
    """The causal mask."""
    return torch.arange(t_k)[None, :] <= query_offset + torch.arange(t_q)[:, None]


# ---- a contract as a table of named properties -------------------------------------------------------------------


def test_every_property_runs_the_first_failure_is_raised_and_says_how_many_hold():
    ran = []

    def holds(x):
        ran.append("a")

    def fails(x):
        ran.append("b")
        raise ContractViolation("b is right", f"f({x})", "1", "2", "fix b")

    def crashes(x):
        ran.append("c")
        raise ZeroDivisionError("inside the contract")

    with pytest.raises(ContractViolation) as caught:
        contract_properties((("a holds", holds), ("b is right", fails, 2.0), ("c runs", crashes)), 7)
    assert ran == ["a", "b", "c"]
    assert caught.value.property == "b is right" and caught.value.outcomes == [("a holds", True, 1.0), ("b is right", False, 2.0),
                                                                               ("c runs", False, 1.0)]
    lines = str(caught.value).splitlines()
    assert lines[0] == "contract property 'b is right' failed" and lines[-1].split(":", 1)[1].strip() == "1 of the 3 properties of this exercise hold"
    assert any("1 of the 3 properties" in line for line in caught.value._render_traceback_())
    assert contract_properties((("a holds", holds),), 1) == {"properties": [("a holds", True, 1.0)]}


def test_a_stub_stops_the_table_at_once():
    def stub(x):
        raise NotImplementedError("Exercise 2: write it")

    ran = []
    with pytest.raises(NotImplementedError):
        contract_properties((("first", stub), ("second", lambda x: ran.append(x))), 1)
    assert ran == []


def test_the_causal_mask_contract_names_the_first_failing_property_and_counts_the_rest():
    assert [h for _, h, _ in positions.check_causal_mask_contract(right)["properties"]] == [True, True, True]
    with pytest.raises(ContractViolation) as caught:
        positions.check_causal_mask_contract(ignores_offset)
    assert "absolute positions" in caught.value.property and "query_offset was ignored" in caught.value.hint
    assert [h for _, h, _ in caught.value.outcomes] == [True, False, False]
    assert "1 of the 3 properties of this exercise hold" in str(caught.value)


def _raises(*args, **kwargs):
    raise ValueError("no")


TRIVIAL = {  # answers that take no idea of the exercise: no property of its table may hold for one
    positions.check_causal_mask_contract: (lambda t_q, t_k, *, query_offset=0: None, _raises,
                                           lambda t_q, t_k, *, query_offset=0: torch.ones(t_q, t_k, dtype=torch.bool),
                                           lambda t_q, t_k, *, query_offset=0: torch.zeros(t_q, t_k, dtype=torch.bool)),
    positions.check_positional_encoding_contract: (lambda length, d_model, *, base=10000.0: None, _raises,
                                                   lambda length, d_model, *, base=10000.0: torch.zeros(length, d_model),
                                                   lambda length, d_model, *, base=10000.0: torch.ones(length, d_model)),
    norms.check_layer_norm_contract: (lambda x, weight=None, bias=None, eps=1e-5: None, _raises,
                                      lambda x, weight=None, bias=None, eps=1e-5: torch.zeros_like(x),
                                      lambda x, weight=None, bias=None, eps=1e-5: x),
}


@pytest.mark.parametrize(("contract", "trivial"), [(c, t) for c, answers in TRIVIAL.items() for t in answers],
                         ids=[f"{c.__name__}-{i}" for c, answers in TRIVIAL.items() for i in range(len(answers))])
def test_no_property_of_a_table_holds_for_a_trivial_answer(contract, trivial):
    with pytest.raises(ContractViolation) as caught:
        contract(trivial)
    assert not any(h for _, h, _ in caught.value.outcomes)


# ---- scores, tables and pages -------------------------------------------------------------------------------------


class Ex:
    """A stand-in for builder.student.Exercise."""

    def __init__(self, n):
        self.label, self.names = f"Exercise {n}", (f"f{n}",)


def partly(held):
    """A failed verdict of a three-property table, the first ``held`` properties holding."""
    props = [[name, i < held, 1.0] for i, name in enumerate(("sees the past", "keeps positions", "decodes in steps"))]
    return {"passed": False, "output": "FAIL: ...", "kind": "failed", "properties": props}


def test_partial_credit_scores_the_properties_that_hold_and_false_is_all_or_nothing():
    verdicts = {"Exercise 1": partly(1), "Exercise 2": {"passed": False, "output": "NOT DONE: stub", "kind": "not attempted"}}
    worth = {"Exercise 1": 3.0, "Exercise 2": 1.0}
    partial = report.results("M", [Ex(1), Ex(2)], worth, verdicts, 1, partial=True)
    assert [t["score"] for t in partial["tests"]] == [1.0, 0.0] and partial["score"] == 1.0
    assert 0 < partial["tests"][0]["score"] < partial["tests"][0]["max_score"]
    assert partial["tests"][0]["extra_data"]["properties"][1] == {"name": "keeps positions", "holds": False, "weight": 1.0}
    assert report.results("M", [Ex(1), Ex(2)], worth, verdicts, 1, partial=False)["score"] == 0.0
    weighted = dict(partly(1), properties=[["a", True, 3.0], ["b", False, 1.0]])
    assert report.credit(weighted, 2.0, True) == 1.5
    assert report.credit(dict(partly(0)), 2.0, True) == 0.0
    assert report.credit({"passed": False, "output": "ERROR: x", "kind": "error", "properties": partly(2)["properties"]}, 2.0, True) == 0.0


def test_the_course_ships_partial_credit_and_the_setting_is_checked(tmp_path):
    assert report.limits(ROOT, 60)["partial_credit"] is True
    (tmp_path / "pyproject.toml").write_text('[tool.course]\nnotebooks = []\n[tool.course.grade]\npartial_credit = "yes"\n')
    with pytest.raises(Exception, match="partial_credit must be true or false"):
        report.limits(tmp_path, 60)


def rows():
    """Four submissions: two partly right, one passed, one not a notebook."""
    made = []
    for i, verdict in enumerate([partly(1), partly(2), {"passed": True, "output": "PASS", "kind": "passed"}]):
        made.append(report.Row(f"s{i}/hw.ipynb", f"class/s{i}/hw.ipynb", "m", report.results("M", [Ex(1)], {"Exercise 1": 1.0},
                                                                                           {"Exercise 1": verdict}, 1, partial=True)))
    return made + [report.Row("s9/hw.ipynb", "class/s9/hw.ipynb", "", report.failed("not a readable notebook (NotJSONError)"))]


def test_summary_counts_failures_per_property_and_lists_what_was_not_graded():
    table = report.summary(rows())
    assert table[0]["property failures"] == {"sees the past": 0, "keeps positions": 1, "decodes in steps": 2}
    assert report.summary_csv(rows()).splitlines()[1].endswith("sees the past (0); keeps positions (1); decodes in steps (2)")
    page = report.summary_html(rows(), [("class/s5/hw.pdf", "not a .ipynb notebook")])
    for text in ("class/s9/hw.ipynb", "not a readable notebook (NotJSONError)", "class/s5/hw.pdf", "not a .ipynb notebook",
                 "Distribution of total scores", "median", "Failures per property", "decodes in steps"):
        assert text in page, text
    assert report.distribution(rows())[0]["bins"][-1] == {"name": "1", "count": 1}


def test_a_feedback_page_is_self_contained_and_in_the_submissions_language():
    row = rows()[0]
    page = report.feedback_html(row, "en")
    assert "Score: 0.333333 of 1 points" in page and "s0/hw.ipynb" in page and "FAIL: ..." in page
    assert not re.search(r"<script|<link|src=|href=|@import", page)
    russian = report.feedback_html(row, "ru")
    assert '<html lang="ru">' in russian and "Оценка:" in russian and "Упражнение 1: f1" in russian


# ---- folders, ids, the terminal ------------------------------------------------------------------------------------


def test_a_folder_grades_every_notebook_under_it_and_ids_tell_same_named_files_apart(tmp_path):
    name = "module3_basic_transformer.ipynb"
    for student in ("s001", "s002"):
        (tmp_path / "class" / student).mkdir(parents=True)
        (tmp_path / "class" / student / name).write_text("{}")
    (tmp_path / "class" / "s002" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "class" / "s002" / ".ipynb_checkpoints" / name).write_text("{}")
    (tmp_path / "class" / "s003").mkdir()
    (tmp_path / "class" / "s003" / "essay.pdf").write_text("pdf")
    found = batch.collect([tmp_path / "class"])
    assert found.ids == [f"s001/{name}", f"s002/{name}"] and len(found.paths) == 2
    assert found.skipped == [(str(tmp_path / "class" / "s003" / "essay.pdf"), "not a .ipynb notebook")]
    assert batch.collect([tmp_path / "class"], "parent").ids == ["s001", "s002"]
    stems = batch.collect([tmp_path / "class"], "stem").ids
    assert len(set(stems)) == 2 and all(re.fullmatch("module3_basic_transformer-[0-9a-f]{8}", s) for s in stems)
    twice = batch.unique(["alice.ipynb", "alice.ipynb"], [Path("x/alice.ipynb"), Path("y/alice.ipynb")])
    assert all(re.fullmatch(r"alice-[0-9a-f]{8}\.ipynb", i) for i in twice) and len(set(twice)) == 2
    assert batch.collect([tmp_path / "class"], "path").ids == [str(p) for p in found.paths]
    subs = [submission.Submission(p, p.stem) for p in found.paths]
    batch.stems(subs, found.ids)
    assert [s.stem for s in subs] == ["s001_module3_basic_transformer", "s002_module3_basic_transformer"]


def test_the_terminal_line_names_the_path():
    sub = submission.Submission(Path("class/s001/hw.ipynb"), "s001_hw", module="m")
    line = batch.summary(batch.Graded(sub, rows()[2].result, "s001/hw.ipynb"))
    assert line == "graded class/s001/hw.ipynb (m): 1/1"


def test_the_estimate_trusts_the_self_tests_forecast_first_and_the_rate_later():
    assert progress.estimate(5.0, 1, 100, expected=100.0) == pytest.approx(0.99 * 95 + 0.01 * 495)
    assert progress.estimate(5.0, 0, 100, expected=100.0) == 95.0
    assert progress.estimate(90.0, 99, 100, expected=100.0) == pytest.approx(0.01 * 10 + 0.99 * 90 / 99)
    assert progress.estimate(5.0, 1, 100, expected=None) == 495.0


# ---- the grading machine proves itself ----------------------------------------------------------------------------


def test_an_import_the_judge_can_make_is_the_machines_fault_and_a_made_up_one_the_students():
    assert selftest.missing_dependency(ModuleNotFoundError("No module named 'torch.fx.experimental.symbolic_shapes'")) == \
        "torch.fx.experimental.symbolic_shapes"
    assert selftest.missing_dependency(ModuleNotFoundError("No module named 'no_such_module_for_sure'")) is None
    assert selftest.missing_dependency(ValueError("No module named 'torch'")) is None
    verdict = judge.failure(ModuleNotFoundError("No module named 'numpy'"), "Exercise 1", "`f`", None)
    assert verdict["kind"] == "not graded" and verdict["output"].startswith("NOT GRADED (grading environment)")
    assert report.kind(verdict) == "not graded" and report.credit(verdict, 1.0, True) == 0.0


def test_a_students_import_of_a_module_the_judge_has_is_not_graded_and_a_made_up_one_is_an_error(monkeypatch):
    from builder.grade import remote

    def channel(module):
        class Fake:
            def __init__(self, sock, namespace):
                pass

            def define(self, label, names, own, source):
                return {"failed": f"ERROR: defining your {label} code raised ModuleNotFoundError: No module named '{module}'\n"
                                  f"  at line 1 of your {label} cell, in <module>", "notes": []}
        return Fake

    monkeypatch.setattr(remote, "Channel", channel("numpy"))
    assert judge.judge({}, "Exercise 1", ("f",), "", None, "import numpy\ndef f():\n    pass", [])["kind"] == "not graded"
    monkeypatch.setattr(remote, "Channel", channel("no_such_module_for_sure"))
    made_up = judge.judge({}, "Exercise 1", ("f",), "", None, "import no_such_module_for_sure\ndef f():\n    pass", [], "ru")
    # the judge's own first line, in the submission's language; what the student's process said is quoted under it
    assert made_up["kind"] == "error" and made_up["output"].startswith("ОШИБКА: определить ваш код «Упражнение 1» не удалось")
    assert "    | ERROR: defining your Exercise 1 code raised ModuleNotFoundError" in made_up["output"]


def test_after_the_warm_up_the_gradient_paths_need_no_new_import():
    program = textwrap.dedent("""
        import sys
        from builder.grade import sandbox
        sandbox.warm_up()
        class Blocked:
            def find_spec(self, name, path=None, target=None):
                raise ModuleNotFoundError(f"No module named {name!r} (files unreadable after the drop to nobody)")
        sys.meta_path.insert(0, Blocked())
        import torch
        x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
        y = torch.nn.functional.layer_norm(torch.softmax(x, -1), (4,))
        torch.autograd.grad([y], [x], [torch.randn_like(y)], retain_graph=True)
        y.backward(torch.ones_like(y))
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become another user")
def test_a_folder_the_student_user_cannot_read_is_named():
    import shutil
    import tempfile

    top = Path(tempfile.mkdtemp(dir="/tmp"))  # pytest's own tmp_path lies under a folder only root can enter
    try:
        top.chmod(0o755)
        closed = top / "venv"
        (closed / "lib").mkdir(parents=True)
        closed.chmod(0o700)
        assert selftest.unreadable("nobody", [str(top), str(closed / "lib")]) == str(closed)
        closed.chmod(0o755)
        assert selftest.unreadable("nobody", [str(closed / "lib")]) is None
    finally:
        shutil.rmtree(top)


# ---- every line in the submission's language ----------------------------------------------------------------------


def test_the_lines_written_in_english_outside_the_judge_are_read_back_from_their_templates():
    course = {"MESSAGES": {}}
    missing = worker.define(course, "Exercise 2", ["f"], [], None)[1]
    syntax = worker.define(course, "Exercise 2", ["f"], [], "def f(:\n")[1]
    undefined = worker.define(course, "Exercise 2", ["f", "g"], [], "def f():\n    pass\n")[1]
    defining = worker.define(course, "Exercise 2", ["f"], [], "@undefined_decorator\ndef f():\n    pass\n")[1]
    skipped = worker.define(course, "Exercise 2", ["f"], ["X = 1 / 0\n"], "def f():\n    pass\n")[2][0]
    shadows = worker.define(course, "Exercise 2", ["f"], ["def MESSAGES():\n    pass\n"], "def f():\n    pass\n")[2][0]
    for key, line in (("grade missing cell", missing), ("grade syntax", syntax), ("grade missing names", undefined),
                      ("grade defining", defining.split("\n")[0]), ("grade note skipped", skipped), ("grade note shadows", shadows)):
        assert feedback.read_back(key, line) is not None, (key, line)
        assert feedback.localize(line, "ru") != line and feedback.localize(line, "en") == line, (key, line)
    assert re.search(r"строка 1 в вашей ячейке «Упражнение 2», функция <module>", feedback.localize(defining, "ru")), feedback.localize(defining, "ru")
    timed = "TIMED OUT after 10 s: the check of Exercise 2 did not finish (an infinite loop, or code far too slow)."
    assert feedback.localize(timed, "ru").startswith("ПРЕВЫШЕНО ВРЕМЯ (10 с): проверка «Упражнение 2»")
    from builder.grade import runner
    killed = runner.KILLED_PARENT.format(label="Exercise 2")
    assert feedback.read_back("grade killed parent", killed) == {"label": "Exercise 2"}


def test_every_grader_line_has_a_russian_translation_with_the_same_fields():
    english = feedback.english()
    keys = [k for k in english if k.startswith("grade ") or k in ("properties", "properties hold")]
    table = feedback.table("ru")
    assert keys and all(table.get(k) and table[k] != english[k] for k in keys), [k for k in keys if not table.get(k)]


# ---- every edition read cleanly -----------------------------------------------------------------------------------


def test_the_graded_edition_is_stamped_and_its_course_cells_are_known(course):
    book = course.select(["module3"])[0]
    written = release.releases(course, book)
    for relative, text in written.items():
        nb = nbformat.reads(text, as_version=4)
        language = "ru" if relative.parts[0] == "ru" else "en"
        assert nb.metadata.course == {"module": book.name, "edition": "graded", "language": language}
        assert submission.language_of(nb, course) == language
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.pop("id", None)  # an LMS that drops cell ids: the sources alone tell course cells
        solved = nb
        cells = submission.exercise_cells(solved, variants.labels(variants.solved(book)), course.root)
        assert submission.own_cells(solved, cells, course.root) == [], relative


# ---- through the command line -------------------------------------------------------------------------------------


def _exercise_cells(nb) -> list:
    """The exercise cells of an edition in order (Exercise 1 first), in any language."""
    return [c for c in nb.cells if c.cell_type == "code" and "exercise" in c.metadata.get("tags", [])]


def _with_exercise(nb, label: str, old: str, new: str):
    """A copy of ``nb`` whose exercise ``label`` cell has ``old`` replaced by ``new``."""
    import copy

    nb = copy.deepcopy(nb)
    cell = _exercise_cells(nb)[int(label.split()[-1]) - 1]
    assert old in cell.source
    cell.source = cell.source.replace(old, new, 1)
    return nb


def _solved_from(edition_path: Path, solution_path: Path):
    """An edition (student or graded, any language) with every exercise cell replaced by the solution edition's."""
    nb = nbformat.read(edition_path, as_version=4)
    answers = _exercise_cells(nbformat.read(solution_path, as_version=4))
    cells = _exercise_cells(nb)
    assert len(cells) == len(answers)
    for cell, answer in zip(cells, answers):
        cell.source = answer.source
    return nb


@pytest.mark.slow
def test_an_lms_folder_is_graded_with_ids_paths_partial_credit_and_feedback_pages(tmp_path, course):
    book = course.select(["module3"])[0]
    solved = variants.solved(book)
    name = f"{book.name}.ipynb"
    (tmp_path / "CLASS" / "s001").mkdir(parents=True)
    (tmp_path / "CLASS" / "s002").mkdir()
    nbformat.write(solved, tmp_path / "CLASS" / "s001" / name)
    nbformat.write(_with_exercise(solved, "Exercise 2", QUERY_POSITION, "torch.arange(t_q)[:, None]"), tmp_path / "CLASS" / "s002" / name)
    out, pages = tmp_path / "out", tmp_path / "pages"
    done = subprocess.run([sys.executable, "-m", "builder", "grade", str(tmp_path / "CLASS"), "--out", str(out), "--feedback", str(pages),
                           "--timeout", str(TIMEOUT), "--jobs", "1"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    n = len(variants.graded(book))
    assert f"graded {tmp_path / 'CLASS' / 's001' / name} ({book.name}): {n}/{n}" in done.stdout
    table = list(csv.DictReader((out / "grades.csv").read_text(encoding="utf-8").splitlines()))
    assert [(r["id"], r["path"]) for r in table] == [(f"s001/{name}", str(tmp_path / "CLASS" / "s001" / name)),
                                                     (f"s002/{name}", str(tmp_path / "CLASS" / "s002" / name))]
    assert table[0]["total"] == str(n) and 0 < float(table[1]["Exercise 2"]) < 1, table
    result = json.loads((out / f"s002_{book.name}" / "results.json").read_text(encoding="utf-8"))
    second = result["tests"][1]
    assert [p["holds"] for p in second["extra_data"]["properties"]] == [True, False, False]
    assert "fails: cached queries keep their absolute positions (query_offset)" in second["output"]
    assert "1 of the 3 properties of this exercise hold" in second["output"]
    summary = (out / "summary.csv").read_text(encoding="utf-8")
    assert "cached queries keep their absolute positions (query_offset) (1)" in summary
    assert sorted(p.name for p in pages.iterdir()) == [f"s001_{book.name}.html", f"s002_{book.name}.html"]
    page = (pages / f"s002_{book.name}.html").read_text(encoding="utf-8")
    assert f"Score: {n - 2 / 3:g} of {n} points" in page and "query_offset was ignored" in page
    assert "self-test" in done.stderr


LATIN_WORD = re.compile(r"[A-Za-z]{3,}")


def english_words(text: str) -> list[str]:
    """Latin words of a feedback outside code: backticks, identifiers, calls and lists left out."""
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\b\w*(?:_|\d)\w*\b|\b\w+(?=\()|\[[^\]]*\]|\([^()]*=[^()]*\)", " ", text)
    return [w for w in LATIN_WORD.findall(text) if w not in {"NotImplementedError", "SyntaxError", "torch", "bool", "dtype",
                                                            "True", "False", "None", "float", "int", "Tensor", "query", "key"}]


@pytest.mark.slow
def test_a_russian_wrong_answer_gets_russian_feedback(tmp_path, course):
    book = course.select(["module3"])[0]
    ru = ROOT / "notebooks" / "ru" / "student" / f"{book.name}.ipynb"
    if not ru.exists():
        ru = next((ROOT / "notebooks" / "ru").rglob(f"{book.name}.ipynb"))
    solved = _solved_from(ru, ROOT / "notebooks" / "ru" / f"{book.name}.ipynb")
    wrong = _with_exercise(solved, "Exercise 2", QUERY_POSITION, "torch.arange(t_q)[:, None]")
    stub = _with_exercise(solved, "Exercise 3", "### BEGIN SOLUTION", "raise NotImplementedError('Exercise 3: x')\n    ### BEGIN SOLUTION")
    paths = [tmp_path / "wrong.ipynb", tmp_path / "stub.ipynb"]
    nbformat.write(wrong, paths[0])
    nbformat.write(stub, paths[1])
    out = tmp_path / "out"
    assert cli.main(["--root", str(ROOT), "grade", *map(str, paths), "--out", str(out), "--timeout", str(TIMEOUT)]) == 0
    failed = json.loads((out / "wrong" / "results.json").read_text(encoding="utf-8"))["tests"][1]["output"]
    assert failed.startswith("НЕ ПРОЙДЕНО") and "query_offset" in failed, failed
    assert english_words(failed) == [], failed
    not_done = json.loads((out / "stub" / "results.json").read_text(encoding="utf-8"))["tests"][2]["output"]
    assert not_done.startswith("НЕ СДЕЛАНО") and english_words(not_done.split(":")[0]) == [], not_done


@pytest.mark.slow
def test_a_solved_graded_edition_scores_full_marks_without_a_note(tmp_path, course):
    assert cli.main(["--root", str(ROOT), "release", "module3", "--out", str(tmp_path / "graded")]) == 0
    book = course.select(["module3"])[0]
    paths = []
    for relative, solution in ((Path(f"{book.name}.ipynb"), book.ipynb), (Path("ru") / f"{book.name}.ipynb",
                                                                           ROOT / "notebooks" / "ru" / f"{book.name}.ipynb")):
        nb = _solved_from(tmp_path / "graded" / relative, solution)
        paths.append(tmp_path / f"{relative.parts[0]}-solved.ipynb")
        nbformat.write(nb, paths[-1])
    out = tmp_path / "out"
    assert cli.main(["--root", str(ROOT), "grade", *map(str, paths), "--out", str(out), "--timeout", str(TIMEOUT)]) == 0
    for folder in ("module3_basic_transformer.ipynb-solved", "ru-solved"):
        result = json.loads((out / folder / "results.json").read_text(encoding="utf-8"))
        assert result["score"] == sum(t["max_score"] for t in result["tests"]) == len(variants.graded(book)), folder
        assert not any("shares a name" in t["output"] or "называются так же" in t["output"] for t in result["tests"]), folder
    assert json.loads((out / "ru-solved" / "results.json").read_text(encoding="utf-8"))["tests"][0]["output"].startswith("ПРОЙДЕНО")


@pytest.mark.slow
def test_a_grading_machine_that_fails_the_courses_own_solution_refuses_and_writes_nothing(tmp_path, course, capsys):
    book = course.select(["module3"])[0]
    out = tmp_path / "out"
    code = cli.main(["--root", str(ROOT), "grade", str(book.student_ipynb), "--out", str(out), "--timeout", "0.001"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and not out.exists()
    n = len(variants.graded(book))
    assert err[-1].startswith(f"grade: nothing graded, nothing written: the course's own solution of module3_basic_transformer scores 0/{n}")
    assert "raise --timeout" in err[-1]


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("GRADE_TEST_CLOSED_PYTHON"), reason="set GRADE_TEST_CLOSED_PYTHON to a Python in a 0700 "
                    "virtual environment under /root (with this course installed) to grade as the issue's instructor did")
def test_the_solution_editions_score_full_marks_as_root_with_an_environment_nobody_can_read(tmp_path, course):
    python = os.environ["GRADE_TEST_CLOSED_PYTHON"]
    paths = [b.ipynb for b in course.notebooks]
    done = subprocess.run([python, "-m", "builder", "grade", *map(str, paths), "--out", str(tmp_path / "out"), "--timeout", "60"],
                          cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "self-test: the course's own solutions" in done.stderr  # the machine proved itself first, then graded
    for line in done.stdout.splitlines()[:-1]:
        score, most = line.rsplit(": ", 1)[1].split("/")
        assert score == most, line
