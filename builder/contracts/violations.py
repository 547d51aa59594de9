"""How a contract check fails: one exception that names the property, the input, both values and a hint."""

__all__ = ["ContractViolation", "contract_assert", "contract_close"]


class ContractViolation(AssertionError):
    """A broken contract property: which one, on what input, expected against actual, and the usual cause."""

    def __init__(self, prop, on_input, expected, actual, hint):
        self.property, self.on_input, self.expected, self.actual, self.hint = prop, on_input, expected, actual, hint
        super().__init__(
            f"contract property '{prop}' failed\n"
            f"  on input:    {on_input}\n"
            f"  expected:    {expected}\n"
            f"  actual:      {actual}\n"
            f"  usual cause: {hint}"
        )


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

    want = as_array(expected)
    try:
        got = as_array(actual)
    except (TypeError, ValueError, AttributeError, RuntimeError):
        raise ContractViolation(
            prop, on_input, f"numbers of shape {want.shape}", f"{type(actual).__name__} {actual!r}"[:160], hint,
        ) from None
    if got.shape != want.shape:
        raise ContractViolation(prop, on_input, f"shape {want.shape}", f"shape {got.shape}", hint)
    with np.errstate(invalid="ignore"):
        error = np.abs(got - want)
        agree = (got == want) | (error <= atol + rtol * np.abs(want))
    if not agree.all():
        where = tuple(int(i) for i in np.argwhere(~agree)[0])
        finite_errors = error[~agree][np.isfinite(error[~agree])]
        worst = f"{finite_errors.max():.3g}" if finite_errors.size else "not finite (NaN or infinity)"
        raise ContractViolation(
            prop,
            on_input,
            f"{float(want[where])!r} at index {where} (tolerance atol={atol}, rtol={rtol})",
            f"{float(got[where])!r}; {int((~agree).sum())} of {agree.size} entries disagree, largest |difference| {worst}",
            hint,
        )
    return float(error.max()) if error.size else 0.0
