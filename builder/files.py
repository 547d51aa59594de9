"""Reading sources strictly and writing outputs all at once: a bad byte is a file(line) error, a failed build writes nothing."""

import os
import tempfile
from pathlib import Path

from . import exits


class MalformedFile(ValueError):
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


class CannotWrite(RuntimeError):
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


def write_all(outputs: dict[Path, str]) -> list[Path]:
    """Write every text in ``outputs`` that differs from the file on disk, all or nothing; return the paths written.

    Each text goes to a temporary file beside its target first; only when all of them are written
    are they renamed into place, so a failure leaves every target as it was.
    """
    changed = {Path(p): text for p, text in outputs.items() if read_if_exists(p) != text}
    staged: list[tuple[Path, Path]] = []
    try:
        for path, text in changed.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
                stream.write(text)
            staged.append((Path(temp), path))
        for temp, path in staged:
            os.chmod(temp, path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask())
            os.replace(temp, path)
    finally:
        for temp, _ in staged:
            temp.unlink(missing_ok=True)
    return list(changed)


def _umask() -> int:
    """The process umask (reading it means setting it, so it is set straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
