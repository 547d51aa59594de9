"""Argument checks shared by every public notebook function, and the bad-input test helper.

Each function here is inlined verbatim into the notebooks, so each imports what it needs
inside its own body and refers to nothing else but builtins and other inlined names.
"""

__all__ = [
    "ALLOCATION_BUDGET_BYTES", "require_int", "require_real", "require_bool", "require_choice", "require_budget",
    "as_numpy", "require_array", "require_mask", "require_tensor", "require_finite_result", "expect_raises",
]

# The most memory one call of a notebook function may ask for (Colab's free runtime has about 12 GB in all):
# a size that would need more is refused, before anything is allocated, by require_budget.
ALLOCATION_BUDGET_BYTES = 1 << 30


def require_int(name, value, *, minimum=None, maximum=None):
    """Return ``value`` as an int; reject bools, floats and anything outside [minimum, maximum]."""
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum}, got {value}")
    return value


def require_real(name, value, *, minimum=None, maximum=None, strict_minimum=False):
    """Return ``value`` as a finite float; reject bools, NaN, infinities and out-of-range values."""
    import math
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if minimum is not None and (value <= minimum if strict_minimum else value < minimum):
        relation = "greater than" if strict_minimum else "at least"
        raise ValueError(f"{name} must be {relation} {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum}, got {value}")
    return value


def require_bool(name, value):
    """Return ``value`` when it is True or False; a flag given as 0/1, a string or an array is a TypeError."""
    import numpy as np

    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return bool(value)


def require_choice(name, value, choices):
    """Return ``value`` when it is one of ``choices``; otherwise list the allowed ones."""
    if not isinstance(value, str) or value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def require_budget(what, shape, *, itemsize=8):
    """Return the bytes an array of ``shape`` with ``itemsize``-byte entries takes; refuse more than ALLOCATION_BUDGET_BYTES."""
    count = 1
    for size in shape:
        count *= int(size)
    needed = count * int(itemsize)
    if needed > ALLOCATION_BUDGET_BYTES:
        raise ValueError(
            f"{what} of shape {tuple(int(s) for s in shape)} would take {needed:,} bytes ({needed / 2**30:.3g} GiB), "
            f"over the budget of {ALLOCATION_BUDGET_BYTES:,} bytes (ALLOCATION_BUDGET_BYTES); choose smaller sizes"
        )
    return needed


def as_numpy(name, value):
    """``value`` as a NumPy array of any dtype: a dense CPU tensor is detached first (so one that requires grad converts too), any other tensor is a TypeError."""
    import sys

    import numpy as np

    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        if value.device.type != "cpu" or value.layout != torch.strided:
            raise TypeError(f"{name} must be a dense CPU tensor or array, got a {value.layout} tensor on {value.device}; use {name}.to_dense().cpu()")
        value = value.detach().numpy()
    return np.asarray(value)


def require_array(name, value, *, ndim=None, min_ndim=None, finite=True):
    """Return ``value`` as a real NumPy array (see ``as_numpy`` for tensors) with the required rank, no empty axis and finite entries."""
    import numpy as np

    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be an array of real numbers, got {type(value).__name__}")
    array = as_numpy(name, value)
    if array.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers (int or float), got dtype {array.dtype}; convert with np.asarray({name}, dtype=float)")
    if ndim is not None and array.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {array.shape}")
    if min_ndim is not None and array.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimensions, got shape {array.shape}")
    if 0 in array.shape:
        raise ValueError(f"{name} must not have an empty axis, got shape {array.shape}")
    if finite and not np.isfinite(array).all():
        raise ValueError(f"{name} must contain only finite values; found NaN or infinity")
    return array


def require_mask(name, value, *, ndim=2):
    """Return ``value`` as a boolean NumPy mask of rank ``ndim``: True/False entries, or the numbers 0 and 1."""
    import numpy as np

    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be a boolean mask, got {type(value).__name__}")
    value = as_numpy(name, value)
    array = require_array(name, value.astype(np.uint8) if value.dtype == np.bool_ else value, ndim=ndim)
    if not np.isin(array, (0, 1)).all():
        raise ValueError(f"{name} must hold only True/False (or 0/1), got other values such as {array[~np.isin(array, (0, 1))].flat[0]!r}")
    return array.astype(bool)


def require_tensor(name, value, *, ndim=None, min_ndim=None, floating=True, finite=True):
    """Return ``value`` when it is a torch.Tensor of the required rank, dtype kind and finiteness."""
    import math

    import torch

    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}; convert with torch.as_tensor({name})")
    if value.device.type != "cpu" or value.layout != torch.strided:
        raise TypeError(f"{name} must be a dense tensor on the CPU, where this notebook computes; got a {value.layout} tensor on {value.device}; use {name}.to_dense().cpu()")
    if ndim is not None and value.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {tuple(value.shape)}")
    if min_ndim is not None and value.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimensions, got shape {tuple(value.shape)}")
    if any(size == 0 for size in value.shape):
        raise ValueError(f"{name} must not have an empty axis, got shape {tuple(value.shape)}")
    if floating and not value.is_floating_point():
        raise TypeError(f"{name} must have a floating-point dtype, got {value.dtype}; use {name}.float()")
    # abs().amax() is NaN or inf exactly when an entry is (amax propagates NaN): one reduction, ~10x faster than isfinite
    if finite and floating and not math.isfinite(float(value.detach().abs().amax())):
        raise ValueError(f"{name} must contain only finite values; found NaN or infinity")
    return value


def require_finite_result(what, value, cause):
    """Return ``value`` when every entry is finite; otherwise raise FloatingPointError naming ``cause``."""
    import math

    import numpy as np

    if getattr(value, "is_meta", False):
        raise TypeError(f"{what} is a meta tensor, which holds no values to check; compute on the CPU")
    if hasattr(value, "detach"):  # a tensor: its largest magnitude is finite exactly when every entry is
        entries = value.detach().cpu()
        entries = entries if entries.is_floating_point() or entries.is_complex() else entries.double()
        finite = entries.numel() == 0 or math.isfinite(float(entries.abs().amax()))
    else:
        finite = bool(np.isfinite(np.asarray(value, dtype=float)).all())
    if not finite:
        raise FloatingPointError(f"{what} overflowed to NaN or infinity from finite input: {cause}")
    return value


def expect_raises(expected, function, *args, match=None, **kwargs):
    """Call ``function`` on bad input and check that it raises ``expected``; returns None (a check cell shows no value).

    Fails loudly when it returns normally, raises another type, or (with ``match``) raises a
    message that does not mention ``match``.
    """
    label = getattr(function, "__name__", repr(function))
    names = expected.__name__ if isinstance(expected, type) else " or ".join(e.__name__ for e in expected)
    try:
        function(*args, **kwargs)
    except expected as exc:
        message = str(exc)
        if match is not None and match not in message:
            raise AssertionError(f"{label} raised {type(exc).__name__} as required, but its message {message!r} does not mention {match!r}") from exc
        return None
    except Exception as exc:
        raise AssertionError(f"{label} should raise {names} on this input, but raised {type(exc).__name__}: {exc}") from exc
    raise AssertionError(f"{label} should raise {names} on this input, but returned normally")
