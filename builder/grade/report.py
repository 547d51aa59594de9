"""What grading writes: points per exercise from the course config, results.json and grades.csv."""

import csv
import io
import json
import math
import tomllib
from pathlib import Path

from ..config import ConfigError

VISIBILITY = "visible"  # Gradescope: the contracts' feedback is meant to be read at once


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


def results(title: str, exercises, worth: dict[str, float], verdicts: dict[str, dict], seconds: float) -> dict:
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
            "output": judged["output"],
            "visibility": VISIBILITY,
        })
    score = sum(t["score"] for t in tests)
    total = sum(t["max_score"] for t in tests)
    return {
        "score": score,
        "execution_time": round(seconds),
        "output": f"{title}: {score:g} of {total:g} points. Each exercise was judged alone by its contract check, "
                  f"on the reference solutions of the exercises before it.",
        "visibility": VISIBILITY,
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def failed(reason: str) -> dict:
    """The results.json of a submission that could not be graded."""
    return {"score": 0.0, "execution_time": 0, "output": f"Not graded: {reason}", "visibility": VISIBILITY,
            "stdout_visibility": "hidden", "tests": []}


def dumps(result: dict) -> str:
    """The canonical text of a results.json: sorted keys, so equal results are equal bytes."""
    return json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def grades_csv(rows: list[tuple[str, str, dict]]) -> str:
    """grades.csv: one row per (submission, module, results), one column per exercise, the total and any error."""
    labels: list[str] = []
    for _, _, result in rows:
        for test in result["tests"]:
            label = test["name"].split(":")[0]
            if label not in labels:
                labels.append(label)
    labels.sort(key=lambda label: int(label.split()[-1]))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["submission", "module", *labels, "total", "max", "error"])
    for stem, module, result in rows:
        by_label = {t["name"].split(":")[0]: f"{t['score']:g}" for t in result["tests"]}
        if result["tests"]:
            total, most = f"{result['score']:g}", f"{sum(t['max_score'] for t in result['tests']):g}"
            error = ""
        else:
            total, most, error = "", "", result["output"].removeprefix("Not graded: ")
        writer.writerow([stem, module, *(by_label.get(label, "") for label in labels), total, most, error])
    return out.getvalue()
