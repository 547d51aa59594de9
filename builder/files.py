"""Reading sources strictly and writing outputs all at once: a bad byte is a file(line) error, a failed build writes nothing."""

import contextlib
import os
import signal
import tempfile
import threading
from pathlib import Path

from . import exits
from .diagnostics import BuilderError


class MalformedFile(BuilderError, ValueError):
    """A file the builder cannot read as its input: missing, not UTF-8, CRLF line endings; the message names ``file(line)``."""

    exit_code = exits.MALFORMED


def read_text(path: Path, shown: str, *, what: str = "source") -> str:
    """The UTF-8 text of ``path`` with LF line endings; MalformedFile naming the line of the first bad byte or CR."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise MalformedFile(f"{shown}(1): {what} is missing; restore it, or remove its entry from pyproject.toml [tool.course]") from None
    except OSError as exc:
        raise MalformedFile(f"{shown}(1): cannot read the {what}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise MalformedFile(f"{shown}({line}): byte 0x{data[exc.start]:02x} at column {column} is not UTF-8; save the file as UTF-8") from None
    if text.startswith("\ufeff"):
        raise MalformedFile(f"{shown}(1): starts with a byte-order mark (BOM); save the file as UTF-8 without a BOM")
    if "\r" in text:
        line = text[: text.index("\r")].count("\n") + 1
        raise MalformedFile(f"{shown}({line}): CR line ending; save the file with LF line endings (git: core.autocrlf=input)")
    return text


def read_if_exists(path: Path) -> str | None:
    """The text of a generated file, or None when it does not exist yet (undecodable bytes are replaced: it is compared, never parsed)."""
    try:
        return Path(path).read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None


class CannotWrite(BuilderError, RuntimeError):
    """A folder the command must write to that cannot be written (a read-only checkout, a file in the way)."""

    exit_code = exits.FAILED


def require_writable(folder: Path, option: str) -> None:
    """Prove a file could be created in ``folder`` (or in the nearest folder above it that exists), creating nothing.

    CannotWrite names the folder and the option that moves it.
    """
    existing = Path(folder).absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        if not existing.is_dir():
            raise NotADirectoryError(f"{existing} is a file")
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        raise CannotWrite(f"cannot write to {folder} ({exc.strerror or exc}); nothing was run. Choose another folder with {option}") from None


class ChangedOnDisk(BuilderError, RuntimeError):
    """A file the command read changed on disk before the command wrote it (an editor saved it meanwhile)."""

    exit_code = exits.HAND_EDIT


def write_all(outputs: dict[Path, str], *, unchanged_since: dict[Path, str | None] | None = None) -> list[Path]:
    """Write every text in ``outputs`` that differs from the file on disk, all or nothing; return the paths written.

    Each text goes to a temporary file beside its target first; only when all of them are written
    are they renamed into place, so a failure leaves every target as it was. ``unchanged_since``
    maps files to the text the command read (None: absent): if one now holds anything else, nothing is written
    (ChangedOnDisk). Ctrl-C waits until every file is written, then interrupts; a symlink keeps
    being a link, and its target is written.
    """
    changed = {Path(p): text for p, text in outputs.items() if read_if_exists(p) != text}
    staged: list[tuple[Path, Path]] = []
    with _interrupts_deferred():
        try:
            for path, text in changed.items():
                target = path.resolve() if path.is_symlink() else path
                target.parent.mkdir(parents=True, exist_ok=True)
                handle, temp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
                staged.append((Path(temp_name), target))
                with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
                    stream.write(text)
            for path, read in (unchanged_since or {}).items():
                if read_if_exists(path) != read:
                    raise ChangedOnDisk(f"{path} changed on disk while the builder ran (an editor saved it?); nothing was written. "
                                        "Run the command again: it reads the file as it is now")
            for temp, target in staged:
                os.chmod(temp, target.stat().st_mode & 0o777 if target.exists() else 0o666 & ~_umask())
                os.replace(temp, target)
        finally:
            for temp, _ in staged:
                temp.unlink(missing_ok=True)
    return list(changed)


@contextlib.contextmanager
def _interrupts_deferred():
    """Hold back Ctrl-C (SIGINT) inside the block and deliver it after, so a write is never left half done."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught and callable(previous):
        previous(signal.SIGINT, None)


def _umask() -> int:
    """The process umask (reading it means setting it, so it is set straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
