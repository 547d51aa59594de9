"""The builder's one error base: every error it reports to a person derives from ``BuilderError``.

A ``BuilderError``'s message names what was wrong and how to fix it; its ``exit_code`` (one of
``exits``) is what ``python -m builder`` returns for it. Any other exception that reaches the
command line is a bug in the builder (``exits.INTERNAL``), except an OSError (``exits.FAILED``).
"""

from . import exits


class BuilderError(Exception):
    """An error the builder reports to its user, with the command-line exit code it stands for."""

    exit_code = exits.FAILED


def exit_code(exc: BaseException) -> int:
    """The exit code ``exc`` stands for on the command line."""
    if isinstance(exc, BuilderError):
        return exc.exit_code
    return exits.FAILED if isinstance(exc, OSError) else exits.INTERNAL


def error_classes() -> dict[int, list[str]]:
    """Each exit code and the error classes that stand for it (of the modules imported so far), for the docs and tests."""
    found: dict[int, list[str]] = {}
    todo = [BuilderError]
    while todo:
        kind = todo.pop()
        todo += kind.__subclasses__()
        found.setdefault(kind.exit_code, []).append(f"{kind.__module__}.{kind.__qualname__}")
    return {code: sorted(names) for code, names in sorted(found.items())}
