"""Mutation testing of the contract checks: every bug in the catalog is caught, by name, with a full message.

A bug counts as caught only when its contract raises ContractViolation whose ``property`` names the
broken property, and whose message gives the input, the expected and the actual values, and a hint.
The unmutated notebook function must pass the same contract, so each bug fails because of its
mutation and not because the contract always fails.
"""

import re
import warnings

import numpy as np
import pytest
import torch

from builder.contracts.violations import ContractViolation
from tests.bug_catalog import CATALOG, SPELLINGS
from tests.support import NOTEBOOK_SOURCES, contract_check, notebook

MESSAGE_PARTS = ("on input:", "expected:", "actual:", "usual cause:")


@pytest.mark.parametrize("bug", CATALOG, ids=[bug.id for bug in CATALOG])
def test_the_bug_is_caught_by_its_contract_naming_the_property(bug):
    implementation = bug.build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # several bugs divide 0 by 0 on purpose
        with pytest.raises(ContractViolation) as caught:
            contract_check(bug.contract)(implementation)
    violation, message = caught.value, str(caught.value)
    assert bug.property in violation.property, f"{bug.id}: expected the property to name {bug.property!r}\n{message}"
    assert bug.hint in violation.hint, f"{bug.id}: expected the usual cause to mention {bug.hint!r}\n{message}"
    assert f"'{violation.property}'" in message.splitlines()[0], message
    for part in MESSAGE_PARTS:
        assert part in message, f"{bug.id}: the message lacks {part!r}\n{message}"


def exercise_contracts(module):
    """(function, contract) of every exercise in a notebook, read from its check_exercise cells."""
    source = NOTEBOOK_SOURCES[module].read_text(encoding="utf-8")
    return set(re.findall(r'^check_exercise\("Exercise \d+", (\w+), (\w+), globals\(\)\)$', source, flags=re.MULTILINE))


def test_the_catalog_is_large_unique_and_covers_every_exercise():
    ids = [bug.id for bug in CATALOG]
    assert len(CATALOG) >= 30
    assert len(set(ids)) == len(ids), sorted({i for i in ids if ids.count(i) > 1})
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", i) for i in ids), "ids are lowercase-with-dashes"
    assert {bug.module for bug in CATALOG} == set(NOTEBOOK_SOURCES)
    for module in NOTEBOOK_SOURCES:
        exercises = exercise_contracts(module)
        assert len(exercises) >= 4
        covered = {(bug.contract, bug.target) for bug in CATALOG if bug.module == module}
        assert exercises <= covered, f"Module {module}: exercises without a catalogued bug: {sorted(exercises - covered)}"


ISSUE_EXAMPLES = (
    "attention-scale-dk", "attention-no-scale", "causal-mask-off-by-one", "query-offset-ignored", "gqa-tile-not-repeat",
    "online-softmax-no-alpha", "sink-in-numerator", "window-off-by-one", "layernorm-unbiased-variance", "pe-sin-cos-swapped",
    "top-p-drops-crossing-token", "temperature-after-softmax", "nan-on-fully-masked-row", "softmax-wrong-axis",
    "heads-merged-wrong-transpose", "latent-absorption-forgets-rope", "rolling-buffer-keeps-w-plus-1",
)


def test_every_mistake_named_in_the_issue_is_catalogued():
    assert set(ISSUE_EXAMPLES) <= {bug.id for bug in CATALOG}


TARGETS = sorted({(bug.module, bug.target, bug.contract) for bug in CATALOG})


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize(("module", "target", "contract"), TARGETS, ids=[f"{m}-{t}" for m, t, _ in TARGETS])
def test_the_unmutated_function_passes_the_same_contract(module, target, contract):
    summary = contract_check(contract)(notebook(module)[target])
    assert isinstance(summary, dict) and summary


CONTRACTS = sorted({bug.contract for bug in CATALOG})
GARBAGE = {
    "None": None, "zero": 0, "nan": float("nan"), "string": "abc", "empty dict": {}, "list": [0.0], "array": np.zeros(3),
    "tensor": torch.zeros(3), "pair of None": (None, None), "triple of None": (None, None, None), "pair of arrays": (np.zeros(3), np.zeros(3)),
    "triple of arrays": (np.zeros(3),) * 3, "pair of strings": ("a", "b"), "pair of empty lists": ([], []),
}


@pytest.mark.parametrize("contract", CONTRACTS)
def test_a_contract_fails_by_name_whatever_a_wrong_implementation_returns(contract):
    """A contract never crashes on what it judges: any result of the wrong form is a ContractViolation with a full message."""

    def raising(*args, **kwargs):
        raise RuntimeError("boom")

    for label, value in [*GARBAGE.items(), ("raises RuntimeError", None)]:
        implementation = raising if label == "raises RuntimeError" else (lambda *args, value=value, **kwargs: value)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            with pytest.raises(ContractViolation) as caught:
                contract_check(contract)(implementation)
        assert all(part in str(caught.value) for part in MESSAGE_PARTS), f"{label}: {caught.value}"


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("spelling", SPELLINGS, ids=[s.id for s in SPELLINGS])
def test_a_correct_solution_written_another_way_passes(spelling):
    summary = contract_check(spelling.contract)(spelling.build())
    assert isinstance(summary, dict) and summary
