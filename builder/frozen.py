"""Frozen reference files: regenerate them independently and prove the committed bytes reproduce."""

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import canonical, files
from .refgen import GENERATORS

if TYPE_CHECKING:
    from .config import Course, Notebook


@dataclass(frozen=True)
class Problem:
    """One way a committed reference file disagrees with its generator."""

    path: Path
    key: str
    message: str

    def __str__(self) -> str:
        where = f" at {self.key}" if self.key else ""
        return f"{self.path}{where}: {self.message}"


def generate(name: str) -> dict:
    """Recompute one module's reference values."""
    try:
        return GENERATORS[name]()
    except KeyError:
        raise KeyError(f"no reference generator for {name!r}; known: {', '.join(GENERATORS)}") from None


def expected_text(name: str) -> str:
    """The canonical bytes that ``references/<name>.json`` must hold."""
    return canonical.dumps(generate(name))


def check(path: Path, name: str) -> list[Problem]:
    """Every disagreement between a committed reference file and its generator."""
    if not path.exists():
        return [Problem(path, "", "file is missing; create it with `python -m builder refs --update`")]
    text = path.read_text(encoding="utf-8")
    try:
        committed = json.loads(text)
    except json.JSONDecodeError as exc:
        return [Problem(path, "", f"not valid JSON ({exc})")]
    problems = [Problem(path, key, msg) for key, msg in compare(committed, generate(name))]
    if not problems and not canonical.is_canonical(text):
        problems.append(Problem(path, "", "values reproduce but the bytes are not canonical; run `python -m builder refs --update`"))
    return problems


def compare(committed: object, generated: object, key: str = "") -> list[tuple[str, str]]:
    """Key paths where two JSON values differ, each with both values shown."""
    if isinstance(committed, dict) and isinstance(generated, dict):
        found = []
        for k in sorted(set(committed) | set(generated)):
            sub = f"{key}.{k}" if key else k
            if k not in generated:
                found.append((sub, f"committed {committed[k]!r} but the generator no longer produces this key"))
            elif k not in committed:
                found.append((sub, f"generator produces {generated[k]!r} but the committed file lacks this key"))
            else:
                found += compare(committed[k], generated[k], sub)
        return found
    if isinstance(committed, list) and isinstance(generated, list) and len(committed) == len(generated):
        return [d for i, (a, b) in enumerate(zip(committed, generated)) for d in compare(a, b, f"{key}[{i}]")]
    if committed == generated and type(committed) is type(generated):
        return []
    return [(key, f"committed {committed!r} != generated {generated!r}")]


def update(path: Path, name: str) -> bool:
    """Rewrite a reference file with its generated canonical bytes; True when it changed."""
    text = expected_text(name)
    from .files import write_all

    return bool(write_all({path: text}))  # all or nothing, as every other write


def changed_values(old: object, new: object, key: str = "") -> list[tuple[str, float, float]]:
    """(key path, old value, new value) for each number a regeneration changed."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [c for k in sorted(set(old) & set(new)) for c in changed_values(old[k], new[k], f"{key}.{k}" if key else k)]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [c for i, (a, b) in enumerate(zip(old, new)) for c in changed_values(a, b, f"{key}[{i}]")]
    numbers = (int, float)
    if isinstance(old, numbers) and isinstance(new, numbers) and not isinstance(old, bool) and old != new:
        return [(key, old, new)]
    return []


def written_forms(value: float) -> list[str]:
    """How a notebook may write ``value`` by hand: 131072, 131,072, 131{,}072, 128 KiB, 4.2 (three digits or more only)."""
    forms = set()
    if float(value).is_integer():
        number = int(value)
        forms |= {str(number), f"{number:,}", f"{number:,}".replace(",", "{,}")}
        for power, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
            if number and number % 2 ** power == 0:
                forms.add(f"{number // 2 ** power} {unit}")
                break
    else:
        forms |= {repr(value), f"{value:.2f}", f"{value:.3f}"}
    return sorted(f for f in forms if sum(ch.isdigit() for ch in f) >= 3)


def mentions(changes: list[tuple[str, float, float]], texts: dict[str, str]) -> list[str]:
    """``file(line): ...`` for every line of ``texts`` (name -> text) that writes an old value by hand."""
    found = []
    for key, old, new in changes:
        for form in written_forms(old):
            pattern = re.compile(rf"(?<![\w.]){re.escape(form)}(?![\w]|\.\d)")
            for name, text in texts.items():
                for number, line in enumerate(text.split("\n"), start=1):
                    if pattern.search(line) and "REFERENCE_JSON" not in line:
                        found.append(f"{name}({number}): {form!r} is {key}'s old value (now {new!r}): {line.strip()[:90]}")
    return found


def reference_code(course: "Course", nb: "Notebook", name: str) -> str:
    """Python that embeds a reference file's exact text and the SHA-256 of its bytes; the file must be canonical JSON."""
    path = course.root / "references" / f"{name}.json"
    shown = course.shown(path)
    text = files.read_text(path, shown, what="reference file")
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise files.MalformedFile(f"{shown}({exc.lineno}): not valid JSON at column {exc.colno}: {exc.msg}; "
                                  "regenerate it with `python -m builder refs --update`") from None
    if not canonical.is_canonical(text):
        raise files.MalformedFile(f"{shown}(1): valid JSON but not in canonical form; run `python -m builder refs --update`")
    if '"""' in text or "\\" in text:
        raise files.MalformedFile(f"{shown}(1): holds a backslash or triple quote; keep reference strings plain")
    return (
        f'REFERENCE_SOURCE = "references/{name}.json"\n'
        f'REFERENCE_SHA256 = "{hashlib.sha256(text.encode("utf-8")).hexdigest()}"\n'
        f'REFERENCE_JSON = r"""{text}"""\n'
    )
