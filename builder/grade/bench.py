"""``python -m builder bench grade [NAMES]``: the time per submission of a batch of 20, against a batch of one."""

import tempfile
import time
from pathlib import Path

import nbformat

from . import batch, variants

BATCH = 20
AMORTIZED_TARGET = 0.5  # a submission in a batch of 20 costs at most half of a batch of one


def submissions(book, folder: Path, count: int) -> list[Path]:
    """``count`` made-up submissions: solved, as shipped, one exercise wrong, and wrong with its check cell emptied."""
    solved, shipped = variants.solved(book), variants.shipped(book)
    labels = variants.labels(solved)
    paths = []
    for i in range(count):
        label = labels[i % len(labels)]
        nb = [solved, shipped, variants.broken(solved, label), variants.broken(solved, label, check="pass")][i % 4]
        paths.append(folder / f"student{i:02d}.ipynb")
        nbformat.write(nb, paths[-1])
    return paths


def timed(course, paths: list[Path]) -> float:
    """Wall seconds to grade ``paths`` as one batch."""
    start = time.perf_counter()
    rows = batch.grade(course, paths)
    failed = [batch.summary(r) for r in rows if not r.result["tests"]]
    if failed:
        raise ValueError("; ".join(failed))
    return time.perf_counter() - start


def grade(course, names: list[str], repeats: int = 1) -> list[dict]:
    """For each notebook: one submission alone, then a batch of 20; the ratio of their costs per submission."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    rows = []
    for book in course.select(names):
        with tempfile.TemporaryDirectory(prefix="grade-bench-") as tmp:
            paths = submissions(book, Path(tmp), BATCH)
            alone = min(timed(course, paths[:1]) for _ in range(repeats))
            together = min(timed(course, paths) for _ in range(repeats))
        each = together / BATCH
        ratio = each / alone
        ok = ratio <= AMORTIZED_TARGET
        print(f"{book.name}: one submission alone {alone:.1f} s; {BATCH} in a batch {together:.1f} s, {each:.2f} s each; "
              f"ratio {ratio:.2f} ({'within' if ok else 'OVER'} {AMORTIZED_TARGET:g})")
        rows.append({"name": book.name, "alone": alone, "batch": together, "each": each, "ratio": ratio, "ok": ok})
    return rows
