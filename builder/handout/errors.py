"""What stops a handout export: a notebook that cannot become an offline page, and one formula that does not convert."""


class HandoutError(RuntimeError):
    """A notebook that cannot become an offline handout: unconvertible math, a figure without caption, a network resource."""


class MathError(ValueError):
    """One LaTeX expression that latex2mathml cannot turn into MathML."""
