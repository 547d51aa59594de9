"""Grade a batch of submissions: one grading process per module, then results.json and grades.csv."""

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import pairing, student
from . import report, submission
from .runner import THREAD_VARIABLES

PACKAGE_PARENT = Path(__file__).resolve().parents[2]  # the folder holding this builder package
SETUP_ALLOWANCE = 600  # seconds for one run of a course notebook, on top of the exercises' time limits


@dataclass
class Graded:
    """One row of a batch: the submission and its results.json."""

    submission: submission.Submission
    result: dict


def run_module(source_text: str, cells: dict[str, dict[str, str]], timeout: float, exercises: int) -> dict:
    """Run ``runner`` in a fresh process in an empty folder; its output ({verdicts, error, seconds})."""
    with tempfile.TemporaryDirectory(prefix="grade-job-") as tmp:
        job, out, work = Path(tmp) / "job.json", Path(tmp) / "verdicts.json", Path(tmp) / "work"
        work.mkdir()
        job.write_text(json.dumps({"source_text": source_text, "submissions": cells, "timeout": timeout}), encoding="utf-8")
        path = os.pathsep.join(filter(None, [str(PACKAGE_PARENT), os.environ.get("PYTHONPATH")]))
        env = dict(os.environ, PYTHONPATH=path, MPLBACKEND="Agg", **dict.fromkeys(THREAD_VARIABLES, "1"))
        limit = SETUP_ALLOWANCE + len(cells) * exercises * (timeout + 5)
        try:
            done = subprocess.run([sys.executable, "-m", "builder.grade.runner", str(job), str(out)], cwd=work, env=env,
                                  capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            return {"verdicts": {}, "error": f"the grading process ran past {limit:g} s", "seconds": limit}
        if not out.exists():
            return {"verdicts": {}, "error": f"the grading process failed (exit {done.returncode}):\n{done.stderr[-2000:]}", "seconds": 0.0}
        return json.loads(out.read_text(encoding="utf-8"))


def unique_stems(found: list[submission.Submission]) -> None:
    """Give submissions with the same file stem distinct output folders: alice, alice-2, ..."""
    seen: dict[str, int] = {}
    for sub in found:
        seen[sub.stem] = seen.get(sub.stem, 0) + 1
        if seen[sub.stem] > 1:
            sub.stem = f"{sub.stem}-{seen[sub.stem]}"


def grade(course, paths: list[Path], *, timeout: float = 60, module: str | None = None) -> list[Graded]:
    """Grade every submission; the ones that cannot be graded get a failing result that says why."""
    found = [submission.read(path, course, module) for path in paths]
    unique_stems(found)
    graded = {}
    for book in course.notebooks:
        subs = [s for s in found if s.module == book.name and s.error is None]
        if not subs:
            continue
        source_text = book.source.read_text(encoding="utf-8")
        exercises = student.exercises(pairing.read_source(source_text))
        worth = report.points(course.root, book.name, [e.label for e in exercises])
        run = run_module(source_text, {s.stem: s.cells for s in subs}, timeout, len(exercises))
        judged = [sum(v.get("seconds", 0.0) for v in run["verdicts"].get(s.stem, {}).values()) for s in subs]
        shared = max(run["seconds"] - sum(judged), 0.0) / len(subs)
        for sub, own in zip(subs, judged):
            verdicts = run["verdicts"].get(sub.stem)
            graded[sub.stem] = (report.results(book.title, exercises, worth, verdicts, shared + own) if verdicts
                                else report.failed(run["error"] or "the grading process returned no verdicts"))
    return [Graded(s, graded.get(s.stem) or report.failed(s.error or "not graded")) for s in found]


def write(rows: list[Graded], out: Path) -> None:
    """DIR/<stem>/results.json for each submission and DIR/grades.csv for the batch."""
    out.mkdir(parents=True, exist_ok=True)
    for row in rows:
        folder = out / row.submission.stem
        folder.mkdir(exist_ok=True)
        (folder / "results.json").write_text(report.dumps(row.result), encoding="utf-8")
    table = [(r.submission.stem, r.submission.module or "", r.result) for r in rows]
    (out / "grades.csv").write_text(report.grades_csv(table), encoding="utf-8")


def summary(row: Graded) -> str:
    """One line per submission for the terminal."""
    name = row.submission.path.name
    if not row.result["tests"]:
        return f"NOT GRADED {name}: {row.result['output'].removeprefix('Not graded: ')}"
    most = sum(t["max_score"] for t in row.result["tests"])
    return f"graded {name} ({row.submission.module}): {row.result['score']:g}/{most:g}"
