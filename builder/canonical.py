"""The one byte form of a reference file: sorted keys, two-space indent, scalar lists on one line."""

import json
import math

from . import exits
from .diagnostics import BuilderError

INDENT = "  "


class CanonicalError(BuilderError, ValueError):
    """A value that the canonical JSON form cannot hold (NaN, infinity, a tuple, a set...)."""

    exit_code = exits.MALFORMED


def dumps(value: object) -> str:
    """Canonical JSON text for ``value``, ending in a newline."""
    return _dump(value, 0) + "\n"


def _dump(value: object, depth: int) -> str:
    """Serialize one value at nesting ``depth``."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = INDENT * (depth + 1)
        items = [f"{inner}{_scalar(str(k))}: {_dump(value[k], depth + 1)}" for k in sorted(value)]
        return "{\n" + ",\n".join(items) + "\n" + INDENT * depth + "}"
    if isinstance(value, list):
        if all(not isinstance(item, (dict, list)) for item in value):
            return "[" + ", ".join(_scalar(item) for item in value) + "]"
        inner = INDENT * (depth + 1)
        return "[\n" + ",\n".join(inner + _dump(item, depth + 1) for item in value) + "\n" + INDENT * depth + "]"
    return _scalar(value)


def _scalar(value: object) -> str:
    """Serialize a JSON scalar; floats use Python's shortest round-trip repr."""
    if isinstance(value, float) and not math.isfinite(value):
        raise CanonicalError(f"JSON cannot hold {value!r}; store null or a finite number")
    if value is None or isinstance(value, (bool, int, float, str)):
        return json.dumps(value, ensure_ascii=False)
    raise CanonicalError(f"cannot store {type(value).__name__} {value!r} in a reference; use dict, list, str, int, float, bool or None")


def is_canonical(text: str) -> bool:
    """True when ``text`` is exactly the canonical form of the JSON it holds."""
    try:
        return dumps(json.loads(text)) == text
    except (ValueError, CanonicalError):
        return False
