"""The student's processes: a course process that forks one sealed student process per exercise and submission.

``Host`` (in the judge) starts ``python -m builder.grade.sandbox FD``: the *course process*. It runs
the course cells the judge sends it (lesson code, and earlier exercises on their reference
solutions; never a contract, a check cell, the spoiler cell nor the exercise being judged) and
holds nothing else: no judge, no submissions. For each submission it forks a student process that
gets one end of a socket pair from the judge and nothing else.

That process is *sealed* (``seal``): in its own user (when not root), mount, network, IPC and PID
namespaces, with a private ``/proc`` that shows only its own processes, every file system
read-only, the course's folders, the submissions' folders and (not as root) the grading user's home
and ``/run`` under empty read-only tmpfs mounts, and a private size-limited tmpfs as its working
folder, ``/tmp`` and ``/dev/shm``, gone with it. Its PID 1 is a small init that reaps orphans and
kills the whole tree when its memory passes the limit; the number of processes and threads is
limited per tree (RLIMIT_NPROC, counted per user namespace or per slot user). As root, the student
runs as a user id of its own per judge slot (``UID_BASE + slot``), so two slots never share a uid.
Each process also runs under RLIMIT_AS / RLIMIT_CPU / RLIMIT_FSIZE, cannot outlive the course
process (PR_SET_PDEATHSIG), and the course process, a subreaper, kills every descendant after each
submission before the judge records the verdict. Where the kernel refuses namespaces, the student
process runs unsealed, as before, and ``SEALED`` says so.
"""

import contextlib
import ctypes
import os
import pwd
import re
import resource
import signal
import socket
import sys
import tempfile
import types

from . import wire, worker

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38
CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWIPC = 0x00020000, 0x40000000, 0x10000000, 0x20000000, 0x08000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 32, 4096, 16384, 1 << 18
MOUNT_ATTR_RDONLY, AT_RECURSIVE, AT_FDCWD, SYS_MOUNT_SETATTR = 1, 0x8000, -100, 442
from ..diagnostics import BuilderError

UID_BASE = 61184  # as root, slot k's student runs as uid UID_BASE + k: systemd's range for dynamic users, never a login
SCRATCH = "size=128m,mode=1777"  # the student's own tmpfs: working folder, /tmp and /dev/shm
TREE_PROCESSES = 64  # processes and threads of one student tree
EXIT_MEMORY = 86  # the init's exit status when it killed the tree for memory
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


def _keep() -> list[str]:
    """Folders a student process must still read: Python itself and its installed packages."""
    import site

    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *site.getsitepackages()}
    return sorted({os.path.realpath(p) for p in found if p and os.path.isdir(p)})


def _mount(source, target: str, kind, flags: int, data: bytes | None = None) -> bool:
    """mount(2); False where it fails."""
    return _libc.mount(source, os.fsencode(target), kind, flags, data) == 0


def _hide(folder: str, keep: list[str]) -> None:
    """Cover ``folder`` with an empty read-only tmpfs; where it holds a path in ``keep`` (the course's own .venv),
    cover each of its other entries' folders instead (notebooks/, builder/, .git/ ...), so the course's sources
    are hidden while Python stays importable."""
    if not os.path.isdir(folder) or folder in keep or any(folder.startswith(k + os.sep) for k in keep):
        return
    if not any(path.startswith(folder + os.sep) for path in keep):
        _mount(b"tmpfs", folder, b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, b"size=4k")
        return
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False):
            _hide(os.path.realpath(entry.path), keep)


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64),
                ("userns_fd", ctypes.c_uint64)]


def _all_read_only() -> bool:
    """Every mount of this mount namespace read-only (mount_setattr, Linux 5.12+; else a remount of each)."""
    attr = _MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
    if _libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, b"/", AT_RECURSIVE, ctypes.byref(attr), ctypes.sizeof(attr)) == 0:
        return True
    done = True
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as handle:
        for line in handle:
            fields = line.split()
            point, options = fields[4].encode().decode("unicode_escape"), fields[5].split(",")
            flags = MS_REMOUNT | MS_BIND | MS_RDONLY | sum(f for o, f in (("nosuid", MS_NOSUID), ("nodev", MS_NODEV), ("noexec", MS_NOEXEC)) if o in options)
            done &= _mount(None, point, None, flags)
    return done


def _map_user(uid: int, gid: int) -> None:
    """In a fresh user namespace: the same uid and gid inside as outside, no supplementary groups."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)


def _unshare(flags: int) -> bool:
    """unshare(2); False where the kernel refuses it."""
    return _libc.unshare(flags) == 0


def _seal_files(config: dict, root: bool, folder: str) -> str:
    """As the sealed tree's init: a private /proc, the private folders hidden, all read-only, a private scratch tmpfs;
    the scratch folder's path (``/tmp``, or ``folder`` when Python itself lies under /tmp)."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount(b"proc", "/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)  # only this tree's processes
    keep = _keep()
    hide = list(config.get("hide", []))
    if not root:
        hide += [os.path.expanduser("~"), "/run", "/var/run"]
    for folder in hide:
        _hide(os.path.realpath(folder), keep)
    if not _all_read_only():
        raise OSError("could not make the student's file systems read-only")
    writable = _MountAttr(0, MOUNT_ATTR_RDONLY, 0, 0)  # /proc/self stays writable: the nested user namespace maps itself there
    _libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, b"/proc", 0, ctypes.byref(writable), ctypes.sizeof(writable))
    scratch = "/tmp" if not any(k == "/tmp" or k.startswith("/tmp/") for k in keep) else folder  # Python under /tmp stays
    if not _mount(b"tmpfs", scratch, b"tmpfs", MS_NOSUID | MS_NODEV, SCRATCH.encode()):
        raise OSError("could not mount the student's scratch folder")
    if os.path.isdir("/dev/shm"):
        _mount(os.fsencode(scratch), "/dev/shm", None, MS_BIND)
    return scratch


SEALED = {"sealed": False, "why": "not tried yet", "folder": ""}  # in a student process: whether it runs sealed, and if not why


def seal(config: dict, root: bool, folder: str) -> None:
    """Enter the student's own namespaces and become the parent of its init; returns in the init's child, the student.

    The calling process (forked by the course process) stays outside the new PID namespace and waits for
    the init; the init (PID 1 inside) reaps orphans and kills the tree when its memory passes the limit.
    Where the kernel refuses, it returns at once and the student runs unsealed (``SEALED`` says why).
    """
    if os.environ.get("GRADE_SEAL") == "off":  # the tests of the unsealed path (kernels that refuse namespaces)
        SEALED.update(sealed=False, why="GRADE_SEAL=off")
        return
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWPID | (0 if root else CLONE_NEWUSER)
    if not _unshare(flags):
        SEALED.update(sealed=False, why=f"unshare refused ({os.strerror(ctypes.get_errno())})")
        return
    try:
        if not root:
            _map_user(uid, gid)
    except OSError as exc:
        os._exit(_outside(None, f"the user namespace could not be mapped ({exc})"))
    init = os.fork()
    if init:
        os._exit(_outside(init))
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    try:
        scratch = _seal_files(config, root, folder)
        if not root:  # a nested user namespace owns nothing: the student cannot undo a mount made above
            _limit(resource.RLIMIT_NPROC, TREE_PROCESSES)  # captured by the nested namespace: it holds for the tree
            if not _unshare(CLONE_NEWUSER):
                raise OSError("the nested user namespace was refused")
            _map_user(uid, gid)
    except OSError:
        os._exit(70)  # the student's process is gone: the judge reports that it stopped before answering
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    student = os.fork()
    if student:
        _limit(resource.RLIMIT_AS, _virtual_bytes() + (64 << 20))
        os._exit(_init(student, int(config["memory_mb"]) << 20))
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    SEALED.update(sealed=True, why="", folder=scratch)


def _outside(init: int | None, failure: str | None = None) -> int:
    """The sealed tree's parent outside its PID namespace: wait for the init and exit as it did."""
    if init is None:
        return 70
    while True:
        try:
            _, status = os.waitpid(init, 0)
            return os.waitstatus_to_exitcode(status) & 0xFF
        except ChildProcessError:
            return 70
        except InterruptedError:
            continue


def _tree_bytes() -> int:
    """The private memory of every process in this PID namespace (its /proc is private): pages shared with the
    course process, or between a process and the child it forked, count once, where they were made."""
    total = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit() and entry != "1":
            try:
                with open(f"/proc/{entry}/smaps_rollup", "rb") as handle:
                    for line in handle:
                        if line.startswith((b"Private_Clean:", b"Private_Dirty:")):
                            total += int(line.split()[1]) << 10
            except (OSError, IndexError, ValueError):
                pass
    return total


def _kill_tree() -> None:
    """From a PID namespace's init: SIGKILL every other process in it."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(-1, signal.SIGKILL)


def _init(student: int, budget: int) -> int:
    """PID 1 of a sealed tree: reap every orphan; kill the tree when its memory grows ``budget`` past its start."""
    import time

    start = _tree_bytes()
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return 0
        if pid == student:
            _kill_tree()  # whatever the student left running goes with it
            return os.waitstatus_to_exitcode(status) & 0xFF
        if pid == 0:
            if _tree_bytes() - start > budget:
                _kill_tree()
                return EXIT_MEMORY
            time.sleep(0.05)


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
    """In the forked child: shed the course process, seal itself off, confine itself to its folder, then answer the judge."""
    os.setsid()
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    root = os.geteuid() == 0
    ids = _student_ids(config) if root else None
    prctl(PR_SET_DUMPABLE, 1)  # its own /proc/self, to map its user namespace; it holds nothing of the judge's
    if ids:
        _limit(resource.RLIMIT_NPROC, TREE_PROCESSES)  # counted for the slot's own uid: the limit holds for the tree
    seal(config, root, folder)
    if SEALED["sealed"]:
        folder = str(SEALED["folder"])  # the scratch folder seal() wrote there
        os.environ.update(TMPDIR=folder, HOME=folder, MPLCONFIGDIR=folder)
    elif root:
        _unsealed_mounts(config.get("hide", []))
    if ids and not SEALED["sealed"]:
        os.chown(folder, *ids)
    _limit(resource.RLIMIT_AS, _virtual_bytes() + int(config["memory_mb"]) * (1 << 20))
    _limit(resource.RLIMIT_CPU, int(config["cpu_seconds"]))
    _limit(resource.RLIMIT_FSIZE, 64 << 20)
    _limit(resource.RLIMIT_CORE, 0)
    os.chdir(folder)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    if ids:
        os.setgroups([])
        os.setgid(ids[1])
        os.setuid(ids[0])
    worker.Server(sock, NAMESPACE).serve()


def _student_ids(config: dict) -> tuple[int, int] | None:
    """As root: (uid, gid) of this slot's student: ``UID_BASE + slot``, or the named user's; None runs it as root (tests)."""
    user = config.get("user")
    if user == "":
        return None
    if user and user != "slot":
        entry = pwd.getpwnam(user)
        return entry.pw_uid, entry.pw_gid
    uid = UID_BASE + int(config.get("slot", 0))
    return uid, uid


def _unsealed_mounts(hide: list[str]) -> None:
    """As root where PID namespaces are refused: at least own mount and network namespaces, the private folders hidden."""
    if not _unshare(CLONE_NEWNS | CLONE_NEWNET):
        return
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    keep = _keep()
    for folder in hide:
        _hide(os.path.realpath(folder), keep)


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
            reply: dict[str, object] = {"ok": True}
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


ANSWER_SECONDS = 60  # a fork or a reap answers in well under this; a course process that does not is stopped or hung
CELL_SECONDS = 600  # one course cell (a training cell included)


class CourseDied(BuilderError, RuntimeError):
    """The course process is gone: a student process killed it."""


class Host:
    """The judge's handle on the course process: start it, feed it course cells, fork and reap students."""

    def __init__(self, config: dict, env: dict | None = None):
        self.config, self.env = config, env
        self.cells: list[tuple[str, str]] = []  # (source, name) of each course cell run, replayed after a restart
        self.folders: list[str] = []  # the student processes' working folders, removed once they are reaped
        self._start()

    def _start(self) -> None:
        import subprocess

        ours, theirs = socket.socketpair()
        null = open(os.devnull, "wb")
        from .integrity import isolated_command

        self.process = subprocess.Popen(isolated_command("builder.grade.sandbox", str(theirs.fileno())),
                                        pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=null, stderr=null, env=self.env)
        null.close()
        theirs.close()
        self.control = ours
        self._ask({"op": "start", "config": self.config})
        for source, name in self.cells:
            self._exec(source, name)

    def _ask(self, header: dict, wait: float = ANSWER_SECONDS) -> dict:
        """Send one request and read its answer; CourseDied when the course process is gone, or stopped past ``wait`` s."""
        try:
            self.control.settimeout(wait)
            wire.send(self.control, header)
            return wire.receive(self.control)[0]
        except (EOFError, OSError) as exc:  # socket.timeout too: a stopped (SIGSTOP) course process is a dead one
            raise CourseDied(str(exc)) from None

    def _exec(self, source: str, name: str) -> None:
        """Run a cell there; one that fails (a timing check under load) is kept going past: the judge's own run decides."""
        self._ask({"op": "exec", "source": source, "name": name}, wait=CELL_SECONDS)

    def execute(self, source: str, name: str) -> None:
        """Run one course cell in the course process (and remember it, to replay after a restart)."""
        self.cells.append((source, name))
        self._exec(source, name)

    def fork(self, end: socket.socket) -> int:
        """A new student process holding ``end``; its pid."""
        self.folders.append(tempfile.mkdtemp(prefix="grade-student-"))
        try:
            self.control.settimeout(ANSWER_SECONDS)
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


_CONTRACT = re.compile(r"^# builder:begin inline check_\w+_contract\n.*?^# builder:end[^\n]*\n?", re.MULTILINE | re.DOTALL)


def student_cell(source: str) -> str:
    """What the course process runs for a course cell: no contract (each holds the answers it checks against, nested
    references included) and no spoiler block (every exercise's solution); the lesson code and the rest stay."""
    source = _CONTRACT.sub("", source)
    begin, end = source.find("# builder:begin solutions"), source.find("# builder:end", source.find("# builder:begin solutions"))
    if begin < 0 or end < 0:
        return source
    return source[:begin] + "REFERENCE_SOURCES = {}\n" + source[source.index("\n", end) + 1 if "\n" in source[end:] else len(source):]


def private_folder(prefix: str) -> str:
    """An empty folder only this user can read."""
    return tempfile.mkdtemp(prefix=prefix)


@contextlib.contextmanager
def batch_tmp():
    """TMPDIR for all a batch starts (caches torch or matplotlib write): one folder, removed with what it holds at the end."""
    folder = private_folder("grade-batch-")
    os.chmod(folder, 0o711)  # student processes of other uids pass through it to their own folders, never list it
    saved, saved_default = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"], tempfile.tempdir = folder, folder
    try:
        yield folder
    finally:
        tempfile.tempdir = saved_default
        if saved is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved
        remove_folder(folder)


def remove_folder(folder: str) -> None:
    """Remove a folder made by ``private_folder``."""
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def entry() -> None:
    """The course process's start (``integrity.isolated_command``)."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    course_process(int(sys.argv[-1]))
    sys.exit(0)


if __name__ == "__main__":
    entry()
