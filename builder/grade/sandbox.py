"""The student's processes: a course process that forks one student process per exercise and submission.

``Host`` (in the judge) starts ``python -m builder.grade.sandbox FD``: the *course process*. It runs
the course cells the judge sends it (earlier exercises on their reference solutions; never the
spoiler cell nor the exercise being judged) and holds nothing else: no judge, no submissions.
For each submission it forks a *student process* that gets one end of a socket pair from the
judge and nothing else. That process leaves the course process's session, cannot outlive it
(PR_SET_PDEATHSIG), runs under RLIMIT_AS / RLIMIT_CPU / RLIMIT_FSIZE, in an empty folder, and,
when the grader runs as root, as ``nobody`` in its own mount and network namespaces, with the
course's folders and the submissions' folders hidden under empty read-only tmpfs mounts.
The course process is a subreaper: after each submission it kills every descendant, double-forked
and ``setsid`` ones included, before the judge records the verdict.
"""

import contextlib
import ctypes
import os
import pwd
import resource
import signal
import socket
import sys
import tempfile
import types

from . import wire, worker

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 1, 4, 36
CLONE_NEWNS, CLONE_NEWNET = 0x00020000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 1, 2, 4, 16384, 1 << 18
_libc = ctypes.CDLL(None, use_errno=True)


def prctl(option: int, value: int) -> bool:
    """prctl(2); False where it fails (not Linux)."""
    try:
        return _libc.prctl(option, value, 0, 0, 0) == 0
    except AttributeError:
        return False


def guard_self() -> None:
    """Make this process a subreaper and not dumpable: a student process can neither outlive it unseen nor read its memory."""
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    prctl(PR_SET_DUMPABLE, 0)


@contextlib.contextmanager
def guarded():
    """``guard_self`` for the length of a batch, then the calling process as it was; on leaving, every new descendant is killed."""
    before = frozenset(children())  # processes it had already: never ours to reap
    guard_self()
    try:
        yield
    finally:
        reap_all(keep=before)
        prctl(PR_SET_CHILD_SUBREAPER, 0)
        prctl(PR_SET_DUMPABLE, 1)


def children() -> list[int]:
    """The process ids whose parent is this process (orphans re-parented here included)."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    stat = handle.read()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2:].split()
            if len(fields) > 1 and int(fields[1]) == me:
                found.append(int(entry))
    return found


def reap_all(keep: frozenset = frozenset()) -> dict[int, int]:
    """SIGKILL every descendant (as a subreaper, orphans come back here) until none is left; {pid: wait status}."""
    statuses: dict[int, int] = {}
    while True:
        found = [pid for pid in children() if pid not in keep]
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in found:
            try:
                statuses[pid] = os.waitpid(pid, 0)[1]
            except ChildProcessError:
                pass
        if not found:
            return statuses


def _mount_private(hide: list[str]) -> None:
    """As root: own mount and network namespaces, with each folder in ``hide`` under an empty read-only tmpfs."""
    if _libc.unshare(CLONE_NEWNS | CLONE_NEWNET) != 0:
        return
    _libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None)
    keep = [os.path.realpath(sys.prefix), os.path.realpath(os.path.dirname(os.path.dirname(__file__)))]  # Python, and builder/
    for folder in hide:
        _hide(os.path.realpath(folder), keep)


def _hide(folder: str, keep: list[str]) -> None:
    """Cover ``folder`` with an empty read-only tmpfs; where it holds a path in ``keep`` (the course's own .venv,
    the builder package), cover each of its other subfolders instead (notebooks/, .git/, dist/ ...), so the
    solutions are hidden while Python and the grader stay importable."""
    if not os.path.isdir(folder) or folder in keep:
        return
    if not any(path.startswith(folder + os.sep) for path in keep):
        _libc.mount(b"tmpfs", os.fsencode(folder), b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, b"size=4k")
        return
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False):
            _hide(os.path.realpath(entry.path), keep)


def _limit(kind: int, value: int) -> None:
    """Lower a resource limit (never above its hard limit)."""
    _, hard = resource.getrlimit(kind)
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(kind, (value, value))


def _virtual_bytes() -> int:
    """This process's current address-space size."""
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def become_student(sock: socket.socket, config: dict, folder: str) -> None:
    """In the forked child: shed the course process, confine itself to ``folder``, then answer the judge."""
    os.setsid()
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    root = os.geteuid() == 0
    user = pwd.getpwnam(config["user"]) if root and config.get("user") else None
    if root:
        _mount_private(config.get("hide", []))
    if user:
        os.chown(folder, user.pw_uid, user.pw_gid)
    _limit(resource.RLIMIT_AS, _virtual_bytes() + int(config["memory_mb"]) * (1 << 20))
    _limit(resource.RLIMIT_CPU, int(config["cpu_seconds"]))
    _limit(resource.RLIMIT_FSIZE, 64 << 20)
    _limit(resource.RLIMIT_CORE, 0)
    os.chdir(folder)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    if user:
        _limit(resource.RLIMIT_NPROC, 256)
        os.setgroups([])
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)
    worker.Server(sock, NAMESPACE).serve()


NAMESPACE: dict = {}


WARM = ("math", "random", "itertools", "functools", "collections", "heapq", "bisect", "operator", "statistics", "string",
        "typing", "numbers", "fractions", "decimal", "copy", "time", "json", "warnings", "contextlib", "abc", "enum", "sympy")


def warm_up() -> None:
    """Load what a student's code may import lazily, before the student process drops to a user that may not read Python's files."""
    import importlib

    for name in WARM:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    import torch

    x = torch.ones(2, dtype=torch.float64, requires_grad=True)
    y = torch.nn.functional.softmax(x, -1)
    torch.autograd.grad(y.sum(), x, retain_graph=True)
    torch.autograd.grad([y], [x], [torch.ones_like(y)])  # a tensor grad_outputs imports torch.fx.experimental.symbolic_shapes


def course_process(fd: int) -> None:
    """The loop of the course process: run course cells, fork student processes, reap them."""
    guard_self()
    warm_up()
    control = socket.socket(fileno=fd)
    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    global NAMESPACE
    NAMESPACE = main.__dict__
    config: dict = {}
    while True:
        try:
            header, _ = wire.receive(control)
        except (EOFError, OSError):
            break
        op = header.get("op")
        if op == "start":
            config = header["config"]
            reply = {"ok": True}
        elif op == "exec":
            try:
                exec(compile(header["source"], header["name"], "exec"), NAMESPACE)
                reply = {"ok": True}
            except BaseException as exc:
                reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        elif op == "fork":
            _, fds, _, _ = socket.recv_fds(control, 1, 1)
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:
                control.close()
                try:
                    become_student(socket.socket(fileno=fds[0]), config, header["folder"])
                finally:
                    os._exit(0)
            os.close(fds[0])
            reply = {"pid": pid}
        elif op == "reap":
            statuses = reap_all()
            reply = {"statuses": {str(k): v for k, v in statuses.items()}}
        else:
            break
        wire.send(control, reply)
    reap_all()


class CourseDied(RuntimeError):
    """The course process is gone: a student process killed it."""


class Host:
    """The judge's handle on the course process: start it, feed it course cells, fork and reap students."""

    def __init__(self, config: dict, env: dict | None = None):
        self.config, self.env, self.cells = config, env, []
        self.folders: list[str] = []  # the student processes' working folders, removed once they are reaped
        self._start()

    def _start(self) -> None:
        import subprocess

        ours, theirs = socket.socketpair()
        null = open(os.devnull, "wb")
        self.process = subprocess.Popen([sys.executable, "-m", "builder.grade.sandbox", str(theirs.fileno())],
                                        pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=null, stderr=null, env=self.env)
        null.close()
        theirs.close()
        self.control = ours
        self._ask({"op": "start", "config": self.config})
        for source, name in self.cells:
            self._exec(source, name)

    def _ask(self, header: dict) -> dict:
        try:
            wire.send(self.control, header)
            return wire.receive(self.control)[0]
        except (EOFError, OSError) as exc:
            raise CourseDied(str(exc)) from None

    def _exec(self, source: str, name: str) -> None:
        """Run a cell there; one that fails (a timing check under load) is kept going past: the judge's own run decides."""
        self._ask({"op": "exec", "source": source, "name": name})

    def execute(self, source: str, name: str) -> None:
        """Run one course cell in the course process (and remember it, to replay after a restart)."""
        self.cells.append((source, name))
        self._exec(source, name)

    def fork(self, end: socket.socket) -> int:
        """A new student process holding ``end``; its pid."""
        self.folders.append(tempfile.mkdtemp(prefix="grade-student-"))
        try:
            wire.send(self.control, {"op": "fork", "folder": self.folders[-1]})
            socket.send_fds(self.control, [b"x"], [end.fileno()])
            return int(wire.receive(self.control)[0]["pid"])
        except (EOFError, OSError) as exc:
            raise CourseDied(str(exc)) from None

    def reap(self) -> None:
        """Kill every process the last student started; CourseDied when the course process itself is gone."""
        try:
            self._ask({"op": "reap"})
        finally:
            self._remove_folders()

    def _remove_folders(self) -> None:
        """Remove the working folders of the student processes (all reaped by now)."""
        while self.folders:
            remove_folder(self.folders.pop())

    def restart(self) -> None:
        """A fresh course process, replayed up to where the last one was (after a student killed it)."""
        self.close()
        reap_all()
        self._start()

    def close(self) -> None:
        """Stop the course process and everything under it."""
        try:
            self.control.close()
        finally:
            try:
                self.process.kill()
            except ProcessLookupError:
                pass
            self.process.wait()
            self._remove_folders()


def student_cell(source: str) -> str:
    """What the course process runs for a course cell: the spoiler block (every exercise's solution) left out."""
    begin, end = source.find("# builder:begin solutions"), source.find("# builder:end", source.find("# builder:begin solutions"))
    if begin < 0 or end < 0:
        return source
    return source[:begin] + "REFERENCE_SOURCES = {}\n" + source[source.index("\n", end) + 1 if "\n" in source[end:] else len(source):]



def private_folder(prefix: str) -> str:
    """An empty folder only this user can read."""
    return tempfile.mkdtemp(prefix=prefix)


def remove_folder(folder: str) -> None:
    """Remove a folder made by ``private_folder``."""
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("MPLBACKEND", "Agg")
    course_process(int(sys.argv[1]))
    sys.exit(0)
