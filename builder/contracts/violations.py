"""How a check fails: a contract property with its input, both values and a hint, or a notebook check with both values."""

from .messages import in_language, say

__all__ = ["ContractViolation", "contract_assert", "contract_close", "CheckFailed", "expect", "expect_close"]


class ContractViolation(AssertionError):
    """A broken contract property: which one, on what input, expected against actual, and the usual cause."""

    def __init__(self, prop, on_input, expected, actual, hint):
        self.property, self.on_input, self.expected, self.actual, self.hint = prop, on_input, expected, actual, hint
        self.shown_property = in_language(prop)  # the property and the usual cause as the reader's language writes them
        super().__init__("\n".join([say("violation", property=self.shown_property)] + [self.line(name, value) for name, value in self._fields()]))

    def _fields(self):
        """(name, value in the reader's language) of each field under the property, "to go on" once a check has set it."""
        values = (("on input", self.on_input), ("expected", self.expected), ("actual", self.actual), ("usual cause", self.hint))
        later = (("properties", getattr(self, "tally", "")), ("to go on", getattr(self, "go_on", "")))  # set by the harness, the check
        return tuple((name, in_language(value)) for name, value in values) + tuple((name, value) for name, value in later if value)

    @staticmethod
    def line(name, value):
        """One field of the message: its name in the reader's language, padded so the values line up."""
        width = max(13, 2 + max(len(say(key)) for key in ("on input", "expected", "actual", "usual cause", "properties", "to go on")))
        return f"  {say(name) + ':':<{width}}{value}"

    def _render_traceback_(self):
        """What IPython and Jupyter show instead of a traceback: the student's own frames, then the message, one line a field."""

        import textwrap

        def one_line(text):
            return " ".join(str(text).split())

        def wrapped(line):  # a long value goes on under itself, cut between words, never inside one
            indent = " " * (len(line) - len(line.lstrip()) + (len(self.line("on input", "")) - 2 if line.startswith("  ") else 2))
            return textwrap.wrap(line, 400, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False) or [line]

        message = [f"ContractViolation: {say('violation', property=one_line(self.shown_property))}"]
        lines = message + [self.line(name, one_line(value)) for name, value in self._fields()]
        return list(getattr(self, "frames", ())) + [part for line in lines for part in wrapped(line)]

    @staticmethod
    def run_properties(properties, *args):
        """Run a contract's table of named properties in order, each on ``args``; raise the first failure, saying how many hold.

        ``properties`` holds ``(name, check)`` or ``(name, check, weight)``: ``check(*args)`` raises (ContractViolation,
        or any error) when its property fails. Every property runs, so a grader can give credit for those that hold;
        a stub's NotImplementedError stops at once. Returns ``{"properties": [(name, holds, weight), ...]}``; the
        failure raised carries the same list as ``outcomes``.
        """
        outcomes, first = [], None
        for entry in properties:
            name, check, weight = (tuple(entry) + (1.0,))[:3]
            try:
                check(*args)
            except NotImplementedError:
                raise
            except Exception as error:
                outcomes.append((name, False, weight))
                first = first or error
            else:
                outcomes.append((name, True, weight))
        if first is None:
            return {"properties": outcomes}
        first.outcomes = outcomes
        if isinstance(first, ContractViolation) and len(outcomes) > 1:
            first.tally = say("properties hold", held=sum(holds for _, holds, _ in outcomes), count=len(outcomes))
            first.args = (f"{first.args[0]}\n{first.line('properties', first.tally)}",)
        raise first


def contract_assert(condition, prop, on_input, expected, actual, hint):
    """Raise ContractViolation when ``condition`` is false."""
    if not condition:
        raise ContractViolation(prop, on_input, expected, actual, hint)


def contract_close(prop, on_input, actual, expected, hint, *, atol=1e-12, rtol=1e-12):
    """Require two arrays or tensors to agree entry by entry; return the largest absolute error.

    NaN never agrees with anything, so a hidden NaN fails here instead of passing silently.
    """
    import numpy as np

    def as_array(x):
        if hasattr(x, "detach"):
            x = x.detach().cpu().double().numpy()
        return np.asarray(x, dtype=np.float64)

    unreadable = (TypeError, ValueError, AttributeError, RuntimeError, NotImplementedError)  # NotImplementedError: a meta tensor
    try:
        want = as_array(expected)
    except unreadable:
        raise TypeError(f"contract_close: the expected value must be numbers on the CPU, got {type(expected).__name__}") from None
    try:
        got = as_array(actual)
    except unreadable:
        raise ContractViolation(
            prop, on_input, say("numbers of shape", shape=want.shape), f"{type(actual).__name__} {actual!r}"[:160], hint,
        ) from None
    if got.shape != want.shape:
        raise ContractViolation(prop, on_input, say("shape", shape=want.shape), say("shape", shape=got.shape), hint)
    with np.errstate(invalid="ignore"):
        error = np.abs(got - want)
        agree = (got == want) | (error <= atol + rtol * np.abs(want))
    if not agree.all():
        where = tuple(int(i) for i in np.argwhere(~agree)[0])
        finite_errors = error[~agree][np.isfinite(error[~agree])]
        worst = f"{finite_errors.max():.3g}" if finite_errors.size else say("not finite")
        raise ContractViolation(
            prop,
            on_input,
            say("close expected", value=repr(float(want[where])), index=where, atol=atol, rtol=rtol),
            say("close actual", value=repr(float(got[where])), count=int((~agree).sum()), size=agree.size, worst=worst),
            hint,
        )
    return float(error.max()) if error.size else 0.0


class CheckFailed(AssertionError):
    """A notebook check that does not hold: what should hold, and the value found against the one required."""

    @classmethod
    def of(cls, claim, expected, actual):
        """The failure of ``claim``: its expected and actual values, one line each, in the reader's language."""
        return cls(f"{say('check failed', claim=claim)}\n  {say('expected') + ':':<10}{expected}\n  {say('actual') + ':':<10}{actual}")

    def _render_traceback_(self):
        """What IPython and Jupyter show instead of a traceback: the message alone, at most 15 lines."""
        import textwrap

        lines = [part for line in f"CheckFailed: {self}".splitlines() if line.strip()  # wrapped between words, never cut
                 for part in textwrap.wrap(line, 400, subsequent_indent=" " * 12, break_long_words=False, break_on_hyphens=False)]
        return lines[:14] + ["  ..."] if len(lines) > 15 else lines


def expect(claim, actual, relation=None, expected=None):
    """Raise CheckFailed unless ``actual relation expected`` holds; with no relation, ``actual`` must be true.

    ``claim`` says in words what should hold. Unlike ``assert``, this check survives ``python -O``,
    and its message shows both values.
    """
    import operator

    relations = {
        "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
        "in": lambda a, b: a in b, "not in": lambda a, b: a not in b, "is": operator.is_, "is not": operator.is_not,
    }
    if relation is not None and relation not in relations:
        raise ValueError(f"relation must be one of {', '.join(relations)} or None, got {relation!r}")
    holds = bool(actual) if relation is None else bool(relations[relation](actual, expected))
    if not holds:

        def shown(value):
            text = repr(value)
            return text if len(text) <= 300 else text[:300] + " ..."

        want = say("a true value") if relation is None else f"{relation} {shown(expected)}"
        raise CheckFailed.of(claim, want, shown(actual))


def expect_close(claim, actual, expected, *, atol=1e-12, rtol=1e-12):
    """Raise CheckFailed unless two arrays or tensors agree entry by entry (``contract_close``'s rule); return the largest error.

    A light stand-in for ``torch.testing.assert_close``, whose first call (torch 2.13) imports torch.distributed,
    sympy and mpmath: about a second on a 2-core CPU.
    """
    try:
        return contract_close(claim, "", actual, expected, "", atol=atol, rtol=rtol)
    except ContractViolation as failed:
        raise CheckFailed.of(claim, failed.expected, failed.actual) from None
