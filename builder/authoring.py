"""``new-exercise``: every step of adding an exercise, in the order the README's checklist gives them.

It writes the exercise cell and its check cell into the source after a heading, a contract stub
registered in the ``__all__`` of the contracts module the notebook's exercises already use, a
bug-catalog stub, and then builds and merges the catalogs. The stubs fail loudly (the contract
raises, the bug entry names a fragment the solution lacks) until they are written, so the default
test tier names the step that is still missing.
"""

import re
from pathlib import Path

from . import exits, files, inline
from .config import Course, Notebook
from .diagnostics import BuilderError

STUB_MARK = "written by `python -m builder new-exercise`"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LABEL = re.compile(r"^# Exercise (\d+):", re.MULTILINE)
_CHECK = re.compile(r'^check_exercise\("Exercise \d+", (\w+), \w+, globals\(\)\)$', re.MULTILINE)


class AuthoringError(BuilderError, ValueError):
    """A new exercise that cannot be added as asked; nothing was written."""

    exit_code = exits.USAGE


def exercise_cells(number: int, function: str, contract: str) -> str:
    """The exercise cell and its check cell, in percent format, with an empty inline region build fills."""
    return (
        f'# %% tags=["exercise"]\n'
        f"# Exercise {number}: Write {function}. TODO: what it takes, what it returns, and the one idea it practises.\n"
        f"def {function}(x):\n"
        f'    """TODO: one line on what {function} computes."""\n'
        f"    ### BEGIN SOLUTION\n"
        f"    return x\n"
        f"    ### END SOLUTION\n\n\n"
        f"# %%\n"
        f"# builder:begin inline {contract}\n"
        f"# builder:end\n"
        f'check_exercise("Exercise {number}", {contract}, {function}, globals())\n\n'
    )


def contract_stub(function: str, contract: str) -> str:
    """A contract check that fails by name until it is written."""
    return (
        f"\n\ndef {contract}({function}):\n"
        f'    """Judge ``{function}``: TODO, the properties a correct {function} has."""\n'
        f'    raise NotImplementedError("{contract} is a stub {STUB_MARK}: write the properties {function} must have")\n'
    )


def bug_stub(nb: Notebook, function: str, contract: str) -> str:
    """A bug-catalog entry whose edit names a fragment the solution lacks, so its test says what to write."""
    module = int(re.sub(r"\D", "", nb.reference) or 0)
    return (
        f"\n\n# A stub {STUB_MARK.replace('`', '')}: replace the edit with a realistic mistake in {function}.\n"
        f'CATALOG += (Bug("{function.replace("_", "-")}-todo", {module}, "{function}", "TODO: the mistake a student makes",\n'
        f'                "{contract}", "TODO: the property its violation names",\n'
        f'                edits=(("TODO: a fragment of the solution", "the same fragment with the mistake"),)),)\n'
    )


def insertion_point(text: str, heading: str, shown: str) -> int:
    """The offset just after the markdown cell whose heading reads ``heading`` (before the next cell)."""
    found = [m for m in re.finditer(r"^# #{1,6} +(.*\S)\s*$", text, re.MULTILINE) if m.group(1).strip() == heading.strip()]
    if len(found) != 1:
        near = sorted({m.group(1) for m in re.finditer(r"^# #{1,6} +(.*\S)\s*$", text, re.MULTILINE) if heading.lower() in m.group(1).lower()})
        raise AuthoringError(f"{shown}: {'no' if not found else 'more than one'} heading reads {heading!r}"
                             + (f"; did you mean one of: {', '.join(map(repr, near))}" if near else ""))
    following = text.find("\n# %%", found[0].end())
    return len(text) if following < 0 else following + 1


def contracts_module(course: Course, text: str) -> Path:
    """The contracts module the notebook's exercises already use (its first check_exercise's contract)."""
    first = _CHECK.search(text)
    if not first:
        raise AuthoringError("the notebook has no check_exercise cell yet, so pick the contracts module with --contracts")
    module = inline.registry(course.root)[first.group(1)][1]
    return course.root / "builder" / "contracts" / f"{module.rsplit('.', 1)[-1]}.py"


def registered(module_text: str, name: str, shown: str) -> str:
    """``module_text`` with ``name`` added to its ``__all__`` list or tuple."""
    found = re.search(r"^__all__\s*=\s*[\[(]", module_text, re.MULTILINE)
    if not found:
        raise AuthoringError(f"{shown} has no __all__ to register {name} in")
    return module_text[:found.end()] + f'\n    "{name}",' + module_text[found.end():]


def new_exercise(course: Course, nb: Notebook, function: str, heading: str, contracts: str | None) -> dict[Path, str]:
    """Every file the new exercise changes, with its new text; AuthoringError (nothing written) when it cannot be added."""
    if not _NAME.match(function):
        raise AuthoringError(f"--function must be a Python name, got {function!r}")
    contract = f"check_{function}_contract"
    text = files.read_text(nb.source, course.shown(nb.source))
    known = inline.registry(course.root)
    if re.search(rf"^def {function}\(", text, re.MULTILINE) or contract in known:
        raise AuthoringError(f"{function} or {contract} exists already; choose another name")
    number = max((int(n) for n in _LABEL.findall(text)), default=0) + 1
    at = insertion_point(text, heading, course.shown(nb.source))
    module = course.root / "builder" / "contracts" / f"{contracts}.py" if contracts else contracts_module(course, text)
    module_text = files.read_text(module, course.shown(module))
    catalog = course.root / "tests" / "bug_catalog.py"
    changes = {
        nb.source: text[:at] + exercise_cells(number, function, contract) + text[at:],
        module: registered(module_text, contract, course.shown(module)).rstrip("\n") + contract_stub(function, contract),
    }
    if catalog.exists():
        changes[catalog] = catalog.read_text(encoding="utf-8").rstrip("\n") + bug_stub(nb, function, contract)
    return changes


def stubs_left(course: Course) -> list[str]:
    """``file(line): ...`` for each new-exercise stub still unwritten in builder/contracts and tests/bug_catalog.py."""
    found = []
    for path in sorted((course.root / "builder" / "contracts").glob("*.py")) + [course.root / "tests" / "bug_catalog.py"]:
        if path.exists():
            for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
                if STUB_MARK in line or STUB_MARK.replace("`", "") in line:
                    found.append(f"{course.shown(path)}({number}): {line.strip()[:100]}")
    return found
