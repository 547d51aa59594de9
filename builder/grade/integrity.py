"""The grader checks its own code: the SHA-256 of the builder package, taken once per batch, verified before each judge.

A submission that reached the grader's files (it cannot when sealed; see ``sandbox``) would change
what later judges import. ``batch`` takes the digest before any student code runs and hands it to
each judge process, which starts from an isolated ``sys.path`` (``python -I``: no working folder,
no ``PYTHONPATH``, no user site) and verifies the digest before every exercise it judges.
"""

import hashlib
import os
import sys
from pathlib import Path

from ..diagnostics import BuilderError

PACKAGE = Path(__file__).resolve().parents[1]  # builder/
EXPECTED: dict = {"digest": None}


class GraderChanged(BuilderError, RuntimeError):
    """The grader's own files changed while it was grading: nothing more is judged."""


def digest(package: Path = PACKAGE) -> str:
    """SHA-256 over every .py file of the package, by relative path and bytes."""
    sha = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        sha.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return sha.hexdigest()


def expect(value: str | None) -> None:
    """The digest the batch took before any student code ran."""
    EXPECTED["digest"] = value


def verify() -> None:
    """GraderChanged when the package's files are no longer those the batch started with."""
    if EXPECTED["digest"] is not None and digest() != EXPECTED["digest"]:
        raise GraderChanged(f"the grader's own code under {PACKAGE} changed while grading (a submission wrote to it?); "
                            "nothing more was judged: restore the checkout (git status) and grade again")


def isolated_command(module: str, *args: str) -> list[str]:
    """``python -I`` running ``module.entry(*args)`` from this package's parent folder alone, never from a working folder."""
    code = f"import sys; sys.path.insert(0, {os.fspath(PACKAGE.parent)!r}); from {module} import entry; entry()"
    return [sys.executable, "-I", "-X", "utf8", "-c", code, *args]  # -I ignores PYTHONUTF8: any locale, all the same
