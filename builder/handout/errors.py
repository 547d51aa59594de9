"""What stops a handout export: a notebook that cannot become an offline page, and one formula that does not convert."""

from ..diagnostics import BuilderError


class HandoutError(BuilderError, RuntimeError):
    """A notebook that cannot become an offline handout: unconvertible math, a figure without caption, a network resource."""


class MathError(BuilderError, ValueError):
    """One LaTeX expression that latex2mathml cannot turn into MathML."""
