"""The notebook-runtime helpers: expect, check_exercise's fallback, show_reference and the honest summaries."""

import pytest

from builder.contracts.exercises import check_exercise, exercise_summary, exercises_on_reference, report_section, show_reference, use_reference
from builder.contracts.violations import CheckFailed, ContractViolation, expect, expect_close

REFERENCE = '''# Exercise 1: return twice the input.
def double(x):
    """Twice x."""
    return 2 * x
'''


def contract(f):
    """A toy contract: double(3) must be 6."""
    got = f(3)
    if got != 6:
        raise ContractViolation("double(3) is 6", "x=3", "6", repr(got), "multiply by 2, do not add 2")
    return {"checked": 1}


def wrong(x):
    return x + 2


def stub(x):
    raise NotImplementedError("Exercise 1: return twice the input.")


def crashes(x):
    raise KeyError("oops")


def namespace(implementation):
    return {"double": implementation, "REFERENCE_SOURCES": {"Exercise 1": REFERENCE}, "__builtins__": __builtins__}


def test_expect_shows_the_claim_and_both_values():
    expect("two plus two", 2 + 2, "==", 4)
    expect("a true thing", [1])
    with pytest.raises(CheckFailed) as caught:
        expect("the loss fell under the threshold", 0.7, "<", 0.5)
    assert str(caught.value).splitlines() == ["check failed: the loss fell under the threshold", "  expected: < 0.5", "  actual:   0.7"]
    with pytest.raises(CheckFailed, match="expected: a true value"):
        expect("finite", False)
    with pytest.raises(ValueError, match="relation must be one of"):
        expect("nonsense", 1, "~", 1)


def test_expect_close_names_the_claim_the_first_disagreeing_entry_and_the_tolerance():
    import numpy as np
    import torch

    assert expect_close("identical", torch.ones(2, 3, dtype=torch.float64), np.ones((2, 3))) == 0.0
    assert 4e-13 < expect_close("within atol", [1.0, 2.0], [1.0, 2.0 + 5e-13]) < 6e-13
    with pytest.raises(CheckFailed) as caught:
        expect_close("the library agrees with ours", torch.tensor([1.0, 2.0, 3.5]), [1.0, 2.0, 3.0], atol=1e-6, rtol=0)
    lines = str(caught.value).splitlines()
    assert lines[0] == "check failed: the library agrees with ours"
    assert "3.0 at index (2,)" in lines[1] and "atol=1e-06" in lines[1]
    assert "3.5" in lines[2] and "1 of 3 entries disagree" in lines[2]
    with pytest.raises(CheckFailed, match=r"shape \(2,\)"):
        expect_close("shapes", [1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(CheckFailed, match="not finite"):
        expect_close("a NaN never agrees", [float("nan")], [float("nan")])


def test_expect_is_not_an_assert_so_python_dash_o_keeps_it():
    import subprocess
    import sys

    code = "from builder.contracts.violations import expect\nexpect('one is two', 1, '==', 2)"
    assert subprocess.run([sys.executable, "-O", "-c", code], capture_output=True).returncode == 1


def test_a_wrong_answer_raises_its_violation_and_the_reference_takes_over(capsys):
    ns = namespace(wrong)
    with pytest.raises(ContractViolation) as caught:
        check_exercise("Exercise 1", contract, ns["double"], ns)
    message = str(caught.value)
    assert message.startswith("contract property 'double(3) is 6' failed") and "usual cause: multiply by 2" in message
    assert "Runtime → Run after" in message and "Run Selected Cell and All Below" in message and 'show_reference(\'Exercise 1\')' in message
    assert ns["double"](21) == 42 and ns["double"].__reference_solution__ == "Exercise 1"
    assert exercises_on_reference(ns) == ["Exercise 1"] and "failed 'double(3) is 6'" in ns["EXERCISE_OUTCOMES"]["Exercise 1"]
    assert "PASS" not in capsys.readouterr().out


def test_rerunning_the_check_on_the_reference_prints_no_pass(capsys):
    ns = namespace(wrong)
    with pytest.raises(ContractViolation):
        check_exercise("Exercise 1", contract, ns["double"], ns)
    check_exercise("Exercise 1", contract, ns["double"], ns)
    out = capsys.readouterr().out
    assert "PASS" not in out and "reference solution of double is in place, not yours" in out


def test_a_fixed_answer_passes_and_leaves_the_reference_list(capsys):
    ns = namespace(wrong)
    with pytest.raises(ContractViolation):
        check_exercise("Exercise 1", contract, ns["double"], ns)

    def double(x):
        return x * 2

    ns["double"] = double
    check_exercise("Exercise 1", contract, ns["double"], ns)
    assert "Exercise 1: PASS" in capsys.readouterr().out and exercises_on_reference(ns) == []


def test_an_untouched_stub_prints_one_line_and_the_reference_takes_over(capsys):
    ns = namespace(stub)
    assert check_exercise("Exercise 1", contract, ns["double"], ns) is None
    assert capsys.readouterr().out == "Exercise 1: not attempted yet; later cells use the reference solution\n"
    assert ns["double"](1) == 2 and ns["EXERCISE_OUTCOMES"] == {"Exercise 1": "not attempted"}


def test_an_unexpected_error_falls_back_and_shows_the_students_frame_only():
    cell = {}
    exec(compile('def crashes(x):\n    raise KeyError("oops")\n', "<the student's cell>", "exec"), cell)  # not this file: the contract's
    ns = namespace(cell["crashes"])
    with pytest.raises(ContractViolation, match="the contract check runs to the end") as caught:
        check_exercise("Exercise 1", contract, ns["double"], ns)
    assert isinstance(caught.value.__cause__, KeyError) and ns["double"](1) == 2
    shown = caught.value._render_traceback_()
    assert shown[0] == "Your code raised KeyError here (the course's frames are left out):"
    assert shown[1] == '  File "<the student\'s cell>", line 2, in crashes' and len(shown) == 2 + 6  # no source line: exec'd text is not in linecache
    assert not any("exercises.py" in line or "in contract" in line for line in shown), shown


def test_a_failure_renders_in_at_most_15_lines_with_every_field_on_one_line():
    ns = namespace(lambda x: [[x, x + 2]] * 40)
    with pytest.raises(ContractViolation) as caught:
        check_exercise("Exercise 1", contract, ns["double"], ns)
    shown = caught.value._render_traceback_()
    assert len(shown) <= 15 and shown[0] == "ContractViolation: contract property 'double(3) is 6' failed"
    assert [line.split(":")[0].strip() for line in shown[1:]] == ["on input", "expected", "actual", "usual cause", "to go on"]
    assert "show_reference('Exercise 1')" in shown[-1]


def test_check_failed_renders_as_its_message_alone():
    with pytest.raises(CheckFailed) as caught:
        expect("the loss fell under the threshold", 0.7, "<", 0.5)
    assert caught.value._render_traceback_() == [
        "CheckFailed: check failed: the loss fell under the threshold", "  expected: < 0.5", "  actual:   0.7"]


def test_without_a_reference_an_unfinished_exercise_waits_until_its_check_passes(capsys):
    ns = {"double": stub}
    check_exercise("Exercise 1", contract, stub, ns)
    assert capsys.readouterr().out == "Exercise 1: not attempted yet; the cells that need stub wait for it\n"
    assert ns["EXERCISES_WAITING"] == {"stub": "Exercise 1"}
    with pytest.raises(ContractViolation) as caught:
        check_exercise("Exercise 1", contract, wrong, ns)
    assert "the cells that need wrong wait until it passes" in caught.value._render_traceback_()[-1]
    assert ns["EXERCISES_WAITING"] == {"stub": "Exercise 1", "wrong": "Exercise 1"}

    def uses_stub(f):
        return contract(lambda x: stub(x))

    check_exercise("Exercise 2", uses_stub, wrong, ns)
    assert "Exercise 2: waits for Exercise 1, which wrong uses" in capsys.readouterr().out
    check_exercise("Exercise 1", contract, lambda x: 2 * x, ns)
    assert ns["EXERCISES_WAITING"] == {"wrong": "Exercise 2"} and ns["EXERCISE_OUTCOMES"]["Exercise 1"] == "passed"


def test_filed_reference_solutions_win_over_embedded_sources():
    def filed(x):
        return 2 * x

    ns = dict(namespace(wrong), REFERENCE_SOLUTIONS={"Exercise 1": {"double": filed}})
    assert use_reference("Exercise 1", ns, "a stub") and ns["double"] is filed


def test_show_reference_prints_the_solution_edition(capsys):
    show_reference("Exercise 1", namespace(wrong))
    assert capsys.readouterr().out == REFERENCE + "\n"
    with pytest.raises(ValueError, match="the labels are Exercise 1"):
        show_reference("Exercise 9", namespace(wrong))


def test_banners_and_summary_claim_a_pass_only_for_the_students_own_code(capsys):
    ns = namespace(wrong)
    report_section("Doubling", ns)
    assert capsys.readouterr().out == "Doubling: PASS\n"
    with pytest.raises(ContractViolation):
        check_exercise("Exercise 1", contract, ns["double"], ns)
    capsys.readouterr()
    report_section("Doubling", ns)
    exercise_summary(ns)
    out = capsys.readouterr().out
    assert "PASS" not in out and "standing in for Exercise 1" in out
    assert "Exercises failed: Exercise 1" in out and "Exercises not attempted: none" in out
    assert out.splitlines()[-1] == "First failing check: the check cell of Exercise 1 (wrong failed 'double(3) is 6'); fix that exercise first"


def test_in_the_graded_edition_an_exercise_that_needs_a_waiting_one_is_not_judged(capsys):
    def never(f):
        raise AssertionError("the contract must not run while the exercise it needs waits")

    ns = {"EXERCISE_NEEDS": lambda implementation, label: "Exercise 1" if label == "Exercise 2" else None}
    assert check_exercise("Exercise 2", never, wrong, ns) is None
    assert capsys.readouterr().out == "Exercise 2: waits for Exercise 1, which wrong uses; finish Exercise 1 first, then run this cell again\n"
    assert ns["EXERCISES_WAITING"] == {"wrong": "Exercise 2"} and ns["EXERCISE_OUTCOMES"] == {"Exercise 2": "waits for Exercise 1"}
