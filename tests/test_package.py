"""The instructor's package ships only what its commands use: every module of builder/ is imported, directly or through
others, by `python -m builder` (its entry point and the commands it imports lazily). Tools the tests and benchmarks use
alone live under tools/ or tests/."""

import ast
from pathlib import Path

from builder import cli

ROOT = Path(__file__).resolve().parents[1]


def module_names() -> dict[str, Path]:
    """Each module of the builder package by its dotted name."""
    names = {}
    for path in (ROOT / "builder").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imported_by(name: str, path: Path, known: set[str]) -> set[str]:
    """The builder modules ``name`` imports (``from x import y`` counts x, and x.y when that is a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = (
                package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            )
            stem = ".".join([*base, *([node.module] if node.module else [])])
            found |= {stem, *(f"{stem}.{alias.name}" for alias in node.names)}
    # a module imports its packages' __init__ too
    found |= {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
    return found & known


def unreached(modules: dict[str, Path], roots: list[str]) -> list[str]:
    """The modules no import chain from ``roots`` reaches."""
    reached, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name in reached or name not in modules:
            continue
        reached.add(name)
        todo.extend(imported_by(name, modules[name], set(modules)))
    return sorted(set(modules) - reached)


def command_roots() -> list[str]:
    """`python -m builder`, its parser and the commands it imports lazily."""
    return ["builder.__main__", "builder.cli", *(f"builder{e}" for e in cli.COMMANDS.values() if isinstance(e, str))]


def test_every_module_of_the_package_is_used_by_its_commands():
    unused = unreached(module_names(), command_roots())
    assert not unused, (
        f"{len(unused)} module(s) of builder/ that no command imports: {unused}. "
        "A module only the tests or benchmarks use belongs under tools/ or tests/."
    )


def test_the_walk_reports_a_module_no_command_imports(tmp_path):
    """A module beside the package's that nothing imports is reported; one a command imports is not."""
    orphan = tmp_path / "orphan.py"
    orphan.write_text("import builder.canonical\n", encoding="utf-8")
    modules = module_names() | {"builder.orphan": orphan}
    assert unreached(modules, command_roots()) == ["builder.orphan"]


# The exceptions of builder/ that are not the builder's errors to a person: the student's own exception re-raised in
# the judge, and the wire's refusal, a TypeError the contracts see.
NOT_BUILDER_ERRORS = {"builder.grade.remote.StudentError", "builder.grade.wire.Refused"}


def test_every_error_of_the_builder_derives_from_builder_error_with_a_documented_exit_code():
    import importlib
    import inspect

    from builder import diagnostics, exits

    found = []
    for name in sorted(module_names()):
        if name.endswith("__main__") or name.startswith("builder.contracts"):  # contracts: the notebooks' own code
            continue
        module = importlib.import_module(name)
        for _, kind in inspect.getmembers(module, inspect.isclass):
            if issubclass(kind, BaseException) and kind.__module__ == name:
                found.append(kind)
    strays = sorted(f"{k.__module__}.{k.__qualname__}" for k in found if not issubclass(k, diagnostics.BuilderError))
    assert set(strays) == NOT_BUILDER_ERRORS, f"error classes that do not derive from BuilderError: {strays}"
    codes = {k.exit_code for k in found if issubclass(k, diagnostics.BuilderError)}
    assert codes <= set(exits.MEANINGS), f"exit codes no --help documents: {codes - set(exits.MEANINGS)}"
    assert diagnostics.exit_code(OSError("disk")) == exits.FAILED
    assert diagnostics.exit_code(KeyError("bug")) == exits.INTERNAL


def test_one_finding_type_in_the_builder():
    """check, build, translations and grade report what they find as diagnostics.Finding, defined once."""
    defined = [f"{name}.{node.name}" for name, path in module_names().items()
               for node in ast.parse(path.read_text(encoding="utf-8")).body
               if isinstance(node, ast.ClassDef) and ("Finding" in node.name or node.name == "Recorded")]
    assert defined == ["builder.diagnostics.Finding"], defined
