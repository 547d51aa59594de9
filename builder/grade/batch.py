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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import pairing, student
from ..config import Notebook
from . import feedback, integrity, progress, report, sandbox, submission
from . import selftest as selftest_module
from .runner import THREAD_VARIABLES

PACKAGE_PARENT = Path(__file__).resolve().parents[2]  # the folder holding this builder package
RESERVED = frozenset({"grades.csv", "summary.csv", "summary.html"})  # what ``write`` puts beside the submissions' folders
SETUP_ALLOWANCE = 600  # seconds for one run of a course notebook, on top of the exercises' time limits


IDS = ("path", "parent", "stem")  # --id: the path as given, the folder holding the file, the file name without .ipynb
SKIPPED_FOLDERS = (".ipynb_checkpoints", "__MACOSX")  # Jupyter's autosaves and macOS's zip debris: never a submission


@dataclass
class Graded:
    """One row of a batch: the submission, its id (what grades.csv names it by) and its results.json."""

    submission: submission.Submission
    result: dict
    id: str = ""


@dataclass
class Collected:
    """What the command line names: the notebooks to grade with their ids, and the other files found, with why not."""

    paths: list[Path]
    ids: list[str]
    skipped: list[tuple[str, str]]


def collect(arguments: list[Path], how: str | None = None) -> Collected:
    """Expand folders into every .ipynb under them; give each notebook an id (``how``: None, or one of IDS).

    By default a notebook found in a folder is named by its path relative to that folder (an LMS's
    ``s0001/homework.ipynb``), and a notebook named on the command line by its file name.
    """
    paths, ids, skipped = [], [], []
    for argument in arguments:
        if argument.is_dir():
            for path in sorted(p for p in argument.rglob("*") if not set(p.relative_to(argument).parts) & set(SKIPPED_FOLDERS)):
                relative = path.relative_to(argument).as_posix()
                if path.is_file() and path.suffix.lower() == ".ipynb":
                    paths.append(path)
                    ids.append(_id(path, how, relative))
                elif path.is_file() and not path.name.startswith("."):
                    skipped.append((str(path), "not a .ipynb notebook"))
        else:
            paths.append(argument)
            ids.append(_id(argument, how, argument.name))
    return Collected(paths, unique(ids, paths), skipped)


def _id(path: Path, how: str | None, default: str) -> str:
    """A submission's id as ``--id`` chooses."""
    return {"path": str(path), "parent": path.resolve().parent.name, "stem": path.stem}.get(how or "", default)


def unique(ids: list[str], paths: list[Path]) -> list[str]:
    """The ids, with those that two files share told apart by a short hash of each file's full path (stable across runs)."""
    counts = {i: ids.count(i) for i in ids}
    return [_tagged(i, _digest(p)) if counts[i] > 1 else i for i, p in zip(ids, paths)]


def _tagged(ident: str, digest: str) -> str:
    """``alice.ipynb`` -> ``alice-1a2b3c4d.ipynb``: the hash before the extension, so the folder is ``alice-1a2b3c4d``."""
    stem, dot, suffix = ident.rpartition(".ipynb")
    return f"{stem}-{digest}{dot}{suffix}" if dot and not suffix else f"{ident}-{digest}"


def _digest(path: Path) -> str:
    """Eight hex digits of a file's absolute path."""
    return hashlib.sha256(os.fsencode(os.path.abspath(path))).hexdigest()[:8]


@dataclass
class Group:
    """One judge process's share of a module: its submissions and the verdicts it has streamed."""

    book: Notebook
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
        if process.stdout is None or process.stderr is None:  # stdout=PIPE and stderr=PIPE give both
            raise RuntimeError("the grading process started without its output pipes")
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


def stems(found: list[submission.Submission], ids: list[str] | None = None) -> None:
    """Distinct, stable output folders named after the ids (by default the file stems); same names get a hash of the path.

    A name that is one of the batch's own outputs (grades.csv, the summaries) gets ``-submission``, so it cannot stop one.
    """
    names = [safe_name(i.removesuffix(".ipynb")) for i in ids] if ids else [safe_name(sub.stem) for sub in found]
    names = [name + "-submission" if name.casefold() in RESERVED else name for name in names]
    counts = {name: names.count(name) for name in names}
    for sub, name in zip(found, names):
        sub.stem = f"{name}-{_digest(sub.path)}" if counts[name] > 1 else name


def safe_name(name: str) -> str:
    """A file name that any file system and locale can write: undecodable bytes and surrogates escaped."""
    text = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    encoding = sys.getfilesystemencoding()  # ASCII under LC_ALL=C without UTF-8 mode: é is written as \xe9 there
    text = text.encode(encoding, "backslashreplace").decode(encoding, "replace")
    return "".join(c if c.isprintable() and c not in '/\\:*?"<>|' else "_" for c in text).strip(". ") or "submission"


def shown_path(path: Path) -> str:
    """A path as the terminal can show it: undecodable bytes and control characters escaped, the folders kept."""
    text = str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else "\\x%02x" % ord(c) if ord(c) < 256 else "\\u%04x" % ord(c) for c in text)


def _groups(subs: list[submission.Submission], jobs: int) -> list[list[submission.Submission]]:
    """Deal submissions round-robin into at most ``jobs`` groups."""
    count = max(1, min(jobs, len(subs)))
    return [subs[i::count] for i in range(count)]


def grade(course, paths: list[Path], *, timeout: float = 60, module: str | None = None, jobs: int = 1,
          visibility: str = report.VISIBILITY, budget: float | None = None, show=None, ids: list[str] | None = None,
          selftest: bool = True) -> list[Graded]:
    """Grade every submission; the ones that cannot be graded get a failing result that says why.

    First (``selftest``) each module's solution edition is graded the same way and must score full
    marks: otherwise ``selftest.EnvironmentProblem`` is raised before any submission is graded.
    The grader's own code is hashed first, before any code of a notebook runs (``integrity``).
    """
    integrity.expect(integrity.digest())
    with sandbox.batch_tmp():
        return _graded(course, paths, timeout=timeout, module=module, jobs=jobs, visibility=visibility, budget=budget,
                       show=show, ids=ids, selftest=selftest)


def _graded(course, paths: list[Path], *, timeout, module, jobs, visibility, budget, show, ids, selftest) -> list[Graded]:
    """``grade`` with the batch's own TMPDIR."""
    ids = unique(ids or [Path(p).name for p in paths], list(paths))
    found = [submission.read(path, course, module) for path in paths]
    stems(found, ids)
    limits = report.limits(course.root, timeout)
    if selftest:
        # a submission without an error has its module
        modules = sorted({s.module for s in found if s.error is None and s.module is not None})
        selftest_module.prove(course, modules, timeout=timeout, limits=limits, jobs=jobs)
    with sandbox.guarded():  # results are built only after every process a student started is gone
        rows = _grade(course, found, paths, timeout=timeout, jobs=jobs, visibility=visibility, budget=budget, show=show, limits=limits)
    for row, ident in zip(rows, ids):
        row.id = ident
    return rows


def _grade(course, found, paths: list[Path], *, timeout, jobs, visibility, budget, show, limits) -> list[Graded]:
    """``grade`` inside the guard."""
    hide = sorted({str(course.root)} | {str(Path(p).resolve().parent) for p in paths})
    plans = {}
    groups: list[tuple[Group, dict, int]] = []  # (its group, its job, the exercises of its module)
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
                "submissions": {s.stem: {"exercises": s.cells, "own": s.own, "language": s.language} for s in share},
                "code_digest": integrity.EXPECTED["digest"]}, len(exercises)))
    meter = progress.Meter(sum(len(g.keys) * n for g, _, n in groups), len(found), show, forecast(groups, jobs))
    threads = [threading.Thread(target=_judge, args=(g, job, min(budget or math.inf, SETUP_ALLOWANCE + len(g.keys) * n * (timeout + 5)), meter.tick))
               for g, job, n in groups]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    meter.finish()
    graded = {}
    languages = {s.stem: s.language for s in found}
    for group, _, _ in groups:
        exercises, worth = plans[group.book.name]
        for key in group.keys:
            graded[key] = _result(group, key, exercises, worth, visibility, languages[key], limits["partial_credit"])
    return [Graded(s, graded.get(s.stem) or report.failed(s.error or "not graded", visibility)) for s in found]


def forecast(groups: list, jobs: int) -> float | None:
    """Seconds the batch should take, from the self-test's timings: each judge runs its module once and checks its share."""
    times = []
    for group, _, n in groups:
        known = selftest_module.TIMINGS.get(group.book.name)
        if known is None:
            return None
        run, check = known
        times.append(run + (len(group.keys) - 1) * n * check)
    if not times:
        return None
    lanes = max(1, min(jobs, os.cpu_count() or 1))
    return max(max(times), sum(times) / lanes)


def _result(group: Group, key: str, exercises, worth: dict, visibility: str, language: str = "en",
            partial: bool = report.PARTIAL_CREDIT) -> dict:
    """The results.json of one submission of a group, in its language; exercises a dead judge never reached are named."""
    exercises = [e for e in exercises if worth[e.label] > 0]  # an exercise worth 0 points is left out of grading
    verdicts = {label: v for label, v in group.verdicts.get(key, {}).items() if worth[label] > 0}
    if not verdicts:
        return report.failed(group.error or "the grading process returned no verdicts", visibility)
    reason = group.error or "the grading process stopped first"
    for exercise in exercises:
        verdicts.setdefault(exercise.label, {"passed": False, "output": f"NOT GRADED: {reason}", "kind": "not graded"})
    for judged in verdicts.values():  # lines the judge process wrote in English (a time limit, a lost process)
        judged.setdefault("kind", report.kind(judged["output"]))
        judged["output"] = feedback.localize(judged["output"], language)
    seconds = sum(v.get("seconds", 0.0) for v in verdicts.values())
    return report.results(group.book.title, exercises, worth, verdicts, seconds, visibility, partial)


def write(rows: list[Graded], out: Path, skipped: Sequence[tuple[str, str]] = (), feedback: Path | None = None) -> None:
    """DIR/<folder>/results.json for each submission, DIR/grades.csv, summary.csv and summary.html; with ``feedback``, one page each."""
    out.mkdir(parents=True, exist_ok=True)
    for row in rows:
        folder = out / row.submission.stem
        folder.mkdir(exist_ok=True)
        _write_text(folder / "results.json", report.dumps(row.result))
    table = [report.Row(r.id or r.submission.path.name, str(r.submission.path), r.submission.module or "", r.result) for r in rows]
    _write_text(out / "grades.csv", report.grades_csv(table))
    _write_text(out / "summary.csv", report.summary_csv(table))
    _write_text(out / "summary.html", report.summary_html(table, skipped))
    if feedback is not None:
        feedback.mkdir(parents=True, exist_ok=True)
        for row, entry in zip(rows, table):
            _write_text(feedback / f"{row.submission.stem}.html", report.feedback_html(entry, _language(row)))


def _language(row: Graded) -> str:
    """The language of a submission's feedback: its metadata.course.language (English when it has none)."""
    return getattr(row.submission, "language", None) or "en"


def _write_text(path: Path, text: str) -> None:
    """Write UTF-8 text; lone surrogates from a submission's messages are escaped, never fatal."""
    path.write_bytes(text.encode("utf-8", "backslashreplace"))


def summary(row: Graded) -> str:
    """One line per submission for the terminal, naming its path (and its id where that says more)."""
    name = shown_path(row.submission.path)
    if not row.result["tests"]:
        return f"NOT GRADED {name}: {row.result['output'].removeprefix('Not graded: ')}"
    most = sum(t["max_score"] for t in row.result["tests"])
    killer = [t["name"].split(":")[0] for t in row.result["tests"] if t.get("extra_data", {}).get("killed_parent")]
    held = [t["name"].split(":")[0] for t in row.result["tests"] if report.kind(t) == "not graded"]
    note = f"; it killed its grading process at {', '.join(killer)}" if killer else ""
    note += f"; not graded (grading environment or a stopped judge): {', '.join(held)}" if held else ""
    return f"graded {name} ({row.submission.module}): {row.result['score']:g}/{most:g}{note}"
