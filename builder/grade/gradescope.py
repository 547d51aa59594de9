"""The Gradescope autograder: a zip of the current course with ``setup.sh`` and ``run_autograder``.

Gradescope unpacks the zip into ``/autograder/source``, runs ``setup.sh`` once as root when it
builds the image, then ``/autograder/run_autograder`` for each submission, which it places in
``/autograder/submission``; the results go to ``/autograder/results/results.json``.
"""

import shutil
import stat
import zipfile
from pathlib import Path

from ..config import ConfigError
from . import batch, report
from . import selftest as selftest_module  # the module: selftest below is this file's own command

TORCH = "torch==2.13.0"  # the pin .ci/run installs; from PyTorch's CPU index, never a CUDA build
STAMP = (1980, 1, 1, 0, 0, 0)  # fixed zip timestamps: the same course gives the same bytes
TIMEOUT = 60  # seconds per exercise on Gradescope
BUDGET = 540  # seconds for a whole submission: under Gradescope's default limit of 10 minutes

SETUP = f"""#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
set -euo pipefail
apt-get update
pick() {{
    for py in python3.13 python3.12 python3.11 python3; do
        if command -v "$py" >/dev/null && "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
            echo "$py"; return 0
        fi
    done
    return 1
}}
PY="$(pick)" || {{ apt-get install -y python3.11 python3.11-venv || true; PY="$(pick)"; }} || {{
    echo "setup.sh: the grader needs Python 3.11 or newer, and this image has none and could not install python3.11;" >&2
    echo "setup.sh: choose a newer base image in Gradescope's autograder settings (Ubuntu 22.04 or later)." >&2
    exit 1
}}
"$PY" -m venv /autograder/venv || {{ apt-get install -y "$PY-venv"; "$PY" -m venv /autograder/venv; }}
/autograder/venv/bin/python -m pip install --quiet --upgrade pip
/autograder/venv/bin/python -m pip install --quiet "{TORCH}" --index-url https://download.pytorch.org/whl/cpu
/autograder/venv/bin/python -m pip install --quiet -e /autograder/source
chmod -R go-rwx /autograder/source  # student code runs as nobody: the course's sources stay out of its reach
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for every submission. AUTOGRADER_ROOT and AUTOGRADER_PYTHON exist for tests.
set -uo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
PY="${{AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}}"
chmod -R go-rwx "$ROOT/submission" 2>/dev/null || true
cd "$ROOT/source"
"$PY" -m builder --root "$ROOT/source" grade --gradescope-root "$ROOT" --timeout {timeout:g} --budget {budget:g} --visibility {visibility}{module}
"""

def course_files(root: Path) -> list[Path]:
    """What the grader needs from the course, sorted: the builder, the solution sources, references, config."""
    files = [root / "pyproject.toml", root / "README.md"]
    files += [p for p in (root / "builder").rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    files += sorted((root / "notebooks").glob("*.py")) + sorted((root / "references").glob("*.json"))
    files += sorted((root / "notebooks").rglob("*.ipynb"))  # the shipped editions: their cell ids tell course cells from the student's
    return sorted(files)


def _add(archive: zipfile.ZipFile, name: str, data: bytes, executable: bool = False) -> None:
    """One zip entry with a fixed timestamp and mode."""
    info = zipfile.ZipInfo(name, STAMP)
    info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def bundle(course, target: Path, module: str | None = None, *, timeout: float = TIMEOUT, budget: float = BUDGET,
           visibility: str = report.VISIBILITY) -> Path:
    """Write the autograder zip for the current course; with ``module``, other modules' notebooks are refused."""
    if module:
        module = course.select([module])[0].name  # an unknown name is a ConfigError that lists the known ones
    problems = report.config_problems(course)
    if problems:  # on Gradescope every run would fail and write no results.json
        raise ConfigError("; ".join(problems))
    run = RUN.format(module=f" --module {module}" if module else "", timeout=timeout, budget=budget, visibility=visibility)
    partial = target.with_name(target.name + ".partial")
    with zipfile.ZipFile(partial, "w") as archive:
        _add(archive, "setup.sh", SETUP.encode(), executable=True)
        _add(archive, "run_autograder", run.encode(), executable=True)
        for path in course_files(course.root):
            _add(archive, path.relative_to(course.root).as_posix(), path.read_bytes())
    partial.replace(target)  # a failed bundle leaves nothing behind
    return target


def run_in_container(course, root: Path, *, timeout: float, module: str | None, budget: float = BUDGET,
                     visibility: str = report.VISIBILITY) -> dict:
    """Grade the one notebook in ``root/submission`` and write ``root/results/results.json``."""
    found = sorted(p for p in (root / "submission").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    results = root / "results"
    results.mkdir(parents=True, exist_ok=True)
    if len(found) != 1:
        names = ", ".join(p.name for p in found) or "none"
        result = report.failed(f"submit exactly one .ipynb notebook; found {len(found)} ({names})", visibility)
    else:
        try:  # the course's own solution is graded first, in the same sandbox: the machine proves itself
            (row,) = batch.grade(course, found, timeout=timeout, module=module, jobs=1, visibility=visibility, budget=budget)
        except selftest_module.EnvironmentProblem as problem:
            result = report.failed(f"grading environment: {problem}. Your submission was not graded; tell your instructor.", visibility)
        else:
            batch.write([row], results / "graded")
            shutil.copyfile(results / "graded" / row.submission.stem / "results.json", results / "results.json")
            return row.result
    (results / "results.json").write_text(report.dumps(result), encoding="utf-8")
    return result


def selftest(course, zip_path: Path) -> int:
    """Unpack a bundle into a temporary root and run its ``run_autograder`` on each module's solution and stub editions.

    setup.sh's installs need the network; the self-test uses the running Python's environment in their place
    (``AUTOGRADER_PYTHON``), and checks that the solution scores full marks and the stub 0, with every exercise NOT DONE.
    """
    import json
    import os
    import subprocess
    import sys
    import tempfile

    failures = []
    with tempfile.TemporaryDirectory(prefix="gradescope-selftest-") as tmp:
        root = Path(tmp) / "autograder"
        with zipfile.ZipFile(zip_path) as archive:
            archive.extractall(root / "source")
        script = root / "source" / "run_autograder"
        subprocess.run(["bash", "-n", str(root / "source" / "setup.sh")], check=True)
        env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable, PYTHONPATH="")
        for book in course.notebooks:
            for kind, path in (("solution", book.ipynb), ("stub", book.student_ipynb)):
                shutil.rmtree(root / "submission", ignore_errors=True)
                shutil.rmtree(root / "results", ignore_errors=True)
                (root / "submission").mkdir(parents=True)
                shutil.copyfile(path, root / "submission" / "submission.ipynb")
                subprocess.run(["bash", str(script)], env=env, capture_output=True, timeout=1200)
                result = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
                tests = result.get("tests", [])
                ok = bool(tests) and (all(t["score"] == t["max_score"] for t in tests) if kind == "solution" else
                                      result["score"] == 0 and all(t["output"].startswith("NOT DONE") for t in tests))
                if "--module" in script.read_text() and f"--module {book.name}" not in script.read_text():
                    ok = not tests  # a single-module bundle refuses the other module
                print(f"selftest {book.name} {kind}: {result['score']:g} points, {len(tests)} exercises: {'ok' if ok else 'WRONG'}")
                if not ok:
                    failures.append(f"{book.name} {kind}: {result.get('output', '')[:300]}")
    for failure in failures:
        print(f"selftest failed: {failure}", file=sys.stderr)
    return 1 if failures else 0
