"""Small float64 helpers shared by the reference generators."""

import math
from collections.abc import Sequence


def softmax(scores: Sequence[float | None]) -> list[float]:
    """Softmax of a row in which ``None`` marks a masked entry (weight exactly 0)."""
    top = max(s for s in scores if s is not None)
    exps = [0.0 if s is None else math.exp(s - top) for s in scores]
    total = math.fsum(exps)
    return [e / total for e in exps]


def dot(a: list[float], b: list[float]) -> float:
    """Correctly rounded dot product of two equal-length vectors."""
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def mean(values: list[float]) -> float:
    """Correctly rounded arithmetic mean."""
    return math.fsum(values) / len(values)
