"""The judge process of one group of submissions: run the solution edition once, judge each exercise on the way.

``python -m builder.grade.runner`` reads its job (the course source and the group's exercise and
own cells) from stdin, so no file holds the submissions. It executes the source's cells in order;
at each exercise, for each submission, a ``sandbox.Host`` course process forks a student process
holding only that submission's code, and this process forks a short-lived judge that runs the
check cell with stand-ins calling the student's process, killed after ``timeout`` seconds. After
every check the course process kills whatever the student started; one verdict line per check
goes to stdout. The judge then goes on with the reference solution.
"""

import json
import os
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback
import types

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def single_threaded() -> None:
    """One BLAS/OpenMP thread before anything loads them: forked children never inherit a thread pool."""
    for variable in THREAD_VARIABLES:
        os.environ[variable] = "1"
    os.environ.setdefault("MPLBACKEND", "Agg")


def _child(read_end: int, write_end: int, folder: str, task, memory_mb: int | None = None) -> None:
    """In the forked child: run ``task()`` in ``folder`` with no terminal, write its verdict, and exit."""
    os.close(read_end)
    try:
        os.setsid()  # its own process group, so a timeout kills whatever it started too
        if memory_mb:  # the judge decodes what a student sent: its memory is bounded too
            from .sandbox import _limit, _virtual_bytes

            _limit(resource.RLIMIT_AS, _virtual_bytes() + int(memory_mb) * (1 << 20))
        os.chdir(folder)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        result = task()
    except BaseException as exc:  # SystemExit or KeyboardInterrupt from a student's code, too
        result = {"passed": False, "output": f"ERROR: the check stopped with {type(exc).__name__}: {exc}"}
    with os.fdopen(write_end, "wb") as pipe:
        pipe.write(json.dumps(result).encode())
    os._exit(0)


def _collect(pid: int, read_end: int, deadline: float) -> tuple[bytes, bool]:
    """Read the child's verdict until it closes the pipe or the deadline passes; (bytes, timed out)."""
    chunks: list[bytes] = []
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([pipe], [], [], left)[0]:
                _kill(pid)
                return b"", True
            chunk = pipe.read(65536)
            if not chunk:
                return b"".join(chunks), False
            chunks.append(chunk)


def _kill(pid: int) -> None:
    """SIGKILL the child's process group (it calls setsid first thing), or the child alone if it has none yet."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def isolated(task, timeout: float, label: str, memory_mb: int | None = None) -> dict:
    """Run ``task()`` in a forked child in an empty temporary folder, under a time and (with ``memory_mb``) a memory limit."""
    folder = tempfile.mkdtemp(prefix="grade-")
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(read_end, write_end, folder, task, memory_mb)
    os.close(write_end)
    try:
        payload, timed_out = _collect(pid, read_end, start + timeout)
    finally:
        _, status = os.waitpid(pid, 0)
        shutil.rmtree(folder, ignore_errors=True)
    seconds = time.monotonic() - start
    if timed_out:
        return {"passed": False, "output": f"TIMED OUT after {timeout:g} s: the check of {label} did not finish "
                "(an infinite loop, or code far too slow).", "seconds": seconds}
    if not payload:
        how = f"signal {-os.waitstatus_to_exitcode(status)}" if os.WIFSIGNALED(status) else f"exit code {os.waitstatus_to_exitcode(status)}"
        return {"passed": False, "output": f"ERROR: the process checking {label} ended ({how}) before it gave a verdict.", "seconds": seconds}
    return dict(json.loads(payload), seconds=seconds)


def grade_module(source_text: str, submissions: dict[str, dict], timeout: float, limits: dict, emit) -> None:
    """Judge every exercise of every submission in one run of the course source; ``emit(key, label, verdict)`` each.

    The judge runs here; the student's code runs in student processes forked by the course process
    (``sandbox.Host``), which only ever runs course cells up to the exercise being judged.
    """
    from .. import pairing, student
    from . import integrity, sandbox

    nb = pairing.read_source(source_text)
    found = {e.index: e for e in student.exercises(nb)}
    main = types.ModuleType("__main__")  # the cells run as a script would: in a fresh __main__
    sys.modules["__main__"] = main
    namespace = main.__dict__
    code_cells = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    checks = {next(i for i in code_cells if i > index) for index in found}  # they call the contracts: the judge's alone
    host = sandbox.Host(limits)
    try:
        for index in code_cells:
            cell = nb.cells[index]
            exercise = found.get(index)
            if exercise:
                check = nb.cells[next(i for i in code_cells if i > index)].source
                _threads_are_one()
                for key, sub in submissions.items():
                    integrity.verify()
                    emit(key, exercise.label, judged(host, namespace, exercise, check, sub, timeout))
            exec(compile(cell.source, f"<course cell {index}>", "exec"), namespace)
            if index not in checks:
                host.execute(sandbox.student_cell(cell.source), f"<course cell {index}>")
    finally:
        host.close()


KILLED_PARENT = ("ERROR: your code killed the process that runs it (its parent, the course process), "
                 "so {label} could not be judged. Grading went on with the next exercise.")


def judged(host, namespace: dict, exercise, check: str, sub: dict, timeout: float) -> dict:
    """One exercise of one submission: a fresh student process, the judge in a forked child, then every process reaped."""
    import socket

    from . import sandbox
    from .judge import judge

    ours, theirs = socket.socketpair()
    try:
        host.fork(theirs)
    except sandbox.CourseDied:
        host.restart()
        host.fork(theirs)
    theirs.close()

    def task():
        return judge(namespace, exercise.label, exercise.names, check, ours, sub["exercises"].get(exercise.label), sub.get("own", []),
                     sub.get("language", "en"))

    try:
        result = isolated(task, timeout, exercise.label, host.config.get("memory_mb"))
    finally:
        ours.close()
    try:
        host.reap()
    except sandbox.CourseDied:
        host.restart()
        result = {"passed": False, "output": KILLED_PARENT.format(label=exercise.label), "seconds": result.get("seconds", 0.0),
                  "killed_parent": True}
    return result


def _threads_are_one() -> None:
    """Fork is safe only without thread pools: keep torch on one thread, as the notebooks ask."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def main(argv: list[str]) -> int:
    """Read the job from stdin, grade, stream one JSON line per verdict to stdout; a failing course cell is reported."""
    from . import sandbox

    from . import integrity

    sandbox.guard_self()
    job = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    integrity.expect(job.get("code_digest"))
    out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)  # course cells print; only verdict lines go to the real stdout

    def emit(key: str, label: str, verdict: dict) -> None:
        out.write(json.dumps({"key": key, "label": label, "verdict": verdict}) + "\n")

    start = time.perf_counter()
    try:
        grade_module(job["source_text"], job["submissions"], job["timeout"], job["limits"], emit)
        error = None
    except integrity.GraderChanged as exc:
        error = str(exc)
    except Exception:  # the course notebook itself failed: every submission of this module gets the reason
        error = "the course notebook failed while grading:\n" + traceback.format_exc(limit=-3)
    sandbox.reap_all()
    out.write(json.dumps({"done": True, "error": error, "seconds": time.perf_counter() - start}) + "\n")
    return 0


def entry() -> None:
    """The judge process's start (``integrity.isolated_command``)."""
    single_threaded()
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    entry()
