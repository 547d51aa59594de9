"""Progress of long commands on stderr: plain lines off a terminal, a tqdm bar on one, and mutants' expected duration."""

import io
import re

from builder import cli, exits
from tools import cli as tools_cli
from tools import mutants
from builder.progress import Progress, duration


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_durations_read_at_a_glance():
    assert [duration(s) for s in (4.4, 61, 3725)] == ["4 s", "1 min 1 s", "1 h 2 min"]


def test_plain_lines_name_stage_item_elapsed_and_what_is_left():
    stream = io.StringIO()
    with Progress("execute", 3, seconds_each=20, stream=stream) as progress:
        for label in ("module3 [en]", "ru/module3 [ru]", "module5 [en]"):
            progress.step(label)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "execute 1/3 module3 [en]: 0 s elapsed, about 1 min 0 s left"  # from seconds_each before any is done
    assert re.fullmatch(r"execute 2/3 ru/module3 \[ru\]: 0 s elapsed, about 0 s left", lines[1])  # from the items done
    assert lines[-1].startswith("execute: 3 notebook(s) in ")


def test_finished_items_are_throttled_to_one_line_every_few_seconds():
    stream = io.StringIO()
    progress = Progress("mutants m", 50, unit="mutant", every=3600, stream=stream)
    for i in range(50):
        progress.finished(f"killed f{i}")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith("mutants m 1/50 done (last: killed f0)") and lines[1].startswith("mutants m 50/50 done")


def test_a_terminal_gets_a_tqdm_bar():
    stream = Terminal()
    with Progress("html", 2, stream=stream) as progress:
        progress.step("module3 [en]")
        progress.step("module5 [en]")
    assert "html" in stream.getvalue() and "2/2" in stream.getvalue() and "module5 [en]" in stream.getvalue()


TINY = "def double(x):\n    return x * 2 + 0\n\n\nif double(2) != 4:\n    raise SystemExit(1)\n"


def test_mutants_state_the_expected_duration_before_they_run(monkeypatch, capsys, course):
    """A tiny source stands in for the notebook (the real one is mutated in the slow tier), and no script really runs."""
    real = mutants.generate
    monkeypatch.setattr(mutants, "generate", lambda name, text, path, skip, **options: real(name, TINY, path, [], **options))
    # the unmutated run (the notebook's own text) passes; every mutant of TINY is killed
    monkeypatch.setattr(mutants, "run_script", lambda source, filename, timeout: ("killed" if "def double" in source else "survived", 2.0))
    assert tools_cli.main(["mutants", course.notebooks[0].name, "--sample", "3"]) == exits.OK
    err = capsys.readouterr().err
    first, expected = err.splitlines()[:2]
    assert "timing the unmutated notebook first" in first
    assert expected.endswith("3 mutants, each a run of up to about 2.0 s (the unmutated run), 1 at a time: expect up to about 6 s")
    assert re.search(r"mutants \S+ 3/3 done", err)


def test_the_first_estimate_comes_from_the_last_runs_cell_timings(tmp_path):
    import nbformat

    from builder import execute

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("y = 2")])
    for cell, (start, end) in zip(nb.cells, [("00:00:00", "00:00:03"), ("00:00:03", "00:00:10")]):
        cell.metadata["execution"] = {"iopub.execute_input": f"2026-01-01T{start}Z", "shell.execute_reply": f"2026-01-01T{end}Z"}
    nbformat.write(nb, tmp_path / "old.ipynb")
    (tmp_path / "broken.ipynb").write_text("not a notebook")
    assert execute.last_seconds([tmp_path / "old.ipynb", tmp_path / "missing.ipynb", tmp_path / "broken.ipynb"]) == 10.0
    assert execute.last_seconds([tmp_path / "missing.ipynb"]) is None
