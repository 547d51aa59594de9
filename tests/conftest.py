"""Shared fixtures: the course configuration, throwaway copies of the repository, and each notebook run once.

A kernel run of a course notebook costs 10-40 s, so every test that needs an edition executed as committed
reads it from ``executions`` (one run per edition per session, started on first request), and every test
that needs ``python notebooks/<name>.py`` reads it from ``script_runs``. Set ``COURSE_RUN_LOG`` to a file
path to have each real run of either kind appended there as one line (how the count per tier is measured).
"""

import contextlib
import dataclasses
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from builder.config import load_course
from tests.support import ROOT, copy_repo


@pytest.fixture(scope="session")
def course():
    """The course configuration of this checkout."""
    return load_course(ROOT)


@pytest.fixture
def repo_copy(tmp_path):
    """A copy of the working tree, without git metadata, to break on purpose."""
    return copy_repo(tmp_path / "repo")


def log_run(what: str) -> None:
    """Append one line to ``$COURSE_RUN_LOG`` when it is set: a notebook executed for real."""
    if os.environ.get("COURSE_RUN_LOG"):
        with open(os.environ["COURSE_RUN_LOG"], "a", encoding="utf-8") as log:
            log.write(what + "\n")


class Executions:
    """Each edition executed as committed, at most once per session, laid out as ``python -m builder html --out`` reads it."""

    def __init__(self, course, folder: Path):
        self.course, self.folder, self._done = course, folder, {}
        self.editions = {nb.edition: nb for nb in course.select_editions(None)}

    def __getitem__(self, edition: str):
        """The RunResult of ``edition`` (run with ``coalesce_streams``, so a second run compares equal)."""
        if edition not in self._done:
            from builder import commands, execute

            nb = self.editions[edition]
            self._done[edition] = execute.run(nb.ipynb, commands.edition_dir(self.folder, nb), coalesce_streams=True)
        return self._done[edition]

    def all(self) -> dict:
        """Every edition's RunResult, running those not run yet."""
        return {edition: self[edition] for edition in self.editions}

    def replaying(self, names: list[str]):
        """Run the editions of ``names`` now, and return ``replay``: a stand-in for ``execute.run`` that serves them."""
        for nb in self.course.select_editions(names):
            self[nb.edition]
        return self.replay

    def replay(self, ipynb: Path, out_dir: Path | None = None, *, timeout: int = 600, kernel_name: str = "python3",
               allow_errors: bool = False, coalesce_streams: bool = False):
        """A stand-in for ``builder.execute.run`` that serves a committed edition's run from this session, copying its executed file."""
        edition = next((e for e, nb in self.editions.items() if nb.ipynb == ipynb), None)
        if edition not in self._done or kernel_name != "python3" or allow_errors:
            raise ValueError(f"replay serves the editions `replaying` ran (python3, no allow_errors), not {ipynb} on {kernel_name}")
        result = dataclasses.replace(self[edition], cells=list(self[edition].cells))
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
            result.executed = Path(shutil.copyfile(self[edition].executed, out_dir / ipynb.name))
        return result


@pytest.fixture(scope="session", autouse=True)
def count_kernel_runs():
    """With ``COURSE_RUN_LOG`` set, log every in-process ``builder.execute.run`` (the tests' and the in-process commands')."""
    if not os.environ.get("COURSE_RUN_LOG"):
        yield
        return
    from builder import execute

    real = execute.run

    def counted(ipynb, *args, **kwargs):
        log_run(f"kernel {Path(ipynb).parent.name}/{Path(ipynb).name}")
        return real(ipynb, *args, **kwargs)

    execute.run = counted
    yield
    execute.run = real


@pytest.fixture(scope="session")
def executions(course, tmp_path_factory) -> Executions:
    """Every edition of every notebook executed once per session, on first request.

    With ``COURSE_KEEP_RUNS=FOLDER`` the executed copies go to FOLDER/executed and the handouts to FOLDER/handouts
    (CI uploads them from dist/), instead of a temporary folder.
    """
    keep = os.environ.get("COURSE_KEEP_RUNS")
    return Executions(course, Path(keep).resolve() / "executed" if keep else tmp_path_factory.mktemp("executed"))


@pytest.fixture(scope="session")
def course_handouts(course, executions) -> tuple[list[Path], str]:
    """``python -m builder html`` on the course notebooks, exporting the session's executed editions (no second run)."""
    from builder import cli, commands

    executions.all()
    handouts = executions.folder.parent / "handouts"
    args = cli.parse_args(["html", "--out", str(executions.folder), "--handouts", str(handouts)])
    report = io.StringIO()
    with contextlib.redirect_stdout(report):
        code = commands.html(course, args, execute_first=False)
    assert code == 0, report.getvalue()
    return sorted(handouts.glob("*.html")), report.getvalue()


class StudentRuns:
    """Each student edition executed at most once per session: as shipped, and with its solutions put back."""

    def __init__(self, folder: Path):
        self.folder, self._done = folder, {}

    def shipped(self, nb):
        """The student edition as committed, run with every cell even after an error (``allow_errors``)."""
        return self._run(("shipped", nb.edition), nb.student_ipynb, allow_errors=True)

    def reinserted(self, nb):
        """The student edition with its solutions put back: the solution edition's code, cell for cell."""
        from builder import pairing, student

        key = ("reinserted", nb.edition)
        if key not in self._done:
            path = self.folder / f"reinserted{len(self._done)}" / nb.student_ipynb.name
            path.parent.mkdir()
            path.write_text(pairing.to_ipynb(student.reinsert_solutions(nb.student_source.read_text(encoding="utf-8"),
                                                                         nb.source.read_text(encoding="utf-8"))))
            self._run(key, path)
        return self._done[key]

    def _run(self, key, ipynb: Path, *, allow_errors: bool = False):
        if key not in self._done:
            from builder import execute

            out = self.folder / f"run{len(self._done)}"
            self._done[key] = execute.run(ipynb, out, allow_errors=allow_errors, coalesce_streams=True)
        return self._done[key]


@pytest.fixture(scope="session")
def student_runs(tmp_path_factory) -> StudentRuns:
    """Each student edition run once per session as shipped and once with its solutions back (shared by test_execution and test_student)."""
    return StudentRuns(tmp_path_factory.mktemp("student_runs"))


class ScriptRuns:
    """``python [FLAGS] notebooks/<name>.py``, each alone in an empty folder, at most once per session."""

    def __init__(self, folder: Path):
        self.folder, self._done = folder, {}

    def __call__(self, source: Path, *flags: str) -> subprocess.CompletedProcess:
        key = (source.resolve(), flags)
        if key not in self._done:
            log_run(f"script {' '.join(flags)} {source.relative_to(ROOT)}".replace("  ", " "))
            cwd = self.folder / f"run{len(self._done)}"
            cwd.mkdir()
            self._done[key] = subprocess.run([sys.executable, *flags, str(source)], cwd=cwd, capture_output=True, text=True, timeout=900)
        return self._done[key]


@pytest.fixture(scope="session")
def script_runs(tmp_path_factory) -> ScriptRuns:
    """Each notebook source run as a plain script (and with ``-O`` where asked), once per session."""
    return ScriptRuns(tmp_path_factory.mktemp("scripts"))


def pytest_collection_modifyitems(config, items):
    """The full wrong-answer sweep is long: it runs only when selected with ``-m wrong_answer``."""
    if "wrong_answer" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="the full wrong-answer sweep runs with -m wrong_answer")
    for item in items:
        if "wrong_answer" in item.keywords:
            item.add_marker(skip)
