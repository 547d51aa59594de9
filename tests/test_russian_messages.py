"""Every failure message a Russian student meets is Russian apart from code, identifiers and numbers.

Each catalogued bug (``tests/bug_catalog.py``: whatever it holds when the test runs) is run against
its contract under the committed Russian message table, as the Russian editions run it; every field
of the message it raises (the property, the input, expected and actual, the usual cause) is split
into words, and a Latin word counts as English unless it is an identifier of the course's code (a
name, attribute, argument or identifier-like string of ``builder/contracts`` or ``notebooks/*.py``), a
name (PyTorch, NumPy), or an acronym. A library's own error text, which the message quotes as
«сообщение библиотеки: «...»», is the library's and is left out.
"""

import ast
import copy
import functools
import re
import warnings

import pytest

from builder.contracts.violations import ContractViolation
from tests.bug_catalog import CATALOG
from tests.support import ROOT, contract_check

NAMES = {"pytorch", "numpy", "torch", "python", "colab", "jupyterlab", "jupyter", "autograd", "softmax", "argmax", "argmin",
         "float", "int", "bool", "nan", "inf", "sin", "cos", "exp", "sqrt", "max", "min", "tile", "repeat", "tensor",
         "true", "false", "none"}
_EXCEPTION = re.compile(r"\b[A-Z]\w*(?:Error|Exception|Warning)\b")
_FORMULA = re.compile(r"\w+(?:\s*[-+*/%<>=]+\s*\w+)+")  # normalised * weight + bias, key <= query
_QUOTED = re.compile(r"«[^«»]*»|`[^`]*`|'[^']*'|\"[^\"]*\"")
_WORD = re.compile(r"(?<![\w.])[A-Za-z]{2,}(?![\w(])")


@functools.cache
def identifiers() -> frozenset[str]:
    """Every name of the course's code: names, attributes, arguments, keywords, functions and identifier-like strings."""
    found = set()
    for path in [*sorted((ROOT / "builder" / "contracts").glob("*.py")), *sorted((ROOT / "notebooks").glob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for name in (getattr(node, "id", None), getattr(node, "attr", None), getattr(node, "arg", None),
                         getattr(node, "name", None) if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else None):
                if isinstance(name, str):
                    found.update(part for part in name.split("_") if part)
                    found.add(name)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                found.add(node.value)
    return frozenset(word.lower() for word in found)


def english_words(text: str) -> list[str]:
    """The Latin words of ``text`` that are prose: not code, identifiers, names, acronyms, nor a library's quoted text."""
    prose = _FORMULA.sub(" ", _EXCEPTION.sub(" ", _QUOTED.sub(" ", str(text))))
    prose = re.sub(r"\S*[_=()\[\]{}/\\<>^*]\S*|\S*\w\.\w\S*", " ", prose)  # calls, paths, arguments, formulas, dotted names
    return [w for w in _WORD.findall(prose) if not w.isupper() and w.lower() not in identifiers() and w.lower() not in NAMES]


@pytest.fixture(scope="module")
def russian_table():
    """The checks' table as a Russian edition runs it: the English MESSAGES updated with the Russian catalog's table."""
    from builder.contracts import messages
    from builder.translation import messages as catalog

    saved = copy.deepcopy(messages.MESSAGES)
    messages.MESSAGES.update(catalog.table(catalog.load("ru"), catalog.units()))
    yield messages
    messages.MESSAGES.clear()
    messages.MESSAGES.update(saved)


@pytest.fixture(scope="module")
def violations(russian_table) -> dict[str, ContractViolation]:
    """bug id -> the violation it raises under its contract, with the Russian table in place."""
    found = {}
    for bug in CATALOG:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(ContractViolation) as caught:
                contract_check(bug.contract)(bug.build())
        found[bug.id] = caught.value
    return found


def test_english_words_sees_prose_and_leaves_code():
    assert "agrees" in english_words("output agrees with F.layer_norm")
    assert english_words("умножьте на alpha = exp(m_old - m_new); eps=1e-5, ValueError") == []


def test_every_field_of_every_catalogued_bugs_message_is_russian(violations):
    english = {}
    for bug in CATALOG:
        violation = violations[bug.id]
        fields = {"property": violation.shown_property, **dict(violation._fields())}
        for name, value in fields.items():
            words = english_words(value)
            if words:
                english.setdefault(name, []).append(f"{bug.id}: {value} ({', '.join(words)})")
    shown = "\n".join(f"{name} ({len(lines)}):\n  " + "\n  ".join(lines[:8]) for name, lines in english.items())
    assert not english, f"fields with English prose, over {len(CATALOG)} bugs:\n{shown}"


def test_no_rendered_line_is_cut_and_lines_wrap_at_words(violations):
    from builder.contracts.messages import say, shown_label

    for bug in CATALOG:
        violation = violations[bug.id]
        violation.go_on = say("go on, reference", label=shown_label("Exercise 6"), name="layer_norm")  # the longest field a check adds
        lines = violation._render_traceback_()
        assert all(len(line) <= 420 for line in lines) and not [line for line in lines if line.endswith(" ...")], bug.id
        words = " ".join(" ".join(line.split()) for line in lines)
        assert "show_reference('Упражнение 6')" in words and words.endswith("вернётся ваш код, затем запустите эту ячейку."), lines[-3:]
