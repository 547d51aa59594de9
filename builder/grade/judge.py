"""One exercise judged by its contract: the student's definitions on top of the course, then the check cell.

This runs inside the short-lived process that ``runner`` forks for each exercise and submission.
The namespace it gets is the course notebook's, run up to the exercise cell on reference solutions.
"""

import ast
import inspect
import re
import traceback

OUTPUT_LIMIT = 4000  # characters of feedback kept per exercise
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # object reprs: identical feedback on every run


def verdict(passed: bool, output: str) -> dict:
    """What the grader records for one exercise."""
    text = _ADDRESS.sub("", output)
    if len(text) > OUTPUT_LIMIT:
        text = text[:OUTPUT_LIMIT] + "\n... (feedback cut)"
    return {"passed": passed, "output": text}


def defined(tree: ast.Module) -> list[ast.stmt]:
    """The top-level function and class definitions of a cell."""
    return [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def bound_by_import(node: ast.stmt) -> list[str] | None:
    """The names an import statement binds; None for anything else and for ``import *`` (names unknown)."""
    if isinstance(node, (ast.Import, ast.ImportFrom)) and all(a.name != "*" for a in node.names):
        return [a.asname or a.name.split(".")[0] for a in node.names]
    return None


def where_in_cell(exc: BaseException, filename: str) -> str:
    """' (line L of your Exercise N cell, in f)' for the innermost frame in the student's code, or ''."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    return f"\n  at line {frames[-1].lineno} of {filename[1:-1]}, in {frames[-1].name}" if frames else ""


def apply_student(namespace: dict, label: str, names: tuple[str, ...], reference: str, source: str | None) -> tuple[dict | None, list[str]]:
    """Define the student's functions and classes over the reference; (a failing verdict or None, notes).

    Top-level imports that bind new names are kept too; one that would rebind a course name is left
    out (the course has imported it already). Nothing else at the top level of the cell runs.
    """
    shown = ", ".join(f"`{n}`" for n in names)
    if source is None:
        return verdict(False, f"MISSING: the submission has no code cell starting with '# {label}:', so {shown} was not graded."), []
    filename = f"<your {label} cell>"
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        return verdict(False, f"ERROR: your {label} cell does not compile: SyntaxError at line {exc.lineno}: {exc.msg}"), []
    allowed = {node.name for node in defined(ast.parse(reference))}
    imports = [node for node in tree.body if (bound_by_import(node) or [None])[0] is not None]
    keep = [node for node in imports if not any(n in namespace and n not in allowed for n in bound_by_import(node))]
    notes = []
    for node in defined(tree):
        if node.name in namespace and node.name not in allowed:
            notes.append(f"Ignored: your cell redefines `{node.name}`, which comes from the course; the course's version was used.")
        else:
            keep.append(node)
    keep.sort(key=lambda node: node.lineno)
    missing = [n for n in names if n not in {getattr(node, 'name', None) for node in keep}]
    if missing:
        return verdict(False, f"MISSING: your {label} cell does not define {', '.join(f'`{n}`' for n in missing)}."), notes
    try:
        exec(compile(ast.Module(body=keep, type_ignores=[]), filename, "exec"), namespace)
    except Exception as exc:  # a decorator or default argument that fails while defining
        return verdict(False, f"ERROR: defining your {label} code raised {type(exc).__name__}: {exc}{where_in_cell(exc, filename)}"), notes
    return None, notes


def recorder(original, calls: list):
    """A stand-in for check_exercise that runs the contract on the implementation and lets any failure out."""
    signature = inspect.signature(original)

    def check_exercise(*args, **kwargs):
        arguments = signature.bind(*args, **kwargs).arguments
        label, contract, implementation = (arguments.get(name, value) for name, value in
                                           zip(("label", "contract", "implementation"), arguments.values()))
        calls.append(label)
        return contract(implementation)

    return check_exercise


def failure(exc: Exception, label: str, shown: str, violation: type | None) -> str:
    """Feedback for a check that raised: a stub, a broken contract property, or an error in the student's code."""
    if isinstance(exc, NotImplementedError):
        return f"NOT DONE: {shown} still raises NotImplementedError, as the stub does: {exc}"
    if violation is not None and isinstance(exc, violation):  # the notebook's own (inlined) ContractViolation
        return f"FAIL: {shown} breaks its contract.\n{exc}"
    return f"ERROR: {shown} raised {type(exc).__name__}: {exc}{where_in_cell(exc, f'<your {label} cell>')}"


def run_check(namespace: dict, label: str, names: tuple[str, ...], check: str) -> dict:
    """Execute the course's check cell with the judging check_exercise; the verdict on the student's code."""
    calls: list = []
    namespace["check_exercise"] = recorder(namespace["check_exercise"], calls)
    shown = ", ".join(f"`{n}`" for n in names)
    try:
        exec(compile(check, f"<check cell of {label}>", "exec"), namespace)
    except Exception as exc:
        return verdict(False, failure(exc, label, shown, namespace.get("ContractViolation")))
    if label not in calls:
        return verdict(False, f"ERROR: the course's check cell of {label} never called check_exercise(\"{label}\", ...)")
    return verdict(True, f"PASS: every contract property of {shown} holds.")


def judge(namespace: dict, label: str, names: tuple[str, ...], reference: str, check: str, source: str | None) -> dict:
    """The verdict on one exercise: the reference cell, the student's definitions over it, then the check."""
    exec(compile(reference, f"<reference of {label}>", "exec"), namespace)
    failed, notes = apply_student(namespace, label, names, reference, source)
    result = failed or run_check(namespace, label, names, check)
    if notes:
        result = verdict(result["passed"], result["output"] + "\n" + "\n".join(notes))
    return result
