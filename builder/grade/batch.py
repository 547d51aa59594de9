"""Grade a batch of submissions: judge processes in parallel, progress on stderr, then every file written.

Each module's submissions are dealt to ``jobs`` judge processes (``runner``); each streams one
line per verdict, so progress shows as it happens and timeouts in different groups overlap. The
job goes to a judge on its stdin, never through a file. Results are written only after every
judge, and so every student process, is gone.
"""

import hashlib
import json
import math
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from .. import pairing, student
from . import integrity, progress, report, sandbox, submission
from .runner import THREAD_VARIABLES

PACKAGE_PARENT = Path(__file__).resolve().parents[2]  # the folder holding this builder package
RESERVED = frozenset({"grades.csv", "summary.csv", "summary.html"})  # what ``write`` puts beside the submissions' folders
SETUP_ALLOWANCE = 600  # seconds for one run of a course notebook, on top of the exercises' time limits


@dataclass
class Graded:
    """One row of a batch: the submission and its results.json."""

    submission: submission.Submission
    result: dict


@dataclass
class Group:
    """One judge process's share of a module: its submissions and the verdicts it has streamed."""

    book: object
    keys: list[str]
    verdicts: dict
    error: str | None = None
    seconds: float = 0.0


def _judge(group: Group, job: dict, limit: float, tick) -> None:
    """Run one judge process to the end, collecting its verdict lines; a judge that dies is reported, not raised."""
    path = os.pathsep.join(filter(None, [str(PACKAGE_PARENT), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path, MPLBACKEND="Agg", PYTHONUTF8="1", PYTHONIOENCODING="utf-8",  # any locale
               **dict.fromkeys(THREAD_VARIABLES, "1"))
    try:
        integrity.verify()  # the code this judge imports is the code the batch started with
    except integrity.GraderChanged as exc:
        group.error = str(exc)
        return
    work = sandbox.private_folder("grade-judge-")
    process = subprocess.Popen(integrity.isolated_command("builder.grade.runner"), cwd=work, env=env, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    killer = threading.Timer(limit, process.kill)
    killer.start()
    try:
        feeder = threading.Thread(target=_feed, args=(process, json.dumps(job).encode()), daemon=True)
        feeder.start()
        done = False
        for line in process.stdout:
            message = json.loads(line)
            if message.get("done"):
                group.error, group.seconds, done = message["error"], message["seconds"], True
            else:
                group.verdicts.setdefault(message["key"], {})[message["label"]] = message["verdict"]
                tick()
        stderr = process.stderr.read().decode("utf-8", "backslashreplace")
        process.wait()
        if not done:
            group.error = (f"the grading process ran past {limit:g} s" if not killer.is_alive() else
                           f"the grading process stopped (exit {process.returncode}) while judging; {stderr[-1500:]}")
    finally:
        killer.cancel()
        sandbox.remove_folder(work)


def _feed(process, data: bytes) -> None:
    """Write the job to the judge's stdin and close it."""
    try:
        process.stdin.write(data)
        process.stdin.close()
    except OSError:
        pass


def stems(found: list[submission.Submission]) -> None:
    """Distinct, stable output folders: a unique stem stays; same stems get a short hash of their full path."""
    counts: dict[str, int] = {}
    for sub in found:
        sub.stem = safe_name(sub.stem)
        if sub.stem.casefold() in RESERVED:  # a folder named grades.csv would stop grades.csv from being written
            sub.stem += "-submission"
        counts[sub.stem] = counts.get(sub.stem, 0) + 1
    for sub in found:
        if counts[sub.stem] > 1:
            digest = hashlib.sha256(os.fsencode(os.path.abspath(sub.path))).hexdigest()[:8]
            sub.stem = f"{sub.stem}-{digest}"


def safe_name(name: str) -> str:
    """A file name that any file system and locale can write: undecodable bytes and surrogates escaped."""
    text = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    encoding = sys.getfilesystemencoding()  # ASCII under LC_ALL=C without UTF-8 mode: é is written as \xe9 there
    text = text.encode(encoding, "backslashreplace").decode(encoding, "replace")
    return "".join(c if c.isprintable() and c not in '/\\:*?"<>|' else "_" for c in text).strip(". ") or "submission"


def _groups(subs: list[submission.Submission], jobs: int) -> list[list[submission.Submission]]:
    """Deal submissions round-robin into at most ``jobs`` groups."""
    count = max(1, min(jobs, len(subs)))
    return [subs[i::count] for i in range(count)]


def grade(course, paths: list[Path], *, timeout: float = 60, module: str | None = None, jobs: int = 1,
          visibility: str = report.VISIBILITY, budget: float | None = None, show=None) -> list[Graded]:
    """Grade every submission; the ones that cannot be graded get a failing result that says why."""
    with sandbox.guarded():  # results are built only after every process a student started is gone
        return _grade(course, paths, timeout=timeout, module=module, jobs=jobs, visibility=visibility, budget=budget, show=show)


def _grade(course, paths: list[Path], *, timeout, module, jobs, visibility, budget, show) -> list[Graded]:
    """``grade`` inside the guard."""
    integrity.expect(integrity.digest())
    found = [submission.read(path, course, module) for path in paths]
    stems(found)
    limits = report.limits(course.root, timeout)
    hide = sorted({str(course.root)} | {str(Path(p).resolve().parent) for p in paths})
    plans, groups = {}, []
    for book in course.notebooks:
        subs = [s for s in found if s.module == book.name and s.error is None]
        if not subs:
            continue
        source_text = book.source.read_text(encoding="utf-8")
        exercises = student.exercises(pairing.read_source(source_text))
        plans[book.name] = (exercises, report.points(course.root, book.name, [e.label for e in exercises]))
        for share in _groups(subs, jobs):
            groups.append((Group(book, [s.stem for s in share], {}), {
                "source_text": source_text, "timeout": timeout, "limits": dict(limits, hide=hide, slot=len(groups)),
                "submissions": {s.stem: {"exercises": s.cells, "own": s.own} for s in share},
                "code_digest": integrity.EXPECTED["digest"]}, len(exercises)))
    meter = progress.Meter(sum(len(g.keys) * n for g, _, n in groups), len(found), show)
    threads = [threading.Thread(target=_judge, args=(g, job, min(budget or math.inf, SETUP_ALLOWANCE + len(g.keys) * n * (timeout + 5)), meter.tick))
               for g, job, n in groups]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    meter.finish()
    graded = {}
    for group, _, _ in groups:
        exercises, worth = plans[group.book.name]
        for key in group.keys:
            graded[key] = _result(group, key, exercises, worth, visibility)
    return [Graded(s, graded.get(s.stem) or report.failed(s.error or "not graded", visibility)) for s in found]


def _result(group: Group, key: str, exercises, worth: dict, visibility: str) -> dict:
    """The results.json of one submission of a group; exercises a dead judge never reached are named."""
    verdicts = group.verdicts.get(key, {})
    if not verdicts:
        return report.failed(group.error or "the grading process returned no verdicts", visibility)
    reason = group.error or "the grading process stopped first"
    for exercise in exercises:
        verdicts.setdefault(exercise.label, {"passed": False, "output": f"NOT GRADED: {reason}", "status": "not graded"})
    seconds = sum(v.get("seconds", 0.0) for v in verdicts.values())
    return report.results(group.book.title, exercises, worth, verdicts, seconds, visibility)


def write(rows: list[Graded], out: Path) -> None:
    """DIR/<stem>/results.json for each submission, DIR/grades.csv, DIR/summary.csv and DIR/summary.html."""
    out.mkdir(parents=True, exist_ok=True)
    for row in rows:
        folder = out / row.submission.stem
        folder.mkdir(exist_ok=True)
        _write_text(folder / "results.json", report.dumps(row.result))
    table = [(r.submission.stem, r.submission.module or "", r.result) for r in rows]
    _write_text(out / "grades.csv", report.grades_csv(table))
    _write_text(out / "summary.csv", report.summary_csv(table))
    _write_text(out / "summary.html", report.summary_html(table))


def _write_text(path: Path, text: str) -> None:
    """Write UTF-8 text; lone surrogates from a submission's messages are escaped, never fatal."""
    path.write_bytes(text.encode("utf-8", "backslashreplace"))


def summary(row: Graded) -> str:
    """One line per submission for the terminal."""
    name = safe_name(row.submission.path.name)
    if not row.result["tests"]:
        return f"NOT GRADED {name}: {row.result['output'].removeprefix('Not graded: ')}"
    most = sum(t["max_score"] for t in row.result["tests"])
    killer = [t["name"].split(":")[0] for t in row.result["tests"] if t.get("output", "").startswith("ERROR: your code killed")]
    note = f"; it killed its grading process at {', '.join(killer)}" if killer else ""
    return f"graded {name} ({row.submission.module}): {row.result['score']:g}/{most:g}{note}"
