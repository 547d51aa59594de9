"""The property-based fuzz of tests/fuzz.py: its machinery (default tier) and its verdict on the notebooks (``-m fuzz``).

``python -m pytest -m fuzz -s`` prints each notebook's findings report; ``python -m tests.fuzz`` does the same
without pytest. The ``fuzz`` tests take minutes (every public function, thousands of calls), so the default tier
deselects them and ``.ci/run``'s full tier runs them.
"""

import textwrap

import pytest

from tests import fuzz

TINY = textwrap.dedent('''
    import numpy as np

    def guarded(n):
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"n must be an int, got {type(n).__name__}")
        if not 1 <= n <= 1000:
            raise ValueError(f"n must be in [1, 1000], got {n}")
        return np.ones(n)

    def square(n):
        return np.ones((n, n))

    def unstable_softmax(x):
        return np.exp(x) / np.exp(x).sum()

    def never_called(x):
        return x

    class Picker:
        def __init__(self, k):
            self.k = k

        def pick(self, items):
            return items[self.k]

    guarded(3); square(4); unstable_softmax(np.array([1.0, 2.0])); Picker(1).pick([1, 2])
''')


@pytest.fixture(scope="module")
def tiny_report(tmp_path_factory):
    """The fuzz report of a tiny notebook with one function per kind of finding."""
    path = tmp_path_factory.mktemp("fuzz") / "tiny.py"
    path.write_text(TINY)
    return fuzz.fuzz(fuzz.run_notebook(path), "tiny")


def test_functions_are_found_by_introspection(tiny_report):
    assert tiny_report.functions == 6  # guarded, square, unstable_softmax, never_called, Picker(), Picker.pick
    assert tiny_report.no_baseline == ["never_called"]
    assert tiny_report.fuzzed == 5 and tiny_report.calls > 40


def test_each_kind_of_finding_is_caught(tiny_report):
    kinds = {(f.kind, f.function) for f in tiny_report.findings}
    assert ("over budget", "square") in kinds, "a 2**17 square matrix is refused by the address-space guard, not allocated"
    assert ("nan from nan-free input", "unstable_softmax") in kinds
    assert ("crash", "unstable_softmax") in kinds, "a requires_grad tensor reaches .numpy()"
    assert ("crash", "Picker.pick") in kinds, "an empty list gives IndexError"
    assert ("silently accepted", "Picker") in kinds
    assert not [f for f in tiny_report.findings if f.function == "guarded"]


def test_the_report_counts_functions_calls_and_findings(tiny_report):
    text = tiny_report.text()
    assert text.startswith("tiny: 6 public functions and methods, 5 fuzzed, ")
    assert "  over budget: " in text and "square(#0=huge 2**17) -> MemoryError" in text
    assert "no baseline call" in text and "never_called" in text


@pytest.mark.fuzz
@pytest.mark.parametrize("module", sorted(fuzz.SOURCES))
def test_no_public_function_crashes_returns_nan_or_overallocates(module):
    report = fuzz.notebook_report(module)
    print(report.text())
    assert not report.no_baseline, report.text()
    assert not report.failures, report.text()
