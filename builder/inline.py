"""The source text of contract functions, classes and constants, and the names each one needs."""

import ast
import builtins
import functools
import hashlib
import importlib
import importlib.util
import inspect
import symtable
import sys
import textwrap
from pathlib import Path

from . import contracts, exits
from .diagnostics import BuilderError


class InlineError(BuilderError, ValueError):
    """A name that cannot be inlined: unknown, or with a source the builder cannot isolate."""

    exit_code = exits.MALFORMED


def registry(root: Path | None = None, *, snapshot: tuple | None = None) -> dict[str, tuple[object, str]]:
    """Every inlinable name of the checkout at ``root``: its own builder/contracts, never those of another copy.

    Without ``root``, or when ``root`` has no builder/contracts, the contracts of this builder package.
    ``snapshot`` (from ``contracts_snapshot``) saves looking at the folder again within one build.
    """
    return _registry(*(snapshot or contracts_snapshot(root)))


def contracts_snapshot(root: Path | None) -> tuple[Path, tuple]:
    """The contracts folder to use for ``root`` and a stamp of its files (names, mtimes, sizes)."""
    own = Path(contracts.__file__).resolve().parent
    folder = (root / "builder" / "contracts").resolve() if root is not None else own
    if not (folder / "__init__.py").is_file():
        folder = own
    return folder, tuple((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(folder.glob("*.py")))


@functools.cache
def _registry(folder: Path, stamp: tuple) -> dict[str, tuple[object, str]]:
    """The registry of one contracts folder as it stands (``stamp``); another copy is imported under a name of its own."""
    if folder == Path(contracts.__file__).resolve().parent and stamp == _IMPORTED[0]:
        return contracts.registry()  # the contracts this process imported, unchanged since
    name = f"_course_contracts_{hashlib.sha256(repr((str(folder), stamp)).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(name, folder / "__init__.py", submodule_search_locations=[str(folder)])
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import the contracts in {folder}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.registry()


# The stamp of this package's own contracts when they were imported: edited since (new-exercise), they are imported afresh.
_IMPORTED = (contracts_snapshot(None)[1],)


def source_of(name: str, root: Path | None = None, *, snapshot: tuple | None = None) -> str:
    """The exact source of one inlinable name: a def, a class, or a module-level assignment."""
    return _source_of(name, *(snapshot or contracts_snapshot(root)))


@functools.cache
def _source_of(name: str, folder: Path, stamp: tuple) -> str:
    """``source_of`` for one contracts folder as it stands."""
    known = _registry(folder, stamp)
    if name not in known:
        raise InlineError(f"unknown function {name!r}: define it in a module of builder/contracts and list it in that module's "
                          f"__all__ (inlinable names now: {', '.join(sorted(known))})")
    obj, module_name = known[name]
    if inspect.isfunction(obj) or inspect.isclass(obj):
        return textwrap.dedent(_definition_source(obj, module_name, stamp))
    return _assignment_source(name, module_name)


def _definition_source(obj, module_name: str, stamp: tuple) -> str:
    """A top-level def or class as it stands in its file (decorators included): inspect.getsource's text, from one parse per file."""
    lines, nodes = _definitions(sys.modules[module_name].__file__, stamp)
    node = nodes.get(obj.__name__)
    if node is None:  # defined elsewhere under another name: let inspect find it
        return inspect.getsource(obj)
    start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
    return "".join(lines[start:node.end_lineno])


@functools.cache
def _definitions(path: str, stamp: tuple) -> tuple[list[str], dict]:
    """The lines of a contracts file and its top-level defs and classes by name (``stamp``: the folder as it stands)."""
    text = Path(path).read_text(encoding="utf-8")
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return text.splitlines(keepends=True), {node.name: node for node in ast.parse(text).body if isinstance(node, kinds)}


def _assignment_source(name: str, module_name: str) -> str:
    """A module-level ``NAME = ...`` statement, with the comment lines right above it."""
    text = inspect.getsource(importlib.import_module(module_name))
    lines = text.splitlines(keepends=True)
    for node in ast.parse(text).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            start = node.lineno - 1
            while start > 0 and lines[start - 1].lstrip().startswith("#"):
                start -= 1
            return "".join(lines[start:node.end_lineno])
    raise InlineError(f"{module_name}.{name} is neither a def, a class nor a simple assignment")


@functools.cache
def free_names(source: str) -> frozenset[str]:
    """Global names that ``source`` reads but neither defines nor imports, builtins excluded."""
    table = symtable.symtable(source, "<inline>", "exec")
    defined = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
    found: set[str] = set()

    def walk(scope: symtable.SymbolTable) -> None:
        for symbol in scope.get_symbols():
            at_module_level = str(scope.get_type()).lower().endswith("module")
            if symbol.is_global() or (at_module_level and symbol.is_referenced()):
                found.add(symbol.get_name())
        for child in scope.get_children():
            walk(child)

    walk(table)
    return frozenset(n for n in found - defined if not hasattr(builtins, n))


def dependencies(name: str, root: Path | None = None, *, snapshot: tuple | None = None) -> set[str]:
    """Other inlinable names that ``name``'s source uses; each needs its own region first."""
    snapshot = snapshot or contracts_snapshot(root)
    known = registry(root, snapshot=snapshot)
    needed = set(free_names(source_of(name, root, snapshot=snapshot)))
    unknown = needed - set(known)
    if unknown:
        raise InlineError(f"{name} reads {sorted(unknown)}, which nothing inlines; import them inside the function body")
    return needed
