"""What grading writes: points per exercise from the course config, results.json and grades.csv."""

import csv
import io
import json
import math
import os
import re
import tomllib
from pathlib import Path

from ..config import ConfigError

VISIBILITY = "visible"  # Gradescope: the contracts' feedback is meant to be read at once
VISIBILITIES = ("visible", "after_due_date", "after_published", "hidden")
LIMITS = {"memory_mb": 4096, "cpu_seconds": 600}  # per student process: RLIMIT_AS above the course's size, RLIMIT_CPU
KINDS = ("passed", "failed", "error", "timed out", "not attempted")


def points(root: Path, name: str, labels: list[str]) -> dict[str, float]:
    """Points of each exercise of notebook ``name``: its ``points`` table in [tool.course], 1 for each one not named."""
    pyproject = root / "pyproject.toml"
    entries = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["course"]["notebooks"]
    table = next((e for e in entries if e.get("name") == name), {}).get("points", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{pyproject}: points of {name} must be a table such as {{ \"Exercise 1\" = 2 }}")
    unknown = sorted(set(table) - set(labels))
    if unknown:
        raise ConfigError(f"{pyproject}: points of {name} name {unknown}, which it does not have; its exercises are {labels}")
    for label, value in table.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ConfigError(f"{pyproject}: points of {name} {label!r} must be a number >= 0, got {value!r}")
    return {label: float(table.get(label, 1)) for label in labels}


_EXERCISE = re.compile(r"^# Exercise (\d+):", re.MULTILINE)


def _line(text: str, key: str, after: str | None = None) -> int:
    """The 1-based line of ``key = ...`` in a TOML text (after the line holding ``after``, when given); 1 if not found."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if after and after in line), -1) + 1 if after else 0
    pattern = re.compile(rf"^\s*\"?{re.escape(key)}\"?\s*=")
    return next((i + 1 for i in range(start, len(lines)) if pattern.match(lines[i])), start or 1)


def config_problems(course) -> list[str]:
    """Every invalid ``points`` table and ``[tool.course.grade]`` value, as ``pyproject.toml(LINE): what is wrong``.

    ``check`` and ``--gradescope-bundle`` refuse them, so a bad value never reaches a class.
    """
    pyproject = course.root / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    problems = []
    for book in course.notebooks:
        labels = [f"Exercise {n}" for n in dict.fromkeys(_EXERCISE.findall(book.source.read_text(encoding="utf-8")))]
        try:
            points(course.root, book.name, labels)
        except ConfigError as exc:
            where = _line(text, "points", after=f'"{book.name}"')
            problems.append(f"{course.shown(pyproject)}({where}): {str(exc).split(': ', 1)[-1]}")
    try:
        limits(course.root, 1)
    except ConfigError as exc:
        key = next((k for k in LIMITS if f"] {k} " in str(exc)), "grade")
        problems.append(f"{course.shown(pyproject)}({_line(text, key, after='[tool.course.grade]')}): {str(exc).split(': ', 1)[-1]}")
    table = tomllib.loads(text)["tool"]["course"].get("grade", {})
    for key in sorted(set(table) - set(LIMITS)) if isinstance(table, dict) else ["grade"]:
        problems.append(f"{course.shown(pyproject)}({_line(text, key, after='[tool.course.grade]')}): [tool.course.grade] has no "
                        f"setting {key!r}; the settings are {sorted(LIMITS)}")
    return problems


def limits(root: Path, timeout: float) -> dict:
    """The student process's limits from ``[tool.course.grade]`` (memory_mb, cpu_seconds), checked; CPU at least the timeout."""
    pyproject = root / "pyproject.toml"
    table = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["course"].get("grade", {})
    found = dict(LIMITS)
    for key, value in table.items() if isinstance(table, dict) else ():
        if key not in LIMITS:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{pyproject}: [tool.course.grade] {key} must be a whole number >= 1, got {value!r}")
        found[key] = value
    found["cpu_seconds"] = max(found["cpu_seconds"], math.ceil(timeout) + 1)
    found["user"] = os.environ.get("GRADE_STUDENT_USER", "slot")  # as root: "slot" (a uid of its own per slot), a user name, or "" (as root)
    return found


def kind(output: str) -> str:
    """What a verdict was: passed, failed, error, timed out or not attempted."""
    for prefix, name in (("PASS", "passed"), ("FAIL", "failed"), ("TIMED OUT", "timed out"), ("NOT DONE", "not attempted"),
                         ("MISSING", "not attempted")):
        if output.startswith(prefix):
            return name
    return "error"


def results(title: str, exercises, worth: dict[str, float], verdicts: dict[str, dict], seconds: float,
            visibility: str = VISIBILITY) -> dict:
    """One submission's results.json, in Gradescope's autograder format."""
    tests = []
    for number, exercise in enumerate(exercises, start=1):
        judged = verdicts[exercise.label]
        tests.append({
            "name": f"{exercise.label}: {', '.join(exercise.names)}",
            "number": str(number),
            "score": worth[exercise.label] if judged["passed"] else 0.0,
            "max_score": worth[exercise.label],
            "status": "passed" if judged["passed"] else "failed",
            "output": printable(judged["output"]),
            "visibility": visibility,
        })
    score = sum(t["score"] for t in tests)
    total = sum(t["max_score"] for t in tests)
    return {
        "score": score,
        "execution_time": round(seconds),
        "output": f"{title}: {score:g} of {total:g} points. Each exercise was judged alone by its contract check, "
                  f"on the reference solutions of the exercises before it.",
        "visibility": visibility,
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def printable(text: str) -> str:
    """``text`` with lone surrogates (from a submission's messages or file name) written as ``\\udc80``."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def failed(reason: str, visibility: str = VISIBILITY) -> dict:
    """The results.json of a submission that could not be graded."""
    return {"score": 0.0, "execution_time": 0, "output": printable(f"Not graded: {reason}"), "visibility": visibility,
            "stdout_visibility": "hidden", "tests": []}


def dumps(result: dict) -> str:
    """The canonical text of a results.json: sorted keys, so equal results are equal bytes."""
    return json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def cell(value: str) -> str:
    """A CSV cell a spreadsheet shows as text: one starting with =, +, -, @ (a formula) gets a leading quote."""
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def _labels(rows) -> list[str]:
    """Every exercise label of the batch, in numeric order."""
    labels: list[str] = []
    for _, _, result in rows:
        for test in result["tests"]:
            label = test["name"].split(":")[0]
            if label not in labels:
                labels.append(label)
    return sorted(labels, key=lambda label: int(label.split()[-1]))


def _csv(header: list[str], body: list[list[str]]) -> str:
    """CSV text with every cell escaped."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for row in body:
        writer.writerow([cell(str(value)) for value in row])
    return out.getvalue()


def grades_csv(rows: list[tuple[str, str, dict]]) -> str:
    """grades.csv: one row per (submission, module, results), one column per exercise, total, max, status and any error."""
    labels = _labels(rows)
    body = []
    for stem, module, result in rows:
        by_label = {t["name"].split(":")[0]: f"{t['score']:g}" for t in result["tests"]}
        if result["tests"]:
            total, most, error = f"{result['score']:g}", f"{sum(t['max_score'] for t in result['tests']):g}", ""
            status = "partly graded" if any(t["output"].startswith("NOT GRADED") for t in result["tests"]) else "graded"
        else:
            total, most, status, error = "", "", "not graded", result["output"].removeprefix("Not graded: ")
        body.append([stem, module, *(by_label.get(label, "") for label in labels), total, most, status, error])
    return _csv(["submission", "module", *labels, "total", "max", "status", "error"], body)


def causes(output: str) -> str:
    """The failing property a feedback names (else its usual cause, else its first line), shortened for counting."""
    at = output.find("contract property '")
    if at >= 0:
        return output[at + len("contract property '"):].split("' failed")[0][:120]
    at = output.find("usual cause: ")
    return (output[at + len("usual cause: "):] if at >= 0 else output).split("\n")[0][:120]


def test_kind(test: dict) -> str:
    """The kind of one graded test: passed only when the judge scored it so; the output's first line (the judge's) else."""
    found = kind(test["output"])
    if test.get("status") == "passed":
        return "passed"
    return "error" if found == "passed" else found


def summary(rows) -> list[dict]:
    """Per module and exercise: counts of each kind of verdict and the three most common failing properties or causes."""
    table = []
    modules = sorted({module for _, module, r in rows if r["tests"]})
    for module in modules:
        mine = [row for row in rows if row[1] == module]
        for label in _labels(mine):
            tests = [t for _, _, r in mine for t in r["tests"] if t["name"].split(":")[0] == label]
            counts = {k: sum(test_kind(t) == k for t in tests) for k in KINDS}
            found: dict[str, int] = {}
            for t in tests:
                if test_kind(t) in ("failed", "error"):
                    found[causes(t["output"])] = found.get(causes(t["output"]), 0) + 1
            common = sorted(found.items(), key=lambda item: (-item[1], item[0]))[:3]
            shown = f"{module} {label}" if len(modules) > 1 else label
            name = tests[0]["name"] if tests else label
            table.append({"exercise": shown, "name": f"{module}: {name}" if len(modules) > 1 else name, **counts, "causes": common})
    return table


def summary_csv(rows) -> str:
    """summary.csv: per exercise, the counts of each kind of verdict and the three most common causes with counts."""
    body = [[t["exercise"], *(t[k] for k in KINDS), *("; ".join(f"{c} ({n})" for c, n in t["causes"][i:i + 1]) for i in range(3))]
            for t in summary(rows)]
    return _csv(["exercise", *KINDS, "cause 1", "cause 2", "cause 3"], body)


def summary_html(rows) -> str:
    """summary.html: one offline page, a pass-rate bar per exercise (inline SVG, patterned and labelled) and the causes."""
    from html import escape

    table = summary(rows)
    bar_height, width = 26, 420
    bars = []
    for i, t in enumerate(table):
        total = sum(t[k] for k in KINDS) or 1
        rate = t["passed"] / total
        y = i * (bar_height + 8)
        bars.append(f'<text x="0" y="{y + 18}">{escape(t["exercise"])}</text>'
                    f'<rect x="110" y="{y}" width="{width}" height="{bar_height}" fill="#ffffff" stroke="#555555"/>'
                    f'<rect x="110" y="{y}" width="{width * rate:.1f}" height="{bar_height}" fill="#0072B2" stroke="#000000"/>'
                    f'<text x="{120 + width}" y="{y + 18}">{rate:.0%} passed ({t["passed"]}/{total})</text>')
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="Pass rate per exercise" width="{width + 260}" '
           f'height="{len(table) * (bar_height + 8) + 4}" font-family="sans-serif" font-size="14">{"".join(bars)}</svg>')
    head = "".join(f"<th>{escape(k)}</th>" for k in ("exercise", *KINDS, "most common causes"))
    body = "".join("<tr>" + f"<td>{escape(t['name'])}</td>" + "".join(f"<td>{t[k]}</td>" for k in KINDS)
                   + "<td><ol>" + "".join(f"<li>{escape(c)} ({n})</li>" for c, n in t["causes"]) + "</ol></td></tr>" for t in table)
    graded = sum(1 for _, _, r in rows if r["tests"])
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Grading summary</title>"
            "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto;color:#111}table{border-collapse:collapse}"
            "td,th{border:1px solid #777;padding:.3em .6em;vertical-align:top}</style></head><body>"
            f"<h1>Grading summary</h1><p>{graded} of {len(rows)} submissions graded.</p>"
            f"<h2>Pass rate per exercise</h2>{svg}<h2>Verdicts and most common causes</h2>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></body></html>\n")
