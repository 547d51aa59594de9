"""Benchmarks, reported as ratios measured within one run.

- ``python -m tools bench speed [NAMES]``: each notebook's nbclient run against the floor of
  starting a kernel and importing numpy, torch and matplotlib.
- ``python -m tools bench check``: ``python -m builder check`` in a fresh interpreter against the
  floor of importing nbformat and jupytext in one; wall and CPU time, medians of interleaved runs.
  ``check --no-cache`` (every edition derived again) is measured beside it and reported.
- ``python -m tools bench tiled``: the course's tiled (streaming) attention against the same
  notebook's dense NumPy attention: best-of-several wall time and tracemalloc peak memory.
"""

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from builder.config import ROOT, load_course
from builder.diagnostics import BuilderError
from builder.grade.runner import THREAD_VARIABLES
from tools.notebook_code import definitions

from .grade_bench import grade as grade_batches

FLOOR_CODE = "import numpy\nimport torch\nimport matplotlib.pyplot\n"
SPEED_LIMIT = 2.5  # a notebook without its cells tagged `training` may take at most this many floors
TRAINING_LIMIT = 4.0  # and with them, at most this many

CHECK_LIMIT = 3.0  # `check` may take at most this many floors of importing nbformat and jupytext
# The floor is importing nbformat and jupytext as this environment installs them.
CHECK_FLOOR_CODE = "import nbformat, jupytext"
TILED_FUNCTION = "tiled_attention"  # `bench tiled` measures the notebook that defines it (found, not named)

# The targets of the tiled-attention issue, at d = 64 and causal.
TIME_TARGET = 1.0  # tiled / dense wall time at every length in TIME_LENGTHS
TIME_LENGTHS = (512, 1024, 2048)
MEMORY_TARGET = 1 / 40  # tiled / dense peak memory at n = 2048
GROWTH_TARGET = 2.2  # tiled peak at 4096 over tiled peak at 2048


class NotebookFailed(BuilderError, RuntimeError):
    """A notebook under benchmark stopped with an error (exit 1, not a usage error)."""


def single_threaded_blas() -> bool:
    """Ask for one BLAS thread, as the notebooks do; True when it can still take effect (NumPy not loaded yet)."""
    for variable in THREAD_VARIABLES:
        os.environ[variable] = "1"
    return "numpy" not in sys.modules


def best_seconds(function, repeats: int) -> float:
    """The fastest of ``repeats`` wall-clock runs of ``function()``."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def peak_bytes(function) -> int:
    """Peak traced allocation (Python and NumPy) while ``function()`` runs, its result included."""
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def tiled_ratios(
    lengths: tuple[int, ...] = (512, 1024, 2048, 4096),
    d: int = 64,
    tile_size: int = 128,
    repeats: int = 7,
    seed: int = 0,
    source: Path | None = None,
) -> list[dict]:
    """For each length: dense and tiled seconds and peak bytes, and their ratios (causal attention).

    The dense baseline is the notebook's ``sdpa`` with a prebuilt ``make_mask(n)`` (the mask is
    built outside both the timing and the memory measurement); the tiled run is the notebook's
    ``tiled_attention(..., causal=True)``. BLAS runs on one thread, as in the notebook.
    """
    single_threaded_blas()
    import numpy as np

    if source is None:
        source = defining_notebook(load_course(ROOT), TILED_FUNCTION).source
    nb = definitions(source, ("sdpa", "make_mask", "tiled_attention"))
    sdpa, make_mask, tiled = nb["sdpa"], nb["make_mask"], nb["tiled_attention"]
    rng = np.random.default_rng(seed)
    rows = []
    for n in lengths:
        Q, K, V = (rng.standard_normal((n, d)) for _ in range(3))
        mask = make_mask(n)
        exact = float(np.abs(sdpa(Q, K, V, mask) - tiled(Q, K, V, tile_size=tile_size, causal=True)).max())

        def dense_run():
            return sdpa(Q, K, V, mask)

        def tiled_run():
            return tiled(Q, K, V, tile_size=tile_size, causal=True)

        dense_s, tiled_s = best_seconds(dense_run, repeats), best_seconds(tiled_run, repeats)
        dense_b, tiled_b = peak_bytes(dense_run), peak_bytes(tiled_run)
        rows.append({
            "n": n, "max_error": exact, "dense_s": dense_s, "tiled_s": tiled_s, "time_ratio": tiled_s / dense_s,
            "dense_bytes": dense_b, "tiled_bytes": tiled_b, "memory_ratio": tiled_b / dense_b,
        })
    return rows


def tiled_report(rows: list[dict]) -> tuple[str, bool]:
    """A table of the measurements and a verdict against the targets."""
    lines = [f"{'n':>6} {'dense ms':>9} {'tiled ms':>9} {'time ratio':>10} {'dense MiB':>10} {'tiled MiB':>10} {'memory ratio':>13} {'max error':>10}"]
    for r in rows:
        lines.append(
            f"{r['n']:>6} {1e3 * r['dense_s']:>9.2f} {1e3 * r['tiled_s']:>9.2f} {r['time_ratio']:>10.2f} "
            f"{r['dense_bytes'] / 2**20:>10.2f} {r['tiled_bytes'] / 2**20:>10.2f} {'1/' + format(1 / r['memory_ratio'], '.0f'):>13} {r['max_error']:>10.1e}"
        )
    by_n = {r["n"]: r for r in rows}
    verdicts = []
    for n in TIME_LENGTHS:
        if n in by_n:
            verdicts.append((f"time ratio at n={n} <= {TIME_TARGET}", by_n[n]["time_ratio"] <= TIME_TARGET))
    if 2048 in by_n:
        verdicts.append((f"memory ratio at n=2048 <= 1/{1 / MEMORY_TARGET:.0f}", by_n[2048]["memory_ratio"] <= MEMORY_TARGET))
    if 2048 in by_n and 4096 in by_n:
        growth = by_n[4096]["tiled_bytes"] / by_n[2048]["tiled_bytes"]
        dense_growth = by_n[4096]["dense_bytes"] / by_n[2048]["dense_bytes"]
        verdicts.append((f"tiled peak 4096/2048 = {growth:.2f} <= {GROWTH_TARGET} (dense: {dense_growth:.2f})", growth <= GROWTH_TARGET))
    lines += [f"{'PASS' if ok else 'FAIL'}: {text}" for text, ok in verdicts]
    return "\n".join(lines), all(ok for _, ok in verdicts)


def floor_seconds(*, kernel_name: str = "python3", timeout: int = 600) -> float:
    """Wall time of a run, exactly as ``execute.run`` does it, of one cell importing numpy, torch and pyplot."""
    import nbformat

    from builder import execute
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(FLOOR_CODE)])
    nb.metadata["kernelspec"] = {"name": kernel_name, "display_name": "Python 3", "language": "python"}
    with tempfile.TemporaryDirectory(prefix="course-floor-") as tmp:
        path = Path(tmp) / "floor.ipynb"
        nbformat.write(nb, path)
        result = execute.run(path, timeout=timeout, kernel_name=kernel_name)
    if result.error:
        raise RuntimeError(f"the floor notebook failed:\n{result.error}")
    return result.seconds


def require_repeats(repeats: int) -> int:
    """``repeats`` when a benchmark can run that many rounds; a ValueError naming it otherwise."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    return repeats


def speed_verdict(seconds: list[float], floors: list[float]) -> tuple[list[float], float, str]:
    """Each time over the floor of its own round, their median, and that median against SPEED_LIMIT in words."""
    ratios = [run / floor for run, floor in zip(seconds, floors)]
    ratio = statistics.median(ratios)
    return ratios, ratio, f"{'within' if ratio <= SPEED_LIMIT else 'OVER'} the {SPEED_LIMIT:g}x budget"


def notebook_ratio(course, nb, repeats: int = 1, kernel_name: str = "python3") -> dict:
    """Measure the floor and one notebook in the same process, ``repeats`` times each, interleaved.

    Prints the median floor and notebook times, the median of the paired ratios (each run over the floor
    measured just before it) and the three slowest cells of the fastest notebook run; returns the same
    numbers. NotebookFailed when the notebook fails.
    """
    from builder import execute

    floors, runs = [], []
    for _ in range(require_repeats(repeats)):
        floors.append(floor_seconds(kernel_name=kernel_name))
        result = execute.run(nb.ipynb, kernel_name=kernel_name)
        if result.error:
            raise NotebookFailed(f"{nb.edition} failed at cell {result.failed_cell}:\n{result.error}")
        runs.append(result)
    training = training_cells(nb.ipynb)
    floor = statistics.median(floors)
    seconds = statistics.median(r.seconds for r in runs)
    best = min(runs, key=lambda r: r.seconds)
    untrained = [r.seconds - sum(c.seconds for c in r.cells if c.index in training) for r in runs]
    paired, ratio, verdict = speed_verdict(untrained, floors)
    with_training = statistics.median(r.seconds / f for r, f in zip(runs, floors))
    print(f"{nb.edition}: floor {floor:.2f} s, notebook {seconds:.2f} s, ratio {with_training:.2f} "
          f"({'within' if with_training <= TRAINING_LIMIT else 'OVER'} the {TRAINING_LIMIT:g}x budget); without its "
          f"{len(training)} cell(s) tagged training {ratio:.2f} ({verdict}; median of {repeats} paired runs: "
          f"{', '.join(f'{r:.2f}' for r in paired)})")
    for cell in best.slowest(3):
        print(f"  slow: {cell}")
    return {"name": nb.edition, "floor": floor, "notebook": seconds, "ratio": ratio, "ratio_with_training": with_training,
            "ok": ratio <= SPEED_LIMIT and with_training <= TRAINING_LIMIT,
            "slowest": [(c.index, c.seconds, c.first_line) for c in best.slowest(3)]}


def training_cells(path: Path) -> set[int]:
    """Indices of the code cells tagged ``training`` in a notebook: the ones a run without training leaves out of its time."""
    import nbformat

    cells = nbformat.read(path, as_version=4).cells
    return {i for i, cell in enumerate(cells) if cell.cell_type == "code" and "training" in cell.metadata.get("tags", [])}


def speed(course, names: list[str], repeats: int = 3, against: str | None = None, kernel_name: str = "python3") -> list[dict]:
    """``notebook_ratio`` for each named notebook (all of them when ``names`` is empty); ``speed_against`` with a revision."""
    if against is not None:
        return speed_against(course, names, against, repeats=repeats, kernel_name=kernel_name)
    return [notebook_ratio(course, nb, repeats=repeats, kernel_name=kernel_name) for nb in course.select_editions(names)]


def committed_text(root: Path, revision: str, path: Path) -> str:
    """The text of ``path`` (inside the checkout at ``root``) as committed at git ``revision``; ValueError when absent."""
    relative = path.resolve().relative_to(root.resolve()).as_posix()
    done = subprocess.run(["git", "-C", str(root), "show", f"{revision}:{relative}"], capture_output=True, text=True)
    if done.returncode != 0:
        raise ValueError(f"{relative} is not readable at revision {revision!r}: {done.stderr.strip() or 'git show failed'}")
    return done.stdout


def speed_against(course, names: list[str], revision: str, repeats: int = 3, kernel_name: str = "python3") -> list[dict]:
    """Each notebook now and as committed at ``revision``, in interleaved rounds with the floor.

    Machine speed drifts between runs far more than a small edit changes a notebook, so each round
    times the floor and both versions back to back (alternating which goes first) and the verdict
    rests on per-round ratios: now over then, and now over the floor (held to SPEED_LIMIT).
    """
    from builder import execute

    require_repeats(repeats)
    editions = course.select_editions(names)
    with tempfile.TemporaryDirectory(prefix="course-against-") as tmp:
        then_paths = []
        for nb in editions:  # read every old text before timing anything: a missing one fails at once
            then_path = Path(tmp) / nb.edition / nb.ipynb.name  # one folder per edition: editions share file names
            then_path.parent.mkdir(parents=True)
            then_path.write_text(committed_text(course.root, revision, nb.ipynb), encoding="utf-8")
            then_paths.append(then_path)
        floors, times = [], {nb.edition: {"now": [], "then": []} for nb in editions}
        for round_index in range(repeats):
            floors.append(floor_seconds(kernel_name=kernel_name))
            for nb, then_path in zip(editions, then_paths):
                order = (("now", nb.ipynb), ("then", then_path))
                for label, path in order if round_index % 2 == 0 else order[::-1]:
                    result = execute.run(path, kernel_name=kernel_name)
                    if result.error:
                        raise NotebookFailed(f"{nb.edition} ({label}) failed at cell {result.failed_cell}:\n{result.error}")
                    times[nb.edition][label].append(result.seconds)
    results = []
    for nb in editions:
        now, then = times[nb.edition]["now"], times[nb.edition]["then"]
        speedup = [a / b for a, b in zip(now, then)]
        _, ratio, verdict = speed_verdict(now, floors)
        print(f"{nb.edition}: now {statistics.median(now):.2f} s, at {revision} {statistics.median(then):.2f} s; "
              f"now / then {statistics.median(speedup):.2f} (rounds: {', '.join(f'{r:.2f}' for r in speedup)}); "
              f"now / floor {ratio:.2f} ({verdict}), then / floor {speed_verdict(then, floors)[1]:.2f}; "
              f"floor {statistics.median(floors):.2f} s")
        results.append({"name": nb.edition, "floor": statistics.median(floors), "notebook": statistics.median(now),
                        "then": statistics.median(then), "now_over_then": statistics.median(speedup), "ratio": ratio,
                        "ok": ratio <= SPEED_LIMIT})
    return results


def defining_notebook(course, function: str):
    """The one English notebook whose source defines ``function`` at top level; ValueError when none or several do."""
    found = [nb for nb in course.notebooks if f"\ndef {function}(" in nb.source.read_text(encoding="utf-8")]
    if len(found) != 1:
        raise ValueError(f"{len(found)} notebooks define {function}(): {', '.join(nb.name for nb in found) or 'none'}; bench tiled needs exactly one")
    return found[0]


def tiled(course, names: list[str], repeats: int = 7) -> list[dict]:
    """``tiled_ratios`` on the source of the notebook that defines tiled_attention, printed as a table with a verdict per target."""
    if names:
        raise ValueError("bench tiled measures Module 5's tiled_attention; it takes no notebook names")
    report, ok = tiled_report(tiled_ratios(repeats=require_repeats(repeats), source=defining_notebook(course, TILED_FUNCTION).source))
    print(report)
    return [{"name": "tiled_attention", "ok": ok}]


def grade(course, names: list[str], repeats: int = 3) -> list[dict]:
    """``bench grade``: time per submission of a batch of 20 against a batch of one; a submission that fails to grade is exit 1."""
    require_repeats(repeats)
    course.select(names)  # an unknown name is a usage error, raised before anything runs
    try:
        return grade_batches(course, names, repeats=repeats)
    except ValueError as exc:  # a made-up submission that did not grade: a failed benchmark, not a bad command line
        raise NotebookFailed(f"bench grade: {exc}") from None


def mutants(course, names: list[str], sample: int = 60, seed: int = 0) -> list[dict]:
    """``python -m tools mutants --sample 60 --seed 0`` for each notebook; ok at a 97% score without equivalents.

    Each mutant runs once (its verdict is killed or not, not a time), so it takes no ``repeats``.
    """
    from . import mutants as mutation

    results = []
    for nb in course.select(names):
        score = mutation.score_notebook(course, nb, size=sample, seed=seed)
        print(mutation.report(score, nb.source.relative_to(course.root).as_posix()), flush=True)
        results.append({"name": nb.name, "score": score.ratio, "ok": score.ratio >= mutation.TARGET})
    return results


def within_budget(result: dict) -> bool:
    """True when a benchmark result meets its targets."""
    return result["ok"]


def timed_run(command: list[str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one command; RuntimeError when it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise NotebookFailed(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def check(course, names: list[str], repeats: int = 5) -> list[dict]:
    """``check`` against the floor of importing nbformat and jupytext, each in a fresh interpreter, interleaved.

    ``check`` as run (its record current after the first run) is judged; ``check --no-cache``, which derives every
    edition again, is measured beside it and reported, not judged.
    """
    if names:
        raise ValueError("bench check times `python -m builder check` over every notebook; it takes no notebook names")
    require_repeats(repeats)
    floor_cmd = [sys.executable, "-c", CHECK_FLOOR_CODE]
    check_cmd = [sys.executable, "-m", "builder", "--root", str(course.root), "check"]
    floors, checks, derived = [], [], []
    for _ in range(repeats):
        floors.append(timed_run(floor_cmd, course.root))
        checks.append(timed_run(check_cmd, course.root))
        derived.append(timed_run(check_cmd + ["--no-cache"], course.root))
    floor_wall, floor_cpu = (statistics.median(f[i] for f in floors) for i in (0, 1))
    check_wall, check_cpu = (statistics.median(c[i] for c in checks) for i in (0, 1))
    derived_wall = statistics.median(d[0] for d in derived)
    wall, cpu = check_wall / floor_wall, check_cpu / floor_cpu
    ok = wall <= CHECK_LIMIT
    print(f"check: floor (import nbformat, jupytext) {floor_wall:.2f} s wall / {floor_cpu:.2f} s CPU; "
          f"check {check_wall:.2f} s wall / {check_cpu:.2f} s CPU; ratio {wall:.2f} wall, {cpu:.2f} CPU "
          f"({'within' if ok else 'OVER'} the {CHECK_LIMIT:g}x budget; median of {repeats}); "
          f"check --no-cache (every edition derived again) {derived_wall:.2f} s wall, ratio {derived_wall / floor_wall:.2f} (reported, not judged)")
    return [{"name": "check", "wall_ratio": wall, "cpu_ratio": cpu, "no_cache_wall_ratio": derived_wall / floor_wall, "ok": ok}]


# `bench WHAT` calls BENCHES[WHAT](course, names), with repeats=N only when --repeats is given, so each keeps its own
# default (check 5, speed 3, tiled 7, grade 3); add a benchmark with one entry here.
BENCHES = {"check": check, "speed": speed, "tiled": tiled, "grade": grade, "mutants": mutants}
