"""What grading writes: points per exercise from the course config, results.json and grades.csv."""

import csv
import io
import json
import math
import os
import re
import tomllib
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any, NamedTuple

from ..config import ConfigError

VISIBILITY = "visible"  # Gradescope: the contracts' feedback is meant to be read at once
VISIBILITIES = ("visible", "after_due_date", "after_published", "hidden")
LIMITS = {"memory_mb": 4096, "cpu_seconds": 600}  # per student process: RLIMIT_AS above the course's size, RLIMIT_CPU
KINDS = ("passed", "failed", "error", "timed out", "not attempted", "not graded")
PARTIAL_CREDIT = False  # without [tool.course.grade] partial_credit, an exercise scores all or nothing
SETTINGS = {*LIMITS, "partial_credit"}  # every key [tool.course.grade] may hold


class Row(NamedTuple):
    """One submission in the tables: its id, its path as given, its module and its results.json."""

    id: str
    path: str
    module: str
    result: dict


def points(root: Path, name: str, labels: list[str]) -> dict[str, float]:
    """Points of each exercise of notebook ``name``: its ``points`` table in [tool.course], 1 for each one not named."""
    pyproject = root / "pyproject.toml"
    entries = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["course"]["notebooks"]
    entry: dict = next((e for e in entries if e.get("name") == name), {})
    table = entry.get("points", {})
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
        key = next((k for k in SETTINGS if f"] {k} " in str(exc)), "grade")
        problems.append(f"{course.shown(pyproject)}({_line(text, key, after='[tool.course.grade]')}): {str(exc).split(': ', 1)[-1]}")
    table = tomllib.loads(text)["tool"]["course"].get("grade", {})
    for key in sorted(set(table) - SETTINGS) if isinstance(table, dict) else ["grade"]:
        problems.append(f"{course.shown(pyproject)}({_line(text, key, after='[tool.course.grade]')}): [tool.course.grade] has no "
                        f"setting {key!r}; the settings are {sorted(SETTINGS)}")
    return problems


def limits(root: Path, timeout: float) -> dict:
    """The student process's limits from ``[tool.course.grade]`` (memory_mb, cpu_seconds), checked; CPU at least the timeout."""
    pyproject = root / "pyproject.toml"
    table = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["course"].get("grade", {})
    found = dict(LIMITS)
    for key, value in table.items() if isinstance(table, dict) else ():
        if key == "partial_credit" and not isinstance(value, bool):
            raise ConfigError(f"{pyproject}: [tool.course.grade] partial_credit must be true or false, got {value!r}")
        if key not in LIMITS:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{pyproject}: [tool.course.grade] {key} must be a whole number >= 1, got {value!r}")
        found[key] = value
    found["cpu_seconds"] = max(found["cpu_seconds"], math.ceil(timeout) + 1)
    partial = bool(table.get("partial_credit", PARTIAL_CREDIT)) if isinstance(table, dict) else PARTIAL_CREDIT
    # the student user, as root: "slot" (a uid of its own per slot), a user name, or "" (as root)
    return {**found, "partial_credit": partial, "user": os.environ.get("GRADE_STUDENT_USER", "slot")}


def kind(test) -> str:
    """What a verdict was (one of KINDS): from a test's extra_data, else from its output's first word."""
    if isinstance(test, dict):
        found = test.get("extra_data", {}).get("kind") or test.get("kind")
        if found in KINDS:
            return found
        test = test.get("output", "")
    for prefix, name in (("PASS", "passed"), ("FAIL", "failed"), ("TIMED OUT", "timed out"), ("NOT DONE", "not attempted"),
                         ("MISSING", "not attempted"), ("NOT GRADED", "not graded")):
        if test.startswith(prefix):
            return name
    return "error"


def credit(judged: dict, worth: float, partial: bool) -> float:
    """An exercise's score: all its points when it passes; with ``partial``, a failed contract's share of properties that hold."""
    if judged["passed"]:
        return worth
    properties = judged.get("properties") or []
    if not partial or kind(judged) != "failed" or len(properties) < 2:
        return 0.0
    total = sum(float(w) for _, _, w in properties)
    held = sum(float(w) for _, holds, w in properties if holds)
    return round(worth * held / total, 6) if total > 0 and held < total else 0.0


def results(title: str, exercises, worth: dict[str, float], verdicts: dict[str, dict], seconds: float,
            visibility: str = VISIBILITY, partial: bool = PARTIAL_CREDIT) -> dict:
    """One submission's results.json, in Gradescope's autograder format; each test's extra_data holds its kind and properties."""
    tests: list[dict[str, Any]] = []
    for number, exercise in enumerate(exercises, start=1):
        judged = verdicts[exercise.label]
        extra = {"kind": kind(judged), **({"killed_parent": True} if judged.get("killed_parent") else {})}
        if judged.get("properties"):
            extra["properties"] = [{"name": n, "holds": bool(h), "weight": float(w)} for n, h, w in judged["properties"]]
        tests.append({
            "name": f"{exercise.label}: {', '.join(exercise.names)}",
            "number": str(number),
            "score": credit(judged, worth[exercise.label], partial),
            "max_score": worth[exercise.label],
            "status": "passed" if judged["passed"] else "failed",
            "output": printable(judged["output"]),
            "visibility": visibility,
            "extra_data": extra,
        })
    score = round(sum(t["score"] for t in tests), 6)
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


def _labels(rows: list[Row]) -> list[str]:
    """Every exercise label of the batch, in numeric order."""
    labels: list[str] = []
    for row in rows:
        for test in row.result["tests"]:
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


def status(result: dict) -> str:
    """graded, partly graded (some exercise not graded: a stopped judge, the grading environment) or not graded."""
    if not result["tests"]:
        return "not graded"
    return "partly graded" if any(kind(t) == "not graded" for t in result["tests"]) else "graded"


def grades_csv(rows: list[Row]) -> str:
    """grades.csv: one row per submission (id, path, module), one column per exercise, total, max, status and any error."""
    labels = _labels(rows)
    body = []
    for row in rows:
        result = row.result
        by_label = {t["name"].split(":")[0]: f"{t['score']:g}" for t in result["tests"]}
        if result["tests"]:
            total, most, error = f"{result['score']:g}", f"{sum(t['max_score'] for t in result['tests']):g}", ""
        else:
            total, most, error = "", "", result["output"].removeprefix("Not graded: ")
        body.append([row.id, row.path, row.module, *(by_label.get(label, "") for label in labels), total, most, status(result), error])
    return _csv(["id", "path", "module", *labels, "total", "max", "status", "error"], body)


def causes(output: str) -> str:
    """The failing property a feedback names (else its usual cause, else its first line), shortened for counting."""
    at = output.find("contract property '")
    if at >= 0:
        return output[at + len("contract property '"):].split("' failed")[0][:120]
    at = output.find("usual cause: ")
    return (output[at + len("usual cause: "):] if at >= 0 else output).split("\n")[0][:120]


def test_kind(test: dict) -> str:
    """The kind of one graded test: passed only when the judge scored it so (its status), else the judge's kind."""
    found = kind(test)
    if test.get("status") == "passed":
        return "passed"
    return "error" if found == "passed" else found


def _cause(test: dict) -> str:
    """What a failed test is counted under: its first failing property when the contract is a table, else ``causes``."""
    failing = [p["name"] for p in test.get("extra_data", {}).get("properties", []) if not p["holds"]]
    return failing[0][:120] if failing else causes(test["output"])


def summary(rows: list[Row]) -> list[dict]:
    """Per module and exercise: counts of each kind of verdict, the three most common causes, the failures of each property."""
    table = []
    modules = sorted({row.module for row in rows if row.result["tests"]})
    for module in modules:
        mine = [row for row in rows if row.module == module]
        for label in _labels(mine):
            tests = [t for row in mine for t in row.result["tests"] if t["name"].split(":")[0] == label]
            counts = {k: sum(test_kind(t) == k for t in tests) for k in KINDS}
            found: dict[str, int] = {}
            failures: dict[str, int] = {}
            for t in tests:
                if test_kind(t) in ("failed", "error"):
                    found[_cause(t)] = found.get(_cause(t), 0) + 1
                for prop in t.get("extra_data", {}).get("properties", []):
                    failures[prop["name"]] = failures.get(prop["name"], 0) + (not prop["holds"])
            common = sorted(found.items(), key=lambda item: (-item[1], item[0]))[:3]
            shown = f"{module} {label}" if len(modules) > 1 else label
            name = tests[0]["name"] if tests else label
            table.append({"exercise": shown, "name": f"{module}: {name}" if len(modules) > 1 else name, **counts,
                          "causes": common, "property failures": failures})
    return table


def summary_csv(rows: list[Row]) -> str:
    """summary.csv: per exercise, the counts of each kind of verdict, the three most common causes, failures per property."""
    body = [[t["exercise"], *(t[k] for k in KINDS), *("; ".join(f"{c} ({n})" for c, n in t["causes"][i:i + 1]) for i in range(3)),
             "; ".join(f"{name} ({n})" for name, n in t["property failures"].items())]
            for t in summary(rows)]
    return _csv(["exercise", *KINDS, "cause 1", "cause 2", "cause 3", "failures per property"], body)


def distribution(rows: list[Row]) -> list[dict]:
    """Per module: the graded submissions' totals, counted in bins of width max/10 (1 up to 10 points) and a bin of full marks."""
    found = []
    for module in sorted({row.module for row in rows if row.result["tests"]}):
        graded = [row.result["score"] for row in rows if row.module == module and row.result["tests"]]
        most = max(sum(t["max_score"] for t in row.result["tests"]) for row in rows if row.module == module and row.result["tests"])
        width = 1.0 if most <= 10 else most / 10
        edges = [width * i for i in range(math.ceil(most / width))] if most > 0 else []
        bins = [{"name": f"{low:g}–{min(low + width, most):g}" if width != 1 else f"{low:g}", "count": sum(low <= g < low + width and g < most for g in graded)}
                for low in edges]
        bins.append({"name": f"{most:g}", "count": sum(g >= most for g in graded)})
        scores = sorted(graded)
        found.append({"module": module, "max": most, "bins": bins, "count": len(graded), "median": scores[len(scores) // 2]})
    return found


_STYLE = ("body{font-family:sans-serif;max-width:60em;margin:2em auto;color:#111;line-height:1.4}table{border-collapse:collapse}"
          "td,th{border:1px solid #777;padding:.3em .6em;vertical-align:top;text-align:left}pre{white-space:pre-wrap;margin:0}")


def _bars(items: list[tuple[str, float, str]], label: str) -> str:
    """An inline SVG of horizontal bars: (name, fraction 0..1, text after the bar), outlined so they read without colour."""
    bar_height, width, bars = 26, 420, []
    for i, (name, fraction, text) in enumerate(items):
        y = i * (bar_height + 8)
        bars.append(f'<text x="0" y="{y + 18}">{escape(name)}</text>'
                    f'<rect x="130" y="{y}" width="{width}" height="{bar_height}" fill="#ffffff" stroke="#555555"/>'
                    f'<rect x="130" y="{y}" width="{width * fraction:.1f}" height="{bar_height}" fill="#0072B2" stroke="#000000"/>'
                    f'<text x="{140 + width}" y="{y + 18}">{escape(text)}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(label)}" width="{width + 300}" '
            f'height="{len(items) * (bar_height + 8) + 4}" font-family="sans-serif" font-size="14">{"".join(bars)}</svg>')


def summary_html(rows: list[Row], skipped: Sequence[tuple[str, str]] = ()) -> str:
    """summary.html: one offline page: pass rates, the distribution of totals, causes, failures per property, files not graded."""
    table = summary(rows)
    rates = []
    for t in table:
        total = sum(t[k] for k in KINDS) or 1
        rates.append((t["exercise"], t["passed"] / total, f"{t['passed'] / total:.0%} passed ({t['passed']}/{total})"))
    head = "".join(f"<th>{escape(k)}</th>" for k in ("exercise", *KINDS, "most common causes"))
    body = "".join("<tr>" + f"<td>{escape(t['name'])}</td>" + "".join(f"<td>{t[k]}</td>" for k in KINDS)
                   + "<td><ol>" + "".join(f"<li>{escape(c)} ({n})</li>" for c, n in t["causes"]) + "</ol></td></tr>" for t in table)
    properties = "".join(f"<tr><td>{escape(t['exercise'])}</td><td>{escape(name)}</td><td>{n}</td></tr>"
                         for t in table for name, n in t["property failures"].items())
    spread = []
    for d in distribution(rows):  # a table with bars drawn by CSS: the page keeps one chart, the pass rates
        most = max(b["count"] for b in d["bins"]) or 1
        bars = "".join(f"<tr><td>{escape(b['name'])}</td><td>{b['count']}</td><td><span style=\"display:inline-block;height:1em;"
                       f"width:{20 * b['count'] / most:.1f}em;background:#0072B2;border:1px solid #000\"></span></td></tr>"
                       for b in d["bins"])
        spread.append(f"<h3>{escape(d['module'])}: {d['count']} graded, median {d['median']:g} of {d['max']:g}</h3>"
                      f"<table><thead><tr><th>total score</th><th>submissions</th><th></th></tr></thead><tbody>{bars}</tbody></table>")
    missing = [(row.id, row.path, row.result["output"].removeprefix("Not graded: ")) for row in rows if not row.result["tests"]]
    missing += [(Path(path).name, path, reason) for path, reason in skipped]
    partly = [(row.id, row.path, ", ".join(t["name"].split(":")[0] for t in row.result["tests"] if kind(t) == "not graded"))
              for row in rows if status(row.result) == "partly graded"]
    listed = "".join(f"<tr><td>{escape(i)}</td><td>{escape(p)}</td><td>{escape(r)}</td></tr>" for i, p, r in missing)
    listed += "".join(f"<tr><td>{escape(i)}</td><td>{escape(p)}</td><td>partly graded: not graded at {escape(r)}</td></tr>"
                      for i, p, r in partly)
    graded = sum(1 for row in rows if row.result["tests"])
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Grading summary</title>"
            f"<style>{_STYLE}</style></head><body>"
            f"<h1>Grading summary</h1><p>{graded} of {len(rows)} submissions graded; {len(missing)} files not graded.</p>"
            "<h2>Files not graded</h2>"
            + (f"<table><thead><tr><th>id</th><th>path</th><th>why</th></tr></thead><tbody>{listed}</tbody></table>" if listed
               else "<p>None: every file was graded.</p>")
            + f"<h2>Distribution of total scores</h2>{''.join(spread) or '<p>No submission was graded.</p>'}"
            + f"<h2>Pass rate per exercise</h2>{_bars(rates, 'Pass rate per exercise')}<h2>Verdicts and most common causes</h2>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
            + ("<h2>Failures per property</h2><table><thead><tr><th>exercise</th><th>property</th><th>submissions failing it</th>"
               f"</tr></thead><tbody>{properties}</tbody></table>" if properties else "")
            + "</body></html>\n")


def feedback_html(row: Row, language: str = "en") -> str:
    """One student's page, self-contained (no script, no link): their score and each exercise's feedback."""
    from . import feedback

    result, say = row.result, (lambda key, **fields: feedback.say(language, key, **fields))
    most = sum(t["max_score"] for t in result["tests"])
    parts = [f"<h1>{escape(say('grade page title', id=row.id))}</h1>", f"<p>{escape(row.path)}</p>"]
    if not result["tests"]:
        parts.append(f"<p><strong>{escape(say('grade page not graded'))}</strong></p><pre>{escape(result['output'])}</pre>")
    else:
        score = f"{result['score']:g}"
        parts.append(f"<p><strong>{escape(say('grade page score', score=score, most=f'{most:g}'))}</strong></p>")
        parts.append("<table><thead><tr>" + "".join(f"<th>{escape(say(h))}</th>" for h in ("grade page exercise", "grade page points", "grade page feedback"))
                     + "</tr></thead><tbody>")
        for t in result["tests"]:
            parts.append(f"<tr><td>{escape(feedback.shown_name(language, t['name']))}</td><td>{t['score']:g} / {t['max_score']:g}</td>"
                         f"<td><pre>{escape(t['output'])}</pre></td></tr>")
        parts.append("</tbody></table>")
    return (f"<!DOCTYPE html>\n<html lang=\"{escape(language)}\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(say('grade page title', id=row.id))}</title><style>{_STYLE}</style></head><body>{''.join(parts)}</body></html>\n")
