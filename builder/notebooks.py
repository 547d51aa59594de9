"""Render a notebook's regions and pair, and find every way the committed files have drifted."""

import difflib
import hashlib
from dataclasses import dataclass
from pathlib import Path

from . import __version__, inline, pairing, regions, student
from .config import FIX_COMMAND, Course, Notebook


@dataclass(frozen=True)
class Finding:
    """One reason ``check`` fails: where (``file(line)``), what, and the diff that would fix it."""

    path: Path
    line: int
    message: str
    diff: str = ""

    def __str__(self) -> str:
        return f"{self.path}({self.line}): {self.message}"


class HandEditError(RuntimeError):
    """``build`` refuses to overwrite a region that was edited by hand."""


def relative(course: Course, path: Path) -> str:
    """``path`` relative to the repository root, with forward slashes."""
    return path.resolve().relative_to(course.root.resolve()).as_posix()


def header_markdown(course: Course, nb: Notebook, ipynb_path: Path, title: str) -> str:
    """Title, Open-in-Colab badge and provenance line of a notebook's first cell."""
    url = course.colab_url(relative(course, ipynb_path))
    return (
        f"# {title}\n\n"
        f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({url})\n\n"
        f"*Provenance: course builder {__version__}; reference `references/{nb.reference}.json`, "
        f"SHA-256 `{nb.reference_sha256}`.*\n"
    )


def reference_code(course: Course, nb: Notebook, name: str) -> str:
    """Python that embeds a reference file's exact text and the SHA-256 of its bytes."""
    path = course.root / "references" / f"{name}.json"
    text = path.read_text(encoding="utf-8")
    if '"""' in text or "\\" in text or "\r" in text:
        raise ValueError(f"{path} holds a backslash, CR or triple quote; keep reference strings plain")
    return (
        f'REFERENCE_SOURCE = "references/{name}.json"\n'
        f'REFERENCE_SHA256 = "{hashlib.sha256(path.read_bytes()).hexdigest()}"\n'
        f'REFERENCE_JSON = r"""{text}"""\n'
    )


def renderer(course: Course, nb: Notebook, ipynb_path: Path, title: str):
    """The function that writes each region of one notebook source."""

    def render(region: regions.Region) -> str:
        if region.kind == "inline":
            return inline.source_of(region.arg)
        if region.kind == "reference":
            if region.arg != nb.reference:
                raise ValueError(f"this notebook's reference is {nb.reference!r}, not {region.arg!r}")
            return reference_code(course, nb, region.arg)
        return regions.as_markdown(header_markdown(course, nb, ipynb_path, title))

    return render


def check_dependencies(found: list[regions.Region], path: str) -> None:
    """Every inlined name must come after the regions of the names it uses."""
    done: set[str] = set()
    for region in found:
        if region.kind != "inline":
            continue
        try:
            needed = inline.dependencies(region.arg)
        except inline.InlineError as exc:
            raise regions.RegionError(path, region.begin_line, str(exc)) from None
        missing = sorted(needed - done)
        if missing:
            raise regions.RegionError(
                path, region.begin_line,
                f"inline {region.arg} uses {', '.join(missing)}; add an inline region for each one above it",
            )
        done.add(region.arg)


def expected_source(course: Course, nb: Notebook, text: str, path: Path, *, ipynb_path=None, title=None) -> str:
    """The source with every region freshly rendered, in jupytext's percent layout; RegionError on bad markers."""
    label = relative(course, path)
    found = regions.parse(text, label)
    check_dependencies(found, label)
    render = renderer(course, nb, ipynb_path or nb.ipynb, title or nb.title)

    def guarded(region: regions.Region) -> str:
        try:
            return render(region)
        except (inline.InlineError, ValueError, OSError) as exc:
            raise regions.RegionError(label, region.begin_line, str(exc)) from None

    return pairing.to_percent(regions.render(text, guarded, label))


def unified(old: str, new: str, label: str) -> str:
    """A unified diff from the committed text to the text the builder would write."""
    return "".join(difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"{label} (committed)", f"{label} (expected)"
    ))


def first_changed_line(old: str, new: str) -> int:
    """1-based number of the first line where two texts differ."""
    for number, (a, b) in enumerate(zip(old.splitlines(), new.splitlines()), start=1):
        if a != b:
            return number
    return min(len(old.splitlines()), len(new.splitlines())) + 1


def source_findings(course: Course, nb: Notebook, path: Path) -> list[Finding]:
    """Hand edits and stale regions in one percent source."""
    text = path.read_text(encoding="utf-8")
    label = relative(course, path)
    found = regions.parse(text, label)
    edited = regions.hand_edited(found)
    findings = [
        Finding(
            path, r.begin_line,
            f"region '{r.key}' was edited by hand: its text no longer matches the sha256 on line {r.end_line}. "
            f"Move the change to its source ({_source_hint(r)}), then run `{FIX_COMMAND} --force`",
        )
        for r in edited
    ]
    expected = expected_source(course, nb, text, path)
    for old, new in zip(found, regions.parse(expected, label)):
        if old.body != new.body and old not in edited:
            findings.append(Finding(
                path, old.begin_line,
                f"region '{old.key}' is stale: {_source_hint(old)} changed since the last build; run `{FIX_COMMAND}`",
                unified(old.body, new.body, f"{label} region '{old.key}'"),
            ))
    if not findings and text != expected:
        findings.append(Finding(
            path, first_changed_line(text, expected),
            f"not in the form the builder writes (region markers or jupytext's percent layout); run `{FIX_COMMAND}`",
            unified(text, expected, label),
        ))
    return findings


def _source_hint(region: regions.Region) -> str:
    """Where a region's text comes from, for error messages."""
    if region.kind == "inline":
        return f"builder/contracts ({region.arg})"
    if region.kind == "reference":
        return f"references/{region.arg}.json"
    return "pyproject.toml [tool.course] and the reference checksum"


def pair_findings(course: Course, source: Path, ipynb: Path) -> list[Finding]:
    """The committed .ipynb must be exactly what the .py source pairs to."""
    expected = pairing.to_ipynb(source.read_text(encoding="utf-8"))
    if not ipynb.exists():
        return [Finding(ipynb, 1, f"paired notebook is missing; run `{FIX_COMMAND}`")]
    committed = ipynb.read_text(encoding="utf-8")
    if committed == expected:
        return []
    return [Finding(
        ipynb, first_changed_line(committed, expected),
        f"out of sync with {relative(course, source)} (edited in Jupyter or Colab, or not rebuilt); "
        f"copy the change into the .py source and run `{FIX_COMMAND}`",
        unified(committed, expected, relative(course, ipynb)),
    )]


def build_one(course: Course, nb: Notebook, path: Path, ipynb: Path, *, force: bool = False) -> list[Path]:
    """Refresh one source's regions and its paired .ipynb; return the files that changed."""
    text = path.read_text(encoding="utf-8")
    edited = regions.hand_edited(regions.parse(text, relative(course, path)))
    if edited and not force:
        where = ", ".join(f"{relative(course, path)}({r.begin_line}) '{r.key}'" for r in edited)
        raise HandEditError(f"refusing to overwrite hand-edited region(s): {where}. Move the edit to its source, then rerun with --force")
    changed = []
    new_text = expected_source(course, nb, text, path)
    if new_text != text:
        path.write_text(new_text, encoding="utf-8")
        changed.append(path)
    paired = pairing.to_ipynb(new_text)
    if not ipynb.exists() or ipynb.read_text(encoding="utf-8") != paired:
        ipynb.write_text(paired, encoding="utf-8")
        changed.append(ipynb)
    return changed


def student_expected(course: Course, nb: Notebook) -> str:
    """The student edition's percent source as the builder writes it, from the committed source."""
    text = student.student_text(nb.source.read_text(encoding="utf-8"))
    return expected_source(course, nb, text, nb.student_source, ipynb_path=nb.student_ipynb, title=nb.student_title)


def build_student(course: Course, nb: Notebook) -> list[Path]:
    """Regenerate one student edition and its pair; return the files that changed."""
    text = student_expected(course, nb)
    changed = []
    nb.student_source.parent.mkdir(parents=True, exist_ok=True)
    for path, content in ((nb.student_source, text), (nb.student_ipynb, pairing.to_ipynb(text))):
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            path.write_text(content, encoding="utf-8")
            changed.append(path)
    return changed


def student_findings(course: Course, nb: Notebook) -> list[Finding]:
    """A student edition that is missing, stale or edited by hand, or whose pair drifted."""
    expected = student_expected(course, nb)
    path = nb.student_source
    if not path.exists():
        return [Finding(path, 1, f"student edition is missing; run `{FIX_COMMAND}`")]
    committed = path.read_text(encoding="utf-8")
    if committed != expected:
        return [Finding(
            path, first_changed_line(committed, expected),
            f"student edition is stale or was edited by hand; it is generated from {relative(course, nb.source)}: run `{FIX_COMMAND}`",
            unified(committed, expected, relative(course, path)),
        )]
    return pair_findings(course, path, nb.student_ipynb)
