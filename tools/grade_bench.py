"""``python -m tools bench grade [NAMES]``: a batch of 20 graded with --jobs 1 and with --jobs 2, and one submission alone.

The mix includes an infinite loop every tenth submission, the case that made a class wait:
with two judge processes its timeout overlaps other submissions' work instead of queueing.
"""

import tempfile
import time
from pathlib import Path

import nbformat

from builder.grade import batch
from tools import grade_variants as variants

BATCH = 20
TIMEOUT = 10  # seconds per exercise in the benchmark: the cost of each infinite loop
AMORTIZED_TARGET = 0.5  # a submission in a batch of 20 costs at most half of a batch of one
JOBS_TARGET = 0.8  # --jobs 2 takes at most 0.8 of --jobs 1 on the same batch


def submissions(book, folder: Path, count: int) -> list[Path]:
    """``count`` made-up submissions: solved, as shipped, one exercise wrong, wrong with its check emptied, and a loop every tenth."""
    solved, shipped = variants.solved(book), variants.shipped(book)
    labels = variants.labels(solved)
    paths = []
    for i in range(count):
        label = labels[i % len(labels)]
        kinds = [solved, shipped, variants.broken(solved, label), variants.broken(solved, label, check="pass")]
        nb = variants.broken(solved, label, variants.LOOP) if i % 10 == 9 else kinds[i % 4]
        paths.append(folder / f"student{i:02d}.ipynb")
        nbformat.write(nb, paths[-1])
    return paths


def timed(course, paths: list[Path], jobs: int) -> float:
    """Wall seconds to grade ``paths`` as one batch with ``jobs`` judge processes."""
    start = time.perf_counter()
    rows = batch.grade(course, paths, timeout=TIMEOUT, jobs=jobs, show=lambda line: None, selftest=False)  # grading alone: the
    # self-test before a batch costs one more run of each module's solution (selftest.TIMINGS), the same for any batch size
    failed = [batch.summary(r) for r in rows if not r.result["tests"]]
    if failed:
        raise ValueError("; ".join(failed))
    return time.perf_counter() - start


def grade(course, names: list[str], repeats: int = 1) -> list[dict]:
    """For each notebook: one submission alone, then a batch of 20 with --jobs 1 and with --jobs 2; their ratios."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    rows = []
    for book in course.select(names):
        with tempfile.TemporaryDirectory(prefix="grade-bench-") as tmp:
            paths = submissions(book, Path(tmp), BATCH)
            alone = min(timed(course, paths[:1], 1) for _ in range(repeats))
            one, two = (min(timed(course, paths, jobs) for _ in range(repeats)) for jobs in (1, 2))
        each, ratio, parallel = one / BATCH, one / BATCH / alone, two / one
        ok = ratio <= AMORTIZED_TARGET and parallel <= JOBS_TARGET
        print(f"{book.name}: one submission alone {alone:.1f} s; {BATCH} in a batch: --jobs 1 {one:.1f} s ({each:.2f} s each, "
              f"ratio {ratio:.2f} to alone, target {AMORTIZED_TARGET:g}); --jobs 2 {two:.1f} s ({two / BATCH:.2f} s each, "
              f"{parallel:.2f} of --jobs 1, target {JOBS_TARGET:g}): {'within' if ok else 'OVER'}")
        rows.append({"name": book.name, "alone": alone, "batch": one, "batch_jobs2": two, "each": each, "ratio": ratio,
                     "jobs_ratio": parallel, "ok": ok})
    return rows
