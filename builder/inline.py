"""The source text of contract functions, classes and constants, and the names each one needs."""

import ast
import builtins
import importlib
import inspect
import symtable
import textwrap

from .contracts import registry


class InlineError(ValueError):
    """A name that cannot be inlined: unknown, or with a source the builder cannot isolate."""


def source_of(name: str) -> str:
    """The exact source of one inlinable name: a def, a class, or a module-level assignment."""
    known = registry()
    if name not in known:
        raise InlineError(f"unknown function {name!r}; inlinable names: {', '.join(sorted(known))}")
    obj, module_name = known[name]
    if inspect.isfunction(obj) or inspect.isclass(obj):
        return textwrap.dedent(inspect.getsource(obj))
    return _assignment_source(name, module_name)


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


def free_names(source: str) -> set[str]:
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
    return {n for n in found - defined if not hasattr(builtins, n)}


def dependencies(name: str) -> set[str]:
    """Other inlinable names that ``name``'s source uses; each needs its own region first."""
    known = registry()
    needed = free_names(source_of(name))
    unknown = needed - set(known)
    if unknown:
        raise InlineError(f"{name} reads {sorted(unknown)}, which nothing inlines; import them inside the function body")
    return needed
