"""Load the definitions of a notebook source (imports, functions, classes, constants) without running its cells."""

import ast
from pathlib import Path


def definitions(source: Path, names: tuple[str, ...] | None = None) -> dict:
    """Execute only the imports, defs, classes and call-free UPPER_CASE constants of a percent-format source.

    Benchmarks and tests use this to call a notebook's own functions without running its
    checks, training or figures. With ``names``, return just those definitions.
    """
    tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
    keep = [node for node in tree.body if _is_definition(node)]
    namespace: dict = {"__name__": f"notebook_{source.stem}"}
    exec(compile(ast.Module(body=keep, type_ignores=[]), str(source), "exec"), namespace)
    if names is None:
        return namespace
    missing = [n for n in names if n not in namespace]
    if missing:
        raise KeyError(f"{source} defines no {missing}")
    return {n: namespace[n] for n in names}


def _is_definition(node: ast.stmt) -> bool:
    """Imports, function and class definitions, and call-free assignments to UPPER_CASE names."""
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)):
        return True
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        calls = any(isinstance(n, ast.Call) for n in ast.walk(node))
        return not calls and all(isinstance(t, ast.Name) and t.id.isupper() for t in targets)
    return False
