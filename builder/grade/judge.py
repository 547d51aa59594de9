"""One exercise judged by its contract: the course's check cell, with the student's names standing in.

This runs inside the short-lived judge process that ``runner`` forks for each exercise and
submission, over the course notebook's namespace. The student's code is not here: each of the
exercise's names is a ``remote`` stand-in that calls the student's own process with data.
"""

import inspect
import re

OUTPUT_LIMIT = 4000  # characters of feedback kept per exercise
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # object reprs: identical feedback on every run


def verdict(passed: bool, output: str, **extra) -> dict:
    """What the grader records for one exercise (``extra``: its kind, the outcome of each property)."""
    text = _ADDRESS.sub("", output)
    if len(text) > OUTPUT_LIMIT:
        text = text[:OUTPUT_LIMIT] + "\n... (feedback cut)"
    return {"passed": passed, "output": text, **extra}


def recorder(original, calls: list, returned: list | None = None):
    """A stand-in for check_exercise that runs the contract on the implementation and lets any failure out."""
    signature = inspect.signature(original)

    def check_exercise(*args, **kwargs):
        arguments = signature.bind(*args, **kwargs).arguments
        label, contract, implementation = (arguments.get(name, value) for name, value in
                                           zip(("label", "contract", "implementation"), arguments.values()))
        calls.append(label)
        result = contract(implementation)
        if returned is not None:
            returned.append(result)
        return result

    return check_exercise


def failure(exc: Exception, label: str, shown: str, violation: type | None, language: str = "en") -> dict:
    """The verdict of a check that raised: a stub, a broken contract property, the grading environment, or the student's error."""
    from . import feedback, selftest

    if isinstance(exc, NotImplementedError):
        return verdict(False, feedback.say(language, "grade not done", names=shown, error=exc), kind="not attempted")
    missing = selftest.missing_dependency(exc) or selftest.missing_dependency(exc.__cause__)  # also inside contract_call's FAIL
    if missing:
        return verdict(False, feedback.say(language, "grade environment", module=missing), kind="not graded")
    if violation is not None and isinstance(exc, violation):  # the notebook's own (inlined) ContractViolation
        return verdict(False, feedback.say(language, "grade fail", names=shown) + f"\n{exc}", kind="failed")
    name = type(exc).__name__ if type(exc).__name__ != "StudentError" else feedback.say(language, "grade an exception")
    return verdict(False, feedback.say(language, "grade error", names=shown, error=name, message=exc)
                   + feedback.localize(getattr(exc, "student_where", ""), language), kind="error")


def outcomes(found) -> list:
    """[name, holds, weight] of each property a contract table judged (``PROPERTY_OUTCOMES`` of its report), or []."""
    table = getattr(found, "outcomes", None)
    if table is None and isinstance(found, dict):
        table = found.get("PROPERTY_OUTCOMES")
    if not isinstance(table, (list, tuple)):
        return []
    return [[str(n), bool(h), float(w)] for n, h, w in table]


def property_lines(properties: list, language: str) -> str:
    """A line per property (holds or fails), for an exercise judged by a table of properties."""
    from . import feedback

    if len(properties) < 2:
        return ""
    lines = [feedback.say(language, "grade properties")]
    lines += [feedback.say(language, "grade property holds" if h else "grade property fails", property=feedback.word(language, n))
              for n, h, _ in properties]
    return "\n" + "\n".join(lines)


def run_check(namespace: dict, label: str, names: tuple[str, ...], check: str, language: str = "en") -> dict:
    """Execute the course's check cell with the judging check_exercise; the verdict on the student's code."""
    from . import feedback

    calls: list = []
    returned: list = []
    namespace["check_exercise"] = recorder(namespace["check_exercise"], calls, returned)
    shown = ", ".join(f"`{n}`" for n in names)
    try:
        exec(compile(check, f"<check cell of {label}>", "exec"), namespace)
    except Exception as exc:
        result = failure(exc, label, shown, namespace.get("ContractViolation"), language)
        found = outcomes(exc)
        if found and result.get("kind") == "failed":
            result = verdict(False, result["output"] + property_lines(found, language), kind="failed", properties=found)
        return result
    if label not in calls:
        return verdict(False, f"ERROR: the course's check cell of {label} never called check_exercise(\"{label}\", ...)", kind="error")
    found = outcomes(returned[-1] if returned else None)
    extra = {"properties": found} if found else {}
    return verdict(True, feedback.say(language, "grade pass", names=shown) + property_lines(found, language), kind="passed", **extra)


def quoted(text: str) -> str:
    """What the student's process said, as output only: every line indented, so none reads as a verdict."""
    return "\n".join("    | " + line for line in str(text).splitlines()) or "    | (nothing)"


def speak(namespace: dict, language: str) -> None:
    """The notebook's checks in ``language``: its inlined MESSAGES table updated from the catalog (in this judge only)."""
    from . import feedback

    messages = namespace.get("MESSAGES")
    if isinstance(messages, dict):
        messages.update(feedback.table(language))


def judge(namespace: dict, label: str, names: tuple[str, ...], check: str, sock, source: str | None, own: list[str],
          language: str = "en") -> dict:
    """The verdict on one exercise: the student's cells defined in their process, then the course's check here.

    The verdict's kind and its first line come from this process alone: whether the cell exists, compiles
    and defines the required names is read here (parsed, never run), and what the student's process says
    is quoted under the judge's own line. Feedback is in ``language`` (the submission's).
    """
    from . import feedback, remote, selftest, worker

    speak(namespace, language)
    problem = worker.static_problem(label, names, source)
    if problem:
        return verdict(False, feedback.localize(problem, language), kind="not attempted" if problem.startswith("MISSING") else "error")
    channel = remote.Channel(sock, namespace)
    defined = channel.define(label, names, own, source)
    notes = defined.get("notes") if type(defined.get("notes")) is list else []
    if defined.get("failed"):
        text = str(defined["failed"])
        raised = feedback.read_back("grade defining", text.split("\n")[0]) or {}
        missing = selftest.missing_dependency(ImportError(raised["message"])) if raised.get("error") in ("ImportError", "ModuleNotFoundError") else None
        if missing:  # the student's import of a module the judge has: the student process could not read it (no credit either way)
            result = verdict(False, feedback.say(language, "grade environment", module=missing), kind="not graded")
        else:
            first = feedback.say(language, "grade defining failed", label=feedback.shown_name(language, label))
            result = verdict(False, first + "\n" + quoted(text), kind="error")
    else:
        mine = worker.written(names, source)
        for name in names:
            if name in mine:
                namespace[name] = remote.proxy(channel, name)
        result = run_check(namespace, label, tuple(worker.required(names)), check, language)
    if notes:
        extra = {k: v for k, v in result.items() if k not in ("passed", "output")}
        shown = quoted("\n".join(feedback.localize(str(n), language) for n in notes))
        result = verdict(result["passed"], result["output"] + "\n" + shown, **extra)
    return result
