"""The Gradescope autograder: a zip of the current course with ``setup.sh`` and ``run_autograder``.

Gradescope unpacks the zip into ``/autograder/source``, runs ``setup.sh`` once as root when it
builds the image, then ``/autograder/run_autograder`` for each submission, which it places in
``/autograder/submission``; the results go to ``/autograder/results/results.json``.
"""

import shutil
import stat
import zipfile
from pathlib import Path

from . import batch, report

TORCH = "torch==2.13.0"  # the pin .ci/run installs; from PyTorch's CPU index, never a CUDA build
STAMP = (1980, 1, 1, 0, 0, 0)  # fixed zip timestamps: the same course gives the same bytes
TIMEOUT = 60  # seconds per exercise on Gradescope
BUDGET = 540  # seconds for a whole submission: under Gradescope's default limit of 10 minutes

SETUP = f"""#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
set -euo pipefail
pick() {{
    for py in python3.13 python3.12 python3.11 python3; do
        if command -v "$py" >/dev/null && "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
            echo "$py"; return 0
        fi
    done
    return 1
}}
PY="$(pick)" || {{ apt-get install -y python3.11 python3.11-venv; PY=python3.11; }}
"$PY" -m venv /autograder/venv || {{ apt-get install -y "$PY-venv"; "$PY" -m venv /autograder/venv; }}
/autograder/venv/bin/python -m pip install --quiet --upgrade pip
/autograder/venv/bin/python -m pip install --quiet "{TORCH}" --index-url https://download.pytorch.org/whl/cpu
/autograder/venv/bin/python -m pip install --quiet -e /autograder/source
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for every submission. AUTOGRADER_ROOT and AUTOGRADER_PYTHON exist for tests.
set -uo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
PY="${{AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}}"
cd "$ROOT/source"
"$PY" -m builder --root "$ROOT/source" grade --gradescope-root "$ROOT"{module}
"""

def course_files(root: Path) -> list[Path]:
    """What the grader needs from the course, sorted: the builder, the solution sources, references, config."""
    files = [root / "pyproject.toml", root / "README.md"]
    files += [p for p in (root / "builder").rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    files += sorted((root / "notebooks").glob("*.py")) + sorted((root / "references").glob("*.json"))
    return sorted(files)


def _add(archive: zipfile.ZipFile, name: str, data: bytes, executable: bool = False) -> None:
    """One zip entry with a fixed timestamp and mode."""
    info = zipfile.ZipInfo(name, STAMP)
    info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def bundle(course, target: Path, module: str | None = None) -> Path:
    """Write the autograder zip for the current course; with ``module``, other modules' notebooks are refused."""
    if module:
        module = course.select([module])[0].name  # an unknown name is a ConfigError that lists the known ones
    run = RUN.format(module=f" --module {module}" if module else "")
    partial = target.with_name(target.name + ".partial")
    with zipfile.ZipFile(partial, "w") as archive:
        _add(archive, "setup.sh", SETUP.encode(), executable=True)
        _add(archive, "run_autograder", run.encode(), executable=True)
        for path in course_files(course.root):
            _add(archive, path.relative_to(course.root).as_posix(), path.read_bytes())
    partial.replace(target)  # a failed bundle leaves nothing behind
    return target


def run_in_container(course, root: Path, *, timeout: float, module: str | None) -> dict:
    """Grade the one notebook in ``root/submission`` and write ``root/results/results.json``."""
    found = sorted(p for p in (root / "submission").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    results = root / "results"
    results.mkdir(parents=True, exist_ok=True)
    if len(found) != 1:
        names = ", ".join(p.name for p in found) or "none"
        result = report.failed(f"submit exactly one .ipynb notebook; found {len(found)} ({names})")
    else:
        (row,) = batch.grade(course, found, timeout=timeout, module=module)
        batch.write([row], results / "graded")
        shutil.copyfile(results / "graded" / row.submission.stem / "results.json", results / "results.json")
        return row.result
    (results / "results.json").write_text(report.dumps(result), encoding="utf-8")
    return result
