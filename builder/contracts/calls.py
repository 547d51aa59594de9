"""Call the code under judgement so that an unexpected error becomes a named contract failure."""

from .violations import ContractViolation

__all__ = ["contract_call", "contract_parts"]


def contract_call(prop, on_input, hint, function, *args, **kwargs):
    """Return ``function(*args, **kwargs)``; an error it raises on valid input fails ``prop`` instead.

    NotImplementedError (an exercise stub) and ContractViolation pass through unchanged.
    """
    try:
        return function(*args, **kwargs)
    except (NotImplementedError, ContractViolation):
        raise
    except Exception as exc:
        raise ContractViolation(
            prop, on_input, "a result (the input is valid)", f"{type(exc).__name__}: {exc}", hint
        ) from exc


def contract_parts(prop, on_input, result, names):
    """Split ``result`` into the parts called ``names``; a result of another form fails ``prop`` by name."""
    if isinstance(result, (tuple, list)) and len(result) == len(names):
        return tuple(result)
    expected = "(" + ", ".join(names) + ")"
    raise ContractViolation(
        prop, on_input, f"a tuple {expected}", f"{type(result).__name__} {result!r}"[:160], f"return {expected} together, as one tuple",
    )
