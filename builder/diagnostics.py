"""The builder's one error base: every error it reports to a person derives from ``BuilderError``.

A ``BuilderError``'s message names what was wrong and how to fix it; its ``exit_code`` (one of
``exits``) is what ``python -m builder`` returns for it. Any other exception that reaches the
command line is a bug in the builder (``exits.INTERNAL``), except an OSError (``exits.FAILED``).
"""

from dataclasses import dataclass, field

from . import exits


class BuilderError(Exception):
    """An error the builder reports to its user, with the command-line exit code it stands for."""

    exit_code = exits.FAILED


def exit_code(exc: BaseException) -> int:
    """The exit code ``exc`` stands for on the command line."""
    if isinstance(exc, BuilderError):
        return exc.exit_code
    return exits.FAILED if isinstance(exc, OSError) else exits.INTERNAL


# Catalog findings that say only "not translated yet": warnings unless translations are strict.
UNTRANSLATED_KINDS = ("missing", "stale", "orphan", "untranslatable")


@dataclass(frozen=True)
class Finding:
    """One reason ``check`` fails or warns: where (``path(line)``), its kind, and a message that names the fix.

    ``severity`` is "warning" for a unit that is only behind its English (an error when translations are strict)
    and "error" otherwise; left empty, it follows ``kind``. ``context`` places a catalog unit in its notebook
    ("Exercise 4").
    """

    path: str
    line: int
    kind: str
    message: str
    severity: str = ""
    context: str = ""
    diff: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.severity:
            object.__setattr__(self, "severity", "warning" if self.kind in UNTRANSLATED_KINDS else "error")

    @property
    def untranslated(self) -> bool:
        """Whether the finding says only that a translation is behind its English."""
        return self.severity == "warning"

    def __str__(self) -> str:
        if not self.context:
            return f"{self.path}({self.line}): {self.message}"
        text = f"{self.path}({self.line}): {self.kind}: [{self.context}]"
        return f"{text} {self.message}" if self.message else text
