"""Shared fixtures: the course configuration, throwaway copies of the repository, and each notebook run once.

A kernel run of a course notebook costs 5-40 s, so every test that needs an edition executed as committed
reads it from ``executions`` (one run per edition per test run, started on first request), and every test
that needs ``python notebooks/<name>.py`` reads it from ``script_runs``. Under pytest-xdist (``-n 2``) the
workers share these runs through ``Once``: a file lock and a pickle per run in a folder of this test run, so
each is still made once. Set ``COURSE_RUN_LOG`` to a file path to have each real run of either kind appended
there as one line (how the count per tier is measured).
"""

import contextlib
import dataclasses
import io
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock, Timeout

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


def run_folder(tmp_path_factory) -> Path:
    """The folder of this test run that every pytest-xdist worker sees (each worker's basetemp is inside it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


class Once:
    """Results made at most once per test run across pytest-xdist workers: one lock and one pickle per key in ``folder``."""

    MISSING = object()

    def __init__(self, folder: Path):
        self.folder, self._memo = folder, {}
        folder.mkdir(parents=True, exist_ok=True)

    def get(self, key: str, make, *, wait: bool = True):
        """The result stored under ``key``, made by ``make()`` first if no worker made it; MISSING if busy and not ``wait``."""
        if key not in self._memo:
            value = self._shared(key, make, wait)
            if value is self.MISSING:
                return value
            self._memo[key] = value
        return self._memo[key]

    def _shared(self, key: str, make, wait: bool):
        """``get`` across processes: under the key's lock, read its pickle or make and write it."""
        path = self.folder / f"{key}.pickle"
        lock = FileLock(f"{path}.lock")
        try:
            lock.acquire(timeout=-1 if wait else 0)
        except Timeout:
            return self.MISSING
        try:
            if path.exists():
                return pickle.loads(path.read_bytes())  # written by this test run's own workers
            value = make()
            path.with_suffix(".part").write_bytes(pickle.dumps(value))
            path.with_suffix(".part").replace(path)
            return value
        finally:
            lock.release()


@pytest.fixture(scope="session")
def once(tmp_path_factory) -> Once:
    """This test run's shared results (see ``Once``)."""
    return Once(run_folder(tmp_path_factory) / "once")


class Executions:
    """Each edition executed as committed, at most once per test run, laid out as ``python -m builder html --out`` reads it."""

    def __init__(self, course, folder: Path, once: Once):
        self.course, self.folder, self.once, self._done = course, folder, once, {}
        self.editions = {nb.edition: nb for nb in course.select_editions(None)}

    def __getitem__(self, edition: str):
        """The RunResult of ``edition`` (run with ``coalesce_streams``, so a second run compares equal)."""
        self._fetch(edition, wait=True)
        return self._done[edition]

    def _fetch(self, edition: str, *, wait: bool) -> None:
        """Run ``edition`` here, or take the run another worker made; skipped while another worker runs it, unless ``wait``."""
        if edition in self._done:
            return
        from builder import commands, execute

        nb = self.editions[edition]
        result = self.once.get(f"execution-{edition}", lambda: execute.run(nb.ipynb, commands.edition_dir(self.folder, nb),
                                                                          coalesce_streams=True), wait=wait)
        if result is not Once.MISSING:
            self._done[edition] = result

    def all(self) -> dict:
        """Every edition's RunResult: first those no other worker is running, then waiting for the rest."""
        for edition in self.editions:
            self._fetch(edition, wait=False)
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
def executions(course, tmp_path_factory, once) -> Executions:
    """Every edition of every notebook executed once per test run, on first request.

    With ``COURSE_KEEP_RUNS=FOLDER`` the executed copies go to FOLDER/executed and the handouts to FOLDER/handouts
    (CI uploads them from dist/), instead of a temporary folder.
    """
    keep = os.environ.get("COURSE_KEEP_RUNS")
    return Executions(course, Path(keep).resolve() / "executed" if keep else run_folder(tmp_path_factory) / "executed", once)


@pytest.fixture(scope="session")
def course_handouts(course, executions, once) -> tuple[list[Path], str]:
    """``python -m builder html`` on the course notebooks, exporting the test run's executed editions (no second run)."""
    executions.all()
    return once.get("course-handouts", lambda: export_handouts(course, executions.folder))


def export_handouts(course, executed: Path) -> tuple[list[Path], str]:
    """``python -m builder html --out EXECUTED`` with the handouts beside EXECUTED: their paths and the command's report."""
    from builder import cli, commands

    handouts = executed.parent / "handouts"
    args = cli.parse_args(["html", "--out", str(executed), "--handouts", str(handouts)])
    report = io.StringIO()
    with contextlib.redirect_stdout(report):
        code = commands.html(course, args, execute_first=False)
    assert code == 0, report.getvalue()
    return sorted(p for p in handouts.glob("*.html") if p.name != "index.html"), report.getvalue()  # the handouts; index.html lies beside them


class StudentRuns:
    """Each student edition executed at most once per test run: as shipped, and with its solutions put back."""

    def __init__(self, folder: Path, once: Once):
        self.folder, self.once = folder, once

    def shipped(self, nb):
        """The student edition as committed, run with every cell even after an error (``allow_errors``)."""
        return self._run(f"shipped-{nb.edition}", lambda: nb.student_ipynb, allow_errors=True)

    def reinserted(self, nb):
        """The student edition with its solutions put back: the solution edition's code, cell for cell."""
        from builder import pairing, student

        def write() -> Path:
            path = self.folder / f"reinserted-{nb.edition}" / nb.student_ipynb.name
            path.parent.mkdir(parents=True)
            path.write_text(pairing.to_ipynb(student.reinsert_solutions(nb.student_source.read_text(encoding="utf-8"),
                                                                         nb.source.read_text(encoding="utf-8"))))
            return path
        return self._run(f"reinserted-{nb.edition}", write)

    def _run(self, key: str, ipynb, *, allow_errors: bool = False):
        """The run stored under ``key``, executing the notebook ``ipynb()`` returns if no worker has."""
        from builder import execute

        return self.once.get(f"student-{key}", lambda: execute.run(ipynb(), self.folder / f"run-{key}", allow_errors=allow_errors,
                                                                   coalesce_streams=True))


@pytest.fixture(scope="session")
def student_runs(tmp_path_factory, once) -> StudentRuns:
    """Each student edition run once per test run as shipped and once with its solutions back (shared by test_execution and test_student)."""
    return StudentRuns(run_folder(tmp_path_factory) / "student_runs", once)


class ScriptRuns:
    """``python [FLAGS] notebooks/<name>.py``, each alone in an empty folder, at most once per test run."""

    def __init__(self, folder: Path, once: Once):
        self.folder, self.once = folder, once

    def __call__(self, source: Path, *flags: str) -> subprocess.CompletedProcess:
        key = f"script-{source.stem}{''.join(flags)}"
        return self.once.get(key, lambda: self._run(self.folder / key, source, flags))

    @staticmethod
    def _run(cwd: Path, source: Path, flags: tuple[str, ...]) -> subprocess.CompletedProcess:
        """Run the script in the empty folder ``cwd``."""
        log_run(f"script {' '.join(flags)} {source.relative_to(ROOT)}".replace("  ", " "))
        cwd.mkdir(parents=True)
        return subprocess.run([sys.executable, *flags, str(source)], cwd=cwd, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="session")
def script_runs(tmp_path_factory, once) -> ScriptRuns:
    """Each notebook source run as a plain script (and with ``-O`` where asked), once per test run."""
    return ScriptRuns(run_folder(tmp_path_factory) / "scripts", once)


# The test files that take longest in the full tier, longest first (measured with --durations; a scheduling hint only).
LONGEST_FIRST = ("test_execution", "test_wrong_answers", "test_release", "test_grade", "test_print", "test_grade_attacks",
                 "test_frontend", "test_mutants", "test_fuzz", "test_properties", "test_a11y", "test_html", "test_student")


def longest_first(items: list) -> None:
    """Under pytest-xdist, order the files longest first, so that ``--dist loadfile`` does not end on one long file."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(Path(str(item.fspath)).stem, len(rank)))  # stable: each file keeps its order


def pytest_collection_modifyitems(config, items):
    """Longest files first under pytest-xdist; the full wrong-answer sweep runs only when selected with ``-m wrong_answer``."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        longest_first(items)
    if "wrong_answer" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="the full wrong-answer sweep runs with -m wrong_answer")
    for item in items:
        if "wrong_answer" in item.keywords:
            item.add_marker(skip)
