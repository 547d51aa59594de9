"""What ``check`` (or a ``build``) derived, kept under the SHA-256 of its inputs, so an unchanged checkout is not derived twice.

A notebook's entry is keyed by the digest of everything its editions are derived from: its English
source, and the course's shared inputs (pyproject.toml, the builder package and the checkout's
builder/, translations/, references/, the versions of the libraries that lay the files out). It holds
the findings derived from them and the SHA-256 of every generated file the builder would write.
A hit replays the findings and still reads every generated file: one whose bytes are not what would
be written (edited by hand, stale, missing) sends that notebook down the full derivation, which
names the drift. The course-wide findings (message catalogs, catalogs no notebook owns) are kept
the same way, keyed by the shared inputs alone, so an edited source re-derives only its notebook.
References are always regenerated.

The record is ``build/check-cache.json`` (ignored by git). A missing, corrupt or unwritable record
only means the full derivation.
"""

import dataclasses
import hashlib
import importlib.util
import json
import os
import sys
from pathlib import Path

from .diagnostics import Finding
from .files import write_all

RECORD = Path("build") / "check-cache.json"  # under the course root
FORMAT = 2  # bump when an entry's layout changes
KEPT = 32  # entries kept: a few branches' worth, newest last
SHARED = ("pyproject.toml", "builder", "translations", "references")  # the checkout's inputs beside the sources
LIBRARIES = ("jupytext", "nbformat", "polib")  # an upgrade rewrites their files, so a stat of each names the version


def digest(data: bytes | str | None) -> str:
    """SHA-256 of bytes or text (as UTF-8); a fixed marker for a file that does not exist."""
    if data is None:
        return "missing"
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def _tree(path: Path):
    """Every file at or under ``path``, sorted, bytecode left out."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def _read(path: Path) -> bytes | None:
    """The bytes of ``path``, or None when it is missing or unreadable."""
    try:
        return path.read_bytes()
    except OSError:
        return None


class Record:
    """The entries of ``build/check-cache.json`` for one course, read once and written once."""

    def __init__(self, course, *, use: bool = True):
        self.course, self.path = course, course.root / RECORD
        self.entries: dict[str, dict] = self._load()
        self.use = use  # False: replay nothing (check --no-cache, build), but keep the other entries
        self.fresh: dict[str, dict] = {}
        self.derived: dict[str, object] = {}  # key -> the notebook (None: the course) of each entry derived in this run
        self.shared = self._shared_digest()

    def _load(self) -> dict[str, dict]:
        """The stored entries; none when the record is missing, corrupt or of another format."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return data["entries"] if data.get("format") == FORMAT and isinstance(data.get("entries"), dict) else {}
        except (OSError, ValueError, AttributeError, KeyError):
            return {}

    def _shared_digest(self) -> str:
        """One digest of every input the notebooks share: the checkout's shared files, the builder package, the libraries."""
        root, package = self.course.root, Path(__file__).resolve().parent
        h = hashlib.sha256(f"{FORMAT}\n{sys.version}\n{root}\n".encode())
        for name in LIBRARIES:
            spec = importlib.util.find_spec(name)
            stat = os.stat(spec.origin) if spec and spec.origin else None
            h.update(f"{name} {spec and spec.origin} {stat and (stat.st_mtime_ns, stat.st_size)}\n".encode())
        running = [] if package == (root / "builder").resolve() else [(package, _tree(package))]  # the package, when not the checkout's
        for base, paths in running + [(root, _tree(root / name)) for name in SHARED]:
            for path in paths:
                h.update(f"{path.relative_to(base).as_posix()} {digest(_read(path))}\n".encode())
        return h.hexdigest()

    def notebook_key(self, nb) -> str:
        """The digest of everything one notebook's editions are derived from."""
        return digest(f"notebook {nb.name} {nb.reference} {self.shared} {digest(_read(nb.source))}")

    def course_key(self) -> str:
        """The digest of everything the course-wide findings are derived from: the shared inputs, no notebook source."""
        return digest("course " + self.shared)

    def notebook_findings(self, key: str) -> list[Finding] | None:
        """The findings kept under ``key`` when every generated file still holds what would be written; else None."""
        entry = self.entries.get(key) if self.use else None
        try:
            if entry is None or any(digest(_read(self.course.root / path)) != sha for path, sha in entry["outputs"].items()):
                return None
            return self._keep(key, entry)
        except (TypeError, KeyError, AttributeError, ValueError):
            return None

    def course_findings(self, key: str) -> list[Finding] | None:
        """The course-wide findings kept under ``key``; else None."""
        entry = self.entries.get(key) if self.use else None
        try:
            return None if entry is None else self._keep(key, entry)
        except (TypeError, KeyError, AttributeError, ValueError):
            return None

    def _keep(self, key: str, entry: dict) -> list[Finding]:
        """An entry's findings; the entry stays in the record."""
        found = [Finding(**item) for item in entry["findings"]]
        self.fresh[key] = entry
        return found

    def put(self, key: str, findings: list, outputs: dict[Path, str] | None = None, nb=None) -> None:
        """Keep ``findings`` derived for notebook ``nb`` (None: the course) under ``key``, with the digest of each generated file's expected text."""
        self.derived[key] = nb
        self.fresh[key] = {
            "findings": [dataclasses.asdict(f) for f in findings],
            "outputs": {Path(p).relative_to(self.course.root).as_posix(): digest(text) for p, text in (outputs or {}).items()},
        }

    def unchanged_since_read(self) -> set[str]:
        """The keys derived in this run whose inputs still hash to them: an input saved while ``check`` ran keeps its entry out."""
        if self._shared_digest() != self.shared:
            return set()
        return {key for key, nb in self.derived.items() if key == (self.course_key() if nb is None else self.notebook_key(nb))}

    def save(self) -> None:
        """Write the record (a temporary file renamed over it); a checkout that cannot be written keeps none."""
        stale = set(self.derived) - self.unchanged_since_read() if self.derived else set()
        fresh = {k: v for k, v in self.fresh.items() if k not in stale}
        entries = {k: v for k, v in self.entries.items() if k not in fresh} | fresh
        entries = dict(list(entries.items())[-KEPT:])
        try:  # all at once, Ctrl-C held back until it is written, as every file the builder writes
            write_all({self.path: json.dumps({"format": FORMAT, "entries": entries})})
        except OSError:
            pass
