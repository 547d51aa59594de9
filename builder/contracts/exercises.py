"""The cell after every exercise: run its contract, report what passes, and let a student go on after a failure.

The fallback API, for notebooks and for graders alike:

- ``check_exercise(label, contract, implementation, namespace)`` judges one exercise. On any failure
  (a stub, a broken contract property, an unexpected error) it puts the reference solution of
  ``label`` into ``namespace`` and raises again, so *Run all* stops at that cell and the next cells
  run on the reference.
- ``namespace["EXERCISE_OUTCOMES"]`` maps each judged label to ``"passed"`` or to the one-line reason
  the reference stands in; ``exercises_on_reference(namespace)`` lists the latter, in order.
- ``use_reference(label, namespace, reason)`` does the swap alone; ``show_reference(label)`` prints
  the solution edition of an exercise cell.

The reference comes from ``REFERENCE_SOLUTIONS[label]`` (a dict of name -> object, which the student
edition's hidden cells fill) or else from ``REFERENCE_SOURCES[label]`` (the solution cell's text,
which every edition embeds).
"""

from .violations import ContractViolation

__all__ = ["require_namespace", "use_reference", "exercises_on_reference", "check_exercise", "show_reference", "report_section", "exercise_summary"]


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
    """Judge one exercise with its contract check; print PASS only when the student's own code passes.

    On a failure the reference solution takes the implementation's place in ``namespace`` (see the
    module docstring) and the failure is raised again, naming the property, the input, expected
    against actual and the usual cause, plus how to go on.
    """
    require_namespace(namespace, label)
    if not callable(contract):
        raise TypeError(f"{label}: contract must be the check function to run, got {type(contract).__name__}")
    name = getattr(implementation, "__name__", repr(implementation))
    outcomes = namespace.setdefault("EXERCISE_OUTCOMES", {})
    if getattr(implementation, "__reference_solution__", None) == label:
        summary = contract(implementation)
        print(f"{label}: the reference solution of {name} is in place, not yours. Fix your cell, run it, then run this one.")
        return summary
    go_on = (
        f"Later cells now use the reference solution of {label}: to go on, click this cell and choose Runtime → Run after "
        f"(Colab), or select the next cell and choose Run → Run Selected Cell and All Below (JupyterLab). "
        f"show_reference({label!r}) prints the solution; fix your cell, then run it and this one again."
    )
    try:
        summary = contract(implementation)
    except NotImplementedError:
        if not use_reference(label, namespace, f"{name} is still a stub"):
            raise
        raise NotImplementedError(f"{label}: {name} is still a stub. {go_on}") from None
    except ContractViolation as failure:
        if use_reference(label, namespace, f"{name} failed '{failure.property}'"):
            failure.args = (f"{failure.args[0]}\n{go_on}",)
        raise
    except Exception as error:
        prop = "the contract check runs to the end on this implementation"
        if not use_reference(label, namespace, f"{name} broke its contract check ({type(error).__name__})"):
            raise
        raise ContractViolation(
            prop, f"{label}'s contract inputs", "a result the contract can judge", f"{type(error).__name__}: {error}",
            f"the traceback above shows the line of {name} that raised. {go_on}",
        ) from error
    outcomes[label] = "passed"
    print(f"{label}: PASS, every contract property of {name} holds")
    return summary


def show_reference(label, namespace=None):
    """Print the solution edition of the exercise cell ``label``, for example ``show_reference("Exercise 3")``."""
    sources = require_namespace(globals() if namespace is None else namespace, label).get("REFERENCE_SOURCES", {})
    if label not in sources:
        raise ValueError(f"no exercise is labelled {label!r}; the labels are {', '.join(sources) or '(none)'}")
    print(sources[label])


def report_section(section, namespace):
    """Print '<section>: PASS' only while every exercise so far runs on the student's own code."""
    require_namespace(namespace, section)
    standing_in = exercises_on_reference(namespace)
    if not standing_in:
        print(f"{section}: PASS")
        return
    print(
        f"{section}: the checks hold, but with the reference solution standing in for {', '.join(standing_in)}: "
        f"not a pass of your own code yet"
    )


def exercise_summary(namespace):
    """Print how every exercise ended: passed with the student's own code, or run on the reference, by name."""
    require_namespace(namespace)
    outcomes = namespace.get("EXERCISE_OUTCOMES", {})
    passed = [label for label, outcome in outcomes.items() if outcome == "passed"]
    print(f"Exercises passed with your own code: {', '.join(passed) or 'none'}")
    standing_in = exercises_on_reference(namespace)
    if standing_in:
        print("Exercises that used the reference solution (rerun each one's cells once you have fixed it):")
        for label in standing_in:
            print(f"  {label}: {outcomes[label]}")
