"""The cell after every exercise: run its contract, report what passes, and let a student go on after a failure.

The fallback API, for notebooks and for graders alike:

- ``check_exercise(label, contract, implementation, namespace)`` judges one exercise. An untouched
  stub (its ``NotImplementedError`` names ``label``) prints one line, "not attempted yet", and the
  notebook goes on. On any other failure (a broken contract property, an unexpected error) it puts
  the reference solution of ``label`` into ``namespace`` and raises again, so *Run all* stops at
  that cell and the next cells run on the reference. The failure renders in IPython as a short
  message (``ContractViolation._render_traceback_``): the student's frames, none of the course's.
- Without a reference (the graded edition), the failed or untouched exercise's name goes into
  ``namespace["EXERCISES_WAITING"]`` (name -> label) until its check passes; ``waiting`` makes the
  cells that need it print one line instead of running.
- ``namespace["EXERCISE_OUTCOMES"]`` maps each judged label to ``"passed"``, ``"not attempted"`` or
  the one-line reason it failed; ``exercises_on_reference(namespace)`` lists those not passed, in order.
- ``use_reference(label, namespace, reason)`` does the swap alone; ``show_reference(label)`` prints
  the solution edition of an exercise cell.

The reference comes from ``REFERENCE_SOLUTIONS[label]`` (a dict of name -> object, which the student
edition's hidden cells fill) or else from ``REFERENCE_SOURCES[label]`` (the solution cell's text,
which every edition embeds).
"""

from .messages import key_label, say, shown_label
from .violations import ContractViolation

__all__ = ["require_namespace", "use_reference", "exercises_on_reference", "check_exercise", "show_reference", "report_section", "exercise_summary",
           "report_references"]


def require_namespace(namespace, label="Exercise"):
    """Return ``namespace`` when it is a notebook's globals (a dict) and ``label`` a str; else a TypeError naming the fix."""
    if not isinstance(namespace, dict):
        raise TypeError(f"namespace must be the notebook's globals() dict, got {type(namespace).__name__}; pass globals()")
    if not isinstance(label, str):
        raise TypeError(f"an exercise label must be a str such as 'Exercise 3', got {type(label).__name__} {label!r}")
    return namespace


def use_reference(label, namespace, reason):
    """Put the reference solution of ``label`` into ``namespace`` and record ``reason``; False when there is none."""
    require_namespace(namespace, label)
    filed = namespace.get("REFERENCE_SOLUTIONS", {}).get(label)
    source = namespace.get("REFERENCE_SOURCES", {}).get(label)
    if filed is not None:
        namespace.update(filed)
        names = list(filed)
    elif source is not None:
        before = dict(namespace)
        exec(compile(source, f"<reference solution of {label}>", "exec"), namespace)
        names = [n for n, v in namespace.items() if n not in before or before[n] is not v]
    else:
        return False
    for name in names:
        try:
            namespace[name].__reference_solution__ = label
        except (AttributeError, TypeError):
            pass  # a constant: nothing to mark
    namespace.setdefault("EXERCISE_OUTCOMES", {})[label] = reason
    return True


def exercises_on_reference(namespace):
    """The labels of the exercises whose reference solution stands in for the student's, in order."""
    require_namespace(namespace)
    return [label for label, outcome in namespace.get("EXERCISE_OUTCOMES", {}).items() if outcome != "passed"]


def check_exercise(label, contract, implementation, namespace):
    """Judge one exercise with its contract check; print PASS only when the student's own code passes. Returns None.

    An untouched stub prints one line and lets the notebook go on (on the reference solution when
    there is one). Any other failure puts the reference in place (see the module docstring) and is
    raised again, as a short message: the student's own frames, the property, the input, expected
    against actual, the usual cause and how to go on. Without a reference (the graded edition) the
    names of the exercise wait in ``namespace["EXERCISES_WAITING"]`` until the check passes.
    """
    import re
    import sys
    import traceback

    def own_frames(error, most=3):
        """The innermost frames of ``error`` in the student's code, formatted: none of the course's cells, none of a library's."""
        course = {getattr(getattr(f, "__code__", None), "co_filename", None) for f in (check_exercise, contract, namespace.get("contract_call"))}
        libraries = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})
        frames = [f for f in traceback.extract_tb(getattr(error, "__traceback__", None))
                  if f.filename not in course and not f.filename.startswith(libraries) and "site-packages" not in f.filename]
        lines = [say("your frames", error=type(error).__name__)] if frames else []
        for frame in frames[-most:]:
            lines += [f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}'] + [f"    {frame.line.strip()}"] * bool(frame.line)
        return lines

    require_namespace(namespace, label)
    if not callable(contract):
        raise TypeError(f"{label}: contract must be the check function to run, got {type(contract).__name__}")
    name = getattr(implementation, "__name__", repr(implementation))
    outcomes = namespace.setdefault("EXERCISE_OUTCOMES", {})
    waiting = namespace.setdefault("EXERCISES_WAITING", {})
    if getattr(implementation, "__reference_solution__", None) == label:
        contract(implementation)
        if outcomes.get(label) != "not attempted":  # else the line that said so stands for every function of the exercise
            print(say("reference in place", label=shown_label(label), name=name))
        return None
    needs = namespace.get("EXERCISE_NEEDS")  # the graded edition's: the unfinished exercise an implementation uses
    waited = needs(implementation, label) if callable(needs) else None
    try:
        if not waited:
            contract(implementation)
    except Exception as error:
        stub = re.match(r"(Exercise \d+):", str(error)) if isinstance(error, NotImplementedError) else None
        if stub and stub.group(1) != label and stub.group(1) in waiting.values():
            waited = stub.group(1)
        elif stub and stub.group(1) == label:
            if use_reference(label, namespace, "not attempted"):
                print(say("not attempted, reference", label=shown_label(label)))
            else:
                outcomes[label], waiting[name] = "not attempted", label
                print(say("not attempted, waiting", label=shown_label(label), name=name))
            return None
        else:
            failure = error if isinstance(error, ContractViolation) else ContractViolation(
                say("crash property"), say("crash input", label=shown_label(label)),
                say("crash expected"), f"{type(error).__name__}: {error}", say("crash hint", name=name),
            )
            failure.frames = own_frames(error.__cause__ if failure is error else error)
            reason = (say("failed reason", name=name, property=failure.shown_property) if failure is error
                      else say("crash reason", name=name, error=type(error).__name__))
            if use_reference(label, namespace, reason):
                failure.go_on = say("go on, reference", label=shown_label(label), name=name)
            else:
                outcomes[label], waiting[name] = reason, label
                failure.go_on = say("go on, waiting", name=name)
            failure.args = (f"{failure.args[0]}\n{failure.line('to go on', failure.go_on)}",)
            if failure is error:
                raise
            raise failure from error
    if waited:
        outcomes[label], waiting[name] = f"waits for {waited}", label
        print(say("waits for", label=shown_label(label), waited=shown_label(waited), name=name))
        return None
    for waiter in [n for n, held in waiting.items() if held == label]:
        del waiting[waiter]
    outcomes[label] = "passed"
    print(say("pass", label=shown_label(label), name=name))
    return None  # the contract's summary stays unshown: a check cell prints its verdict, never an Out[] value


def show_reference(label, namespace=None):
    """Print the solution edition of the exercise cell ``label``, for example ``show_reference("Exercise 3")`` (or «Упражнение 3»)."""
    label = key_label(label)
    sources = require_namespace(globals() if namespace is None else namespace, label).get("REFERENCE_SOURCES", {})
    if label not in sources:
        raise ValueError(f"no exercise is labelled {label!r}; the labels are {', '.join(sources) or '(none)'}")
    print(sources[label])


def report_section(section, namespace):
    """Print '<section>: PASS' only while every exercise so far runs on the student's own code."""
    require_namespace(namespace, section)
    standing_in = exercises_on_reference(namespace)
    waited = list(dict.fromkeys(namespace.get("EXERCISES_WAITING", {}).values()))
    section = shown_label(section)
    if waited:
        print(say("section waits", section=section, labels=", ".join(map(shown_label, waited))))
    elif not standing_in:
        print(say("section pass", section=section))
    else:
        named = ", ".join(map(shown_label, standing_in[:3]))
        named = say("and more", labels=named, count=len(standing_in) - 3) if len(standing_in) > 3 else named
        print(say("section on reference", section=section, labels=named))


def exercise_summary(namespace):
    """Print the exercises passed, failed and not attempted, and name the first failing check."""
    require_namespace(namespace)
    outcomes = namespace.get("EXERCISE_OUTCOMES", {})
    skipped = [label for label, outcome in outcomes.items() if outcome == "not attempted" or outcome.startswith("waits for")]
    failed = [label for label in exercises_on_reference(namespace) if label not in skipped]

    def listed(labels):
        """Labels as the reader sees them, or the word for none."""
        return ", ".join(map(shown_label, labels)) or say("none")

    print(say("summary passed", labels=listed(label for label, o in outcomes.items() if o == "passed")))
    print(say("summary failed", labels=listed(failed)))
    print(say("summary not attempted", labels=listed(skipped)))
    if failed:
        print(say("summary first failure", label=shown_label(failed[0]), reason=outcomes[failed[0]]))


def report_references(namespace):
    """Print how many reference values the cells used or checked, and return it; fail loudly on one left unchecked.

    While cells wait for an unfinished exercise (the graded edition), the values they would have
    checked are left unchecked: say how many, and for which exercises, instead of failing.
    """
    require_namespace(namespace)
    reference, waiting = namespace["REFERENCE"], namespace.get("EXERCISES_WAITING", {})
    source, left = namespace.get("REFERENCE_SOURCE", reference.source), reference.unused()
    if left and waiting:
        used = len(reference._used)
        labels = ", ".join(map(shown_label, dict.fromkeys(waiting.values())))
        print(say("references waiting", used=used, count=used + len(left), source=source, left=len(left), labels=labels))
        return used
    count = reference.assert_all_used()
    print(say("references used", count=count, source=source))
    return count
