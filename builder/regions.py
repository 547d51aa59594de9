"""Marked regions in notebook sources: parse them, render them, and judge them.

A region is generated text between two comment lines::

    # builder:begin inline check_attention_contract
    ...text the builder writes...
    # builder:end sha256=<digest of the text between the markers>

In a markdown cell the markers are HTML comments, so they stay invisible when rendered::

    # <!-- builder:begin header -->
    # <!-- builder:end sha256=... -->

The digest on the end marker is what lets ``check`` tell a hand edit (the text no longer
matches its own digest) from a stale region (the text matches its digest, but the source
it came from has changed).
"""

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from . import exits
from .diagnostics import BuilderError

KINDS = ("header", "inline", "frozen", "solutions")

_BEGIN = re.compile(
    r"^#\s*(?P<html><!--)?\s*builder:begin\b(?P<rest>.*?)\s*(?(html)-->)\s*$"
)
_END = re.compile(r"^#\s*(?P<html><!--)?\s*builder:end\b(?P<rest>.*?)\s*(?(html)-->)\s*$")
_SHA = re.compile(r"^sha256=(?P<digest>[0-9a-f]{64})$")


class RegionError(BuilderError, ValueError):
    """A region is malformed; the message names ``file(line)``."""

    exit_code = exits.MALFORMED

    def __init__(self, path: str, line: int, message: str):
        super().__init__(f"{path}({line}): {message}")
        self.path, self.line, self.message = path, line, message


@dataclass(frozen=True)
class Region:
    """One marked region: what generates it and where it sits (1-based marker lines)."""

    kind: str
    arg: str
    begin_line: int
    end_line: int
    body: str
    recorded_sha: str
    markdown: bool

    @property
    def key(self) -> str:
        """The region's identity, as written on its begin marker."""
        return f"{self.kind} {self.arg}".strip()


def digest(text: str) -> str:
    """SHA-256 of a region body, as recorded on its end marker."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def end_marker(body: str, markdown: bool) -> str:
    """The end-marker line for a region whose text is ``body``."""
    words = f"builder:end sha256={digest(body)}"
    return f"# <!-- {words} -->" if markdown else f"# {words}"


def parse(text: str, path: str = "<string>") -> list[Region]:
    """Find every region in ``text``; raise RegionError on a malformed one."""
    lines = text.splitlines(keepends=True)
    regions: list[Region] = []
    seen: dict[str, int] = {}
    open_at: tuple[int, str, str, bool] | None = None
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        begin, end = _BEGIN.match(stripped), _END.match(stripped)
        if begin:
            if open_at:
                raise RegionError(path, number, f"nested region: the region opened on line {open_at[0]} has no end marker yet")
            kind, arg = _begin_words(begin.group("rest"), path, number)
            key = f"{kind} {arg}".strip()
            if key in seen:
                raise RegionError(path, number, f"duplicate region '{key}' (first on line {seen[key]}); keep one")
            seen[key] = number
            open_at = (number, kind, arg, bool(begin.group("html")))
        elif end:
            if not open_at:
                raise RegionError(path, number, "end marker without a begin marker")
            start, kind, arg, markdown = open_at
            recorded = _end_digest(end.group("rest"), path, number)
            body = "".join(lines[start:number - 1])
            regions.append(Region(kind, arg, start, number, body, recorded, markdown))
            open_at = None
    if open_at:
        raise RegionError(path, open_at[0], f"region '{open_at[1]} {open_at[2]}' has no end marker; add '# builder:end'")
    return regions


def _begin_words(rest: str, path: str, line: int) -> tuple[str, str]:
    """Split a begin marker into its kind and argument, rejecting unknown kinds."""
    words = rest.split()
    if not words or words[0] not in KINDS:
        raise RegionError(path, line, f"unknown region kind {rest.strip()!r}; allowed kinds: {', '.join(KINDS)}")
    if len(words) > 2:
        raise RegionError(path, line, f"a begin marker takes one kind and at most one name, got {rest.strip()!r}")
    return words[0], words[1] if len(words) == 2 else ""


def _end_digest(rest: str, path: str, line: int) -> str:
    """The digest on an end marker; empty for a fresh marker that has never been built."""
    rest = rest.strip()
    if not rest:
        return ""
    found = _SHA.match(rest)
    if not found:
        raise RegionError(path, line, f"end marker must read 'builder:end sha256=<64 hex digits>', got {rest!r}")
    return found.group("digest")


Renderer = Callable[[Region], str]


def render(text: str, renderer: Renderer, path: str = "<string>") -> str:
    """Return ``text`` with every region body replaced by ``renderer(region)``."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    cursor = 0
    for region in parse(text, path):
        out.extend(lines[cursor:region.begin_line])
        body = renderer(region)
        if body and not body.endswith("\n"):
            body += "\n"
        out.append(body)
        newline = "\n" if lines[region.end_line - 1].endswith("\n") else ""
        out.append(end_marker(body, region.markdown) + newline)
        cursor = region.end_line
    out.extend(lines[cursor:])
    return "".join(out)


def hand_edited(regions: list[Region]) -> list[Region]:
    """Regions whose text no longer matches the digest on their end marker."""
    return [r for r in regions if r.recorded_sha and digest(r.body) != r.recorded_sha]


def as_markdown(text: str) -> str:
    """Prefix every line with '# ' so the text sits in a percent-format markdown cell."""
    return "".join(f"# {line}".rstrip() + "\n" for line in text.splitlines())


def source_hint(region: Region) -> str:
    """Where a region's text comes from, for error messages."""
    if region.kind == "inline":
        return f"builder/contracts ({region.arg})"
    if region.kind == "frozen":
        return f"references/{region.arg}.json"
    if region.kind == "solutions":
        return "the exercise cells of the notebook source"
    return "pyproject.toml [tool.course] and the reference checksum"
