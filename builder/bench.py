"""Benchmarks: how a notebook's nbclient run compares with the floor of starting a kernel and importing the stack."""

import statistics
import tempfile
import time

import nbformat
from nbclient import NotebookClient

from . import execute

FLOOR_CODE = "import numpy\nimport torch\nimport matplotlib.pyplot\n"
SPEED_LIMIT = 3.0  # the budget: a notebook may take at most this many floors


def floor_seconds(*, kernel_name: str = "python3", timeout: int = 600) -> float:
    """Wall time of an nbclient run of a one-cell notebook that imports numpy, torch and matplotlib.pyplot."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(FLOOR_CODE)])
    with tempfile.TemporaryDirectory(prefix="course-floor-") as tmp:
        client = NotebookClient(nb, timeout=timeout, kernel_name=kernel_name, resources={"metadata": {"path": tmp}})
        start = time.perf_counter()
        client.execute()
        return time.perf_counter() - start


def notebook_ratio(course, name: str, repeats: int = 1) -> dict:
    """Measure the floor and one notebook in the same process, ``repeats`` times each, interleaved.

    Prints floor, notebook time, their ratio (medians) and the three slowest cells of the
    fastest notebook run; returns the same numbers. Fails (ValueError) when the notebook fails.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    (nb,) = course.select([name])
    floors, runs = [], []
    for _ in range(repeats):
        floors.append(floor_seconds())
        result = execute.run(nb.ipynb)
        if result.error:
            raise ValueError(f"{nb.name} failed at cell {result.failed_cell}:\n{result.error}")
        runs.append(result)
    floor = statistics.median(floors)
    seconds = statistics.median(r.seconds for r in runs)
    best = min(runs, key=lambda r: r.seconds)
    ratio = seconds / floor
    verdict = "within" if ratio <= SPEED_LIMIT else "OVER"
    print(f"{nb.name}: floor {floor:.2f} s, notebook {seconds:.2f} s, ratio {ratio:.2f} "
          f"({verdict} the {SPEED_LIMIT:g}x budget; median of {repeats})")
    for cell in best.slowest(3):
        print(f"  slow: {cell}")
    return {"name": nb.name, "floor": floor, "notebook": seconds, "ratio": ratio,
            "slowest": [(c.index, c.seconds, c.first_line) for c in best.slowest(3)]}


def speed(course, names: list[str], repeats: int = 1) -> list[dict]:
    """``notebook_ratio`` for each named notebook (all of them when ``names`` is empty)."""
    return [notebook_ratio(course, nb.name, repeats=repeats) for nb in course.select(names)]


def within_budget(result: dict) -> bool:
    """True when a benchmark result meets its budget (for ``speed``: at most SPEED_LIMIT floors)."""
    return result.get("ratio", 0.0) <= SPEED_LIMIT
