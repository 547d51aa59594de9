"""Helpers shared by the test modules."""

import contextlib
import functools
import inspect
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

def _notebook_sources() -> dict[str, Path]:
    """Each course notebook's English source, keyed by its reference name, in the order pyproject.toml lists them."""
    from builder.config import load_course

    return {nb.reference: nb.source for nb in load_course(ROOT).notebooks}


NOTEBOOK_SOURCES = _notebook_sources()  # {"module3": ..., "module5_1": ..., "module5_2": ...}


@functools.cache
def notebook(module: str) -> dict:
    """The notebook ``module``'s (a reference name such as "module5_1") imports, functions, classes and constants, loaded once without running a cell.

    Shared by every test: treat it as read-only (``mutant`` works on a copy).
    """
    import torch

    from tools.notebook_code import definitions

    torch.set_num_threads(1)
    return definitions(NOTEBOOK_SOURCES[module])


def contract_check(name: str):
    """A contract check from builder/contracts, by name."""
    from builder import contracts

    return contracts.registry()[name][0]


def mutant(nb: dict, name: str, *edits: tuple[str, str]):
    """The notebook function ``name`` with each (old, new) source fragment replaced: a realistic student bug.

    Each ``old`` must occur exactly once, so an edit of the notebook that moves the fragment fails loudly
    instead of silently testing the unmutated function.
    """
    source = inspect.getsource(nb[name])
    for old, new in edits:
        assert source.count(old) == 1, f"{old!r} must occur exactly once in {name}"
        source = source.replace(old, new)
    namespace = dict(nb)
    exec(compile(source, f"<mutant of {name}>", "exec"), namespace)
    return namespace[name]


def tracked_files() -> list[str]:
    """Files git tracks plus untracked, unignored ones: what a clean clone would hold."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    return [line for line in out.splitlines() if (ROOT / line).is_file()]


def copy_repo(target: Path) -> Path:
    """Copy the working tree, without git metadata, to ``target``."""
    for name in tracked_files():
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, destination)
    return target


def run_builder(root: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m builder --root ROOT ARGS`` in this process (the builder reads that copy's sources and contracts).

    Returns what a subprocess run would: the exit code and the captured stdout and stderr.
    """
    from builder import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["--root", str(root), *args])
    return subprocess.CompletedProcess(["python", "-m", "builder", *args], code, out.getvalue(), err.getvalue())


def run_builder_process(root: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m builder ARGS`` in a fresh interpreter inside ``root``, importing that copy's builder package.

    Only for tests that change builder/ itself or need a real process (an entry point, a hook).
    """
    return subprocess.run([sys.executable, "-m", "builder", *args], cwd=root, capture_output=True, text=True)


_VOLATILE = [
    (re.compile(r"0x[0-9a-fA-F]{6,}"), "<ADDR>"),
    (re.compile(r"\b(Python|numpy|torch|matplotlib) \d+\.\d+[\w.+]*"), r"\1 <VERSION>"),
    (re.compile(r"^(time|время):.*$", re.MULTILINE), "time: <TIMING>"),  # the timing lines, in either language
]


def normalize_text(text: str) -> str:
    """Blank out what may differ between two runs: timing lines, memory addresses, versions."""
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def normalized_outputs(nb: dict) -> list[list[str]]:
    """Every cell's outputs as comparable text, with volatile parts normalized (run with ``coalesce_streams=True``)."""
    cells = []
    for cell in nb["cells"]:
        outputs = []
        for out in cell.get("outputs", []):
            payload = {k: v for k, v in out.items() if k not in ("execution_count", "metadata")}
            if "text" in payload:  # normalize line by line, before JSON escapes the newlines (a saved .ipynb holds a list)
                text = payload["text"]
                payload["text"] = normalize_text("".join(text) if isinstance(text, list) else text)
            outputs.append(normalize_text(json.dumps(payload, sort_keys=True)))
        cells.append(outputs)
    return cells


def dependency_closure(extra: str) -> set[str]:
    """Every distribution that ``pip install -e ".[extra]"`` brings, from pyproject.toml and the installed packages' metadata.

    The names are normalized (``rfc3987-syntax``). It walks the requirements that the installed versions declare,
    with each requirement's own extras, so it says what installing the extra into a fresh environment would
    bring with today's versions; a requirement that is not installed here is a LookupError naming it.
    """
    import tomllib
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    todo = [Requirement(line) for line in project["dependencies"] + project["optional-dependencies"][extra]]
    seen: set[tuple[str, frozenset]] = set()
    while todo:
        requirement = todo.pop()
        key = (canonicalize_name(requirement.name), frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            declared = metadata.requires(requirement.name) or []
        except metadata.PackageNotFoundError:
            raise LookupError(f"{requirement.name} (needed by the {extra} extra) is not installed here; "
                              f"`pip install -e \".[{extra}]\"` installs it") from None
        for line in declared:
            nested = Requirement(line)
            wanted = requirement.extras or {""}
            if nested.marker is None or any(nested.marker.evaluate({"extra": e}) for e in wanted):
                todo.append(nested)
    return {name for name, _ in seen}
