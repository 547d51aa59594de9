"""The real notebooks, each alone in an empty folder, through a real Jupyter kernel (nbclient).

Each edition runs once per session (conftest's ``executions``, shared with the handout, print and budget
tests) and once more as its student edition with the solutions put back (conftest's ``student_runs``, shared
with test_student): the same code cells, so that run is both the reinsertion test and the determinism test's
second run. Its source runs once as
a plain script (``script_runs``, shared with the ``python -O`` test). Tests that break a notebook run only the
broken copy.
"""

import json
import re
import subprocess
import sys

import nbformat
import pytest

from builder import execute, pairing, student
from builder.config import load_course
from tests.support import ROOT, normalized_outputs

pytestmark = pytest.mark.slow
NOTEBOOKS = load_course(ROOT).notebooks + tuple(load_course(ROOT).translations)  # English, then each translation
IDS = [nb.edition for nb in NOTEBOOKS]


def code_cells(nb_json: dict) -> list[dict]:
    """The code cells of a notebook's JSON, in order."""
    return [c for c in nb_json["cells"] if c["cell_type"] == "code"]


def reference_cell(nb_json: dict) -> int:
    """Index of the code cell that embeds and verifies the reference JSON."""
    return next(i for i, c in enumerate(nb_json["cells"]) if "builder:begin frozen" in "".join(c["source"]))


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=IDS)
def test_notebook_runs_alone_with_no_error(executions, nb):
    result = executions[nb.edition]
    assert result.error is None, f"{nb.edition} failed at cell {result.failed_cell}:\n{result.error}"
    cells = json.loads(result.executed.read_text())["cells"]
    errors = [o for c in cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == []
    assert len(result.cells) == sum(c["cell_type"] == "code" for c in cells)


# The last cell's call that asserts every frozen value was used (REFERENCE.assert_all_used inside); a Russian
# edition closes with its glossary page after it.
FINAL_CHECK = "report_references(globals())"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=IDS)
def test_every_reference_value_is_checked(executions, nb):
    cells = nbformat.read(executions[nb.edition].executed, as_version=4).cells
    text = "".join(o.get("text", "") for c in cells for o in c.get("outputs", []))
    assert FINAL_CHECK in "".join(c.source for c in cells[-4:]), f"the last cells must call {FINAL_CHECK}, which asserts every value was used"
    assert re.search(r"\d+ (reference values|эталонных значений)", text), "the final check must print how many reference values it verified"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=IDS)
@pytest.mark.parametrize("target", ["json", "digest"])
def test_tampered_reference_stops_at_the_checksum_cell(tmp_path, nb, target):
    data = json.loads(nb.ipynb.read_text())
    index = reference_cell(data)
    source = "".join(data["cells"][index]["source"])
    if target == "json":
        tampered = re.sub(r'(REFERENCE_JSON = r"""[^\d]*)(\d)', lambda m: m.group(1) + str((int(m.group(2)) + 1) % 10), source, count=1)
    else:
        tampered = re.sub(r'(REFERENCE_SHA256 = ")([0-9a-f])', lambda m: m.group(1) + ("0" if m.group(2) != "0" else "1"), source, count=1)
    assert tampered != source
    data["cells"][index]["source"] = tampered
    broken = tmp_path / nb.ipynb.name
    broken.write_text(json.dumps(data))
    result = execute.run(broken)
    assert result.failed_cell == index, f"expected to stop at the checksum cell {index}, stopped at {result.failed_cell}"
    assert "ReferenceChecksumError" in result.error and "SHA-256 checksum mismatch" in result.error
    assert re.search(r"expected sha256: [0-9a-f]{64}", result.error) and re.search(r"actual sha256:\s+[0-9a-f]{64}", result.error)
    assert "python -m builder build" in result.error


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=IDS)
def test_source_runs_as_a_plain_script(script_runs, tmp_path, nb):
    ok = script_runs(nb.source)
    assert ok.returncode == 0, ok.stderr[-3000:]
    broken = tmp_path / nb.source.name
    broken.write_text(nb.source.read_text().replace('REFERENCE_SHA256 = "', 'REFERENCE_SHA256 = "0', 1))
    failed = subprocess.run([sys.executable, str(broken)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert failed.returncode != 0 and "checksum mismatch" in failed.stderr


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=IDS)
def test_two_runs_give_identical_outputs(executions, student_runs, nb):
    first = code_cells(json.loads(executions[nb.edition].executed.read_text()))
    second = code_cells(json.loads(student_runs.reinserted(nb).executed.read_text()))
    # The second run is the student edition with its solutions put back: the very same code, cell for cell.
    assert ["".join(c["source"]) for c in second] == ["".join(c["source"]) for c in first], "the reinserted student edition's code differs"
    assert normalized_outputs({"cells": first}) == normalized_outputs({"cells": second})


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=IDS)
def test_student_edition_as_shipped_stops_only_at_exercise_stubs(student_runs, nb):
    """Every error is a NotImplementedError from an exercise; everything else runs on the references."""
    result = student_runs.shipped(nb)
    executed_nb = nbformat.read(result.executed, as_version=4)
    labels = [e.label for e in student.exercises(pairing.read_source(nb.source.read_text()))]
    assert student.shipped_run_problems(result.errors, labels) == []
    assert any(FINAL_CHECK in c.source for c in executed_nb.cells[-4:]), f"the student edition must end with {FINAL_CHECK}"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=IDS)
def test_student_edition_with_solutions_reinserted_passes(student_runs, nb):
    result = student_runs.reinserted(nb)
    assert result.error is None, f"failed at cell {result.failed_cell}:\n{result.error}"


def stray_values(executed) -> list[tuple[int, str]]:
    """(cell, last line) of every code cell that shows an Out[] value: a check's return, a bare expression."""
    cells = nbformat.read(executed, as_version=4).cells
    return [(i, cell.source.strip().splitlines()[-1][:80]) for i, cell in enumerate(cells) if cell.cell_type == "code"
            for output in cell.outputs if output.output_type == "execute_result"]


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=IDS)
def test_no_cell_shows_a_value_it_did_not_mean_to(executions, student_runs, nb):
    """Issues 35-37: no Out[] anywhere, in the solution edition or the student edition as shipped.

    Every figure, table and number the course shows goes through print, display or show_figure; a check
    (check_exercise, expect_raises, REFERENCE.check) returns None, so a check that ends a cell shows nothing.
    """
    stray = {"solution": stray_values(executions[nb.edition].executed), "student": stray_values(student_runs.shipped(nb).executed)}
    assert stray == {"solution": [], "student": []}, f"cells that show a value nobody asked for: {stray}"
