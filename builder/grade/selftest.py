"""Before a batch: the grading machine proves itself on the course's own solutions, so its faults are never a student's 0.

As root, the user that runs student code must be able to read the Python environment; then each
module's solution edition is graded in the same sandbox, as the same user, and must score full
marks. Any other outcome stops the batch with one line: what failed and how to fix it. During a
batch, an import of a module the judge can import but the student's process cannot is the
machine's fault too: that exercise is not graded, never scored 0.
"""

import importlib.util
import json
import os
import pwd
import re
import sys
import time
from pathlib import Path

_PASSED: set = set()  # (module, time limit, environment, course, limits) already proved in this process
TIMINGS: dict[str, tuple[float, float]] = {}  # module -> (seconds of its proof, seconds per exercise check): the batch's forecast
from ..diagnostics import BuilderError

_MISSING = re.compile(r"No module named '([\w.]+)'")


class EnvironmentProblem(BuilderError, RuntimeError):
    """The grading environment cannot grade fairly; the message is one line with the cause and the fix."""


def needed_paths() -> list[str]:
    """What a student process reads while it runs: the environment's packages and the builder package."""
    package = str(Path(__file__).resolve().parents[1])
    found = [sys.prefix, *(p for p in sys.path if p and "-packages" in p and os.path.isdir(p)), package]
    return list(dict.fromkeys(os.path.realpath(p) for p in found))


def unreadable(user: str, paths: list[str]) -> str | None:
    """The first of ``paths`` that ``user`` (a name or a uid) cannot list, checked in a forked child that becomes it; or None."""
    try:
        entry = pwd.getpwnam(user)
        uid, gid = entry.pw_uid, entry.pw_gid
    except KeyError:
        uid = gid = int(user)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        os.close(read_end)
        blocked = ""
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            for path in paths:
                try:
                    os.listdir(path)
                except OSError:
                    blocked = _first_closed(path)
                    break
        except OSError as exc:
            blocked = f"(could not become {user}: {exc})"
        os.write(write_end, blocked.encode("utf-8", "surrogateescape"))
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        answer = pipe.read().decode("utf-8", "surrogateescape")
    os.waitpid(pid, 0)
    return answer or None


def _first_closed(path: str) -> str:
    """The outermost folder on the way to ``path`` that the current user cannot enter (``path`` itself when all can)."""
    parts = Path(path).parts
    for i in range(1, len(parts) + 1):
        folder = os.path.join(*parts[:i])
        if not os.access(folder, os.R_OK | os.X_OK):
            return folder
    return path


def blocked_path(limits: dict) -> str | None:
    """As root: the first folder of the Python environment that the student user cannot read; None when it can, when
    not root, or when the user is not one account (the sandbox then picks a uid per process, and the self-test decides)."""
    user = str(limits.get("user") or "")
    if os.geteuid() != 0 or not user:
        return None
    try:
        pwd.getpwnam(user)
    except KeyError:
        if not user.isdigit():
            return None
    return unreadable(user, needed_paths())


def prove(course, modules: list[str], *, timeout: float, limits: dict, jobs: int) -> None:
    """Grade each module's solution edition as a batch would; EnvironmentProblem unless every one scores full marks."""
    from . import batch

    blocked = blocked_path(limits)
    unread = (f"user `{limits.get('user')}` cannot read {blocked}: install the environment where it can be read (for example a "
              "virtual environment under /opt, mode 755), or set GRADE_STUDENT_USER to a user who can read it") if blocked else ""
    todo = [m for m in modules if _key(course, m, limits, timeout) not in _PASSED]
    books = [course.select([m])[0] for m in todo]
    if not books:
        return
    start = time.monotonic()
    rows = batch.grade(course, [b.ipynb for b in books], timeout=timeout, jobs=jobs, selftest=False,
                       module=None, ids=[f"selftest/{b.name}" for b in books], show=lambda line: None)
    seconds = time.monotonic() - start
    for book, row in zip(books, rows):
        tests = row.result["tests"]
        short = [t for t in tests if t["score"] < t["max_score"]]
        if tests and not short:
            _PASSED.add(_key(course, book.name, limits, timeout))
            TIMINGS[book.name] = (seconds, float(row.result["execution_time"]) / len(tests))
            continue
        where = (f"{short[0]['name']}: {_first_line(short[0]['output'])}" if short else _first_line(row.result["output"]))
        score = sum(t["score"] for t in tests)
        most = sum(t["max_score"] for t in tests)
        raise EnvironmentProblem(f"the course's own solution of {book.name} scores {score:g}/{most:g} in this grading "
                                 f"environment ({where}); {unread or _fix(where, limits)}")
    names = ", ".join(b.name for b in books)
    print(f"grade: self-test: the course's own solution{'s' if len(books) > 1 else ''} of {names} score{'' if len(books) > 1 else 's'} "
          f"full marks in this sandbox ({seconds:.0f} s)", file=sys.stderr)
    if unread:
        print(f"grade: warning: {unread}. The solutions pass all the same; an exercise whose code needs a module the course "
              "did not load is marked not graded (grading environment), never 0.", file=sys.stderr)


def _fix(where: str, limits: dict) -> str:
    """How to fix what made the solution lose points."""
    if "No module named" in where or "ImportError" in where or "Permission" in where:
        return (f"the student user `{limits.get('user') or 'this user'}` cannot import a course dependency: install the "
                "environment where it can be read, or set GRADE_STUDENT_USER")
    if "TIMED OUT" in where:
        return "the machine is too slow or too loaded for --timeout: raise --timeout or lower --jobs"
    return "grade on a machine that runs the course's notebooks (python -m builder execute) without errors"


def _first_line(text: str) -> str:
    """The first line of a feedback, shortened."""
    line = (text.splitlines() or [""])[0]
    return line if len(line) <= 200 else line[:200] + " ..."


def _key(course, module: str, limits: dict, timeout: float) -> tuple:
    """What a proof holds for: the module, the student user and limits, the time limit, the Python environment, the course."""
    return module, timeout, sys.prefix, str(course.root), json.dumps(limits, sort_keys=True, default=str)


def missing_dependency(exc: BaseException | None) -> str | None:
    """The module an ImportError names when the judge can import it: the student process could not, the machine's fault."""
    if not isinstance(exc, ImportError):
        return None
    match = _MISSING.search(str(exc))
    name = match.group(1) if match else getattr(exc, "name", None)
    if not name:
        return None
    try:
        return name if importlib.util.find_spec(name) is not None else None
    except (ImportError, ValueError):
        return None
