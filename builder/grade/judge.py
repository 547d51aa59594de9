"""One exercise judged by its contract: the course's check cell, with the student's names standing in.

This runs inside the short-lived judge process that ``runner`` forks for each exercise and
submission, over the course notebook's namespace. The student's code is not here: each of the
exercise's names is a ``remote`` stand-in that calls the student's own process with data.
"""

import inspect
import re

OUTPUT_LIMIT = 4000  # characters of feedback kept per exercise
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # object reprs: identical feedback on every run


def verdict(passed: bool, output: str) -> dict:
    """What the grader records for one exercise."""
    text = _ADDRESS.sub("", output)
    if len(text) > OUTPUT_LIMIT:
        text = text[:OUTPUT_LIMIT] + "\n... (feedback cut)"
    return {"passed": passed, "output": text}


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
    name = type(exc).__name__ if type(exc).__name__ != "StudentError" else "an exception"
    return f"ERROR: {shown} raised {name}: {exc}{getattr(exc, 'student_where', '')}"


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


def quoted(text: str) -> str:
    """What the student's process said, as output only: every line indented, so none reads as a verdict."""
    return "\n".join("    | " + line for line in str(text).splitlines()) or "    | (nothing)"


def judge(namespace: dict, label: str, names: tuple[str, ...], check: str, sock, source: str | None, own: list[str]) -> dict:
    """The verdict on one exercise: the student's cells defined in their process, then the course's check here.

    The verdict's kind and its first line come from this process alone: whether the cell exists, compiles
    and defines the required names is read here (parsed, never run), and what the student's process says
    is quoted under the judge's own line.
    """
    from . import remote, worker

    problem = worker.static_problem(label, names, source)
    if problem:
        return verdict(False, problem)
    channel = remote.Channel(sock, namespace)
    defined = channel.define(label, names, own, source)
    notes = defined.get("notes") if type(defined.get("notes")) is list else []
    if defined.get("failed"):
        result = verdict(False, f"ERROR: defining your {label} code failed; the process running it said:\n{quoted(defined['failed'])}")
    else:
        mine = worker.written(names, source)
        for name in names:
            if name in mine:
                namespace[name] = remote.proxy(channel, name)
        result = run_check(namespace, label, tuple(worker.required(names)), check)
    if notes:
        result = verdict(result["passed"], result["output"] + "\n" + quoted("\n".join(map(str, notes))))
    return result
