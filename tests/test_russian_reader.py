"""What a Russian student reads is Russian: the Russian student edition, run with one wrong answer.

The acceptance test of issue 27 executes the Russian student edition of one notebook with one
catalogued bug in one exercise, collects the human-readable text the student meets in four
categories (figure captions and alt text; printed banners and the summary; the failure message;
the instructions, titles and stub comments), keeps the prose (code spans, identifiers, math,
numbers, units and names dropped) and requires at least 90% of its words to be Russian.
``python -m tests.test_russian_reader`` prints the share per category without asserting.
"""

import re
import sys

import nbformat
import pytest

from builder import execute, pairing
from tests.support import NOTEBOOK_SOURCES, ROOT

MODULE = "module3"
CATEGORIES = ("captions and alt text", "banners and summary", "failure message", "instructions and titles")
# Latin words a Russian text keeps as they are: names of models, tools and functions written as words.
NAMES = {"softmax", "colab", "jupyterlab", "jupyter", "python", "pytorch", "numpy", "torch", "llama", "mistral",
         "longformer", "mamba", "transformer", "flashattention", "bert", "gpt", "gemma", "qwen", "deepseek", "swa",
         "alibi", "rope", "relu", "gelu", "layernorm", "rmsnorm", "attention", "is", "all", "you", "need", "et", "al"}
_CODE = re.compile(r"`[^`]*`|\$\$.*?\$\$|\$[^$\n]*\$|\]\([^)]*\)|https?://\S+|<[^>]*>", re.DOTALL)
_WORD = re.compile(r"[^\W\d_]+")


def words(text: str) -> tuple[int, int]:
    """(Russian words, English words) in the prose of ``text``: code spans, identifiers, math, numbers, acronyms and names left out."""
    russian = english = 0
    for token in _CODE.sub(" ", text).split():
        if re.search(r"[_()\[\]{}=/\\<>]|\w\.\w|\d", token):
            continue  # an identifier, a call, a path or a number with its unit
        for word in _WORD.findall(token):
            if len(word) < 2 or word.isupper() or word.lower() in NAMES:
                continue  # a symbol, an acronym (MHA, GQA, KV) or a name
            if re.search("[а-яёА-ЯЁ]", word):
                russian += 1
            elif re.fullmatch("[A-Za-z]+", word):
                english += 1
    return russian, english


def reader_text(executed: nbformat.NotebookNode, exercise_cells: set[int]) -> dict[str, list[str]]:
    """The texts a student meets in an executed student edition, by category."""
    found = {category: [] for category in CATEGORIES}
    for index, cell in enumerate(executed.cells):
        if index == 1:  # the student guide: the instructions cell
            found["instructions and titles"].append(cell.source)
        if cell.cell_type != "code":
            continue
        lines = cell.source.splitlines()
        if lines and lines[0].startswith("# @title"):
            found["instructions and titles"].append(lines[0].removeprefix("# @title"))
        if index in exercise_cells:
            found["instructions and titles"] += [line.lstrip("# ") for line in lines if line.lstrip().startswith("#")]
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stdout":
                found["banners and summary"].append("".join(out.get("text", "")))
            elif out.get("output_type") == "display_data":
                if "text/markdown" in out.get("data", {}):
                    found["captions and alt text"].append("".join(out["data"]["text/markdown"]))
                alt = out.get("metadata", {}).get("image/png", {}).get("alt")
                if alt:
                    found["captions and alt text"].append(alt)
            elif out.get("output_type") == "error":
                shown = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(out.get("traceback", [])))
                kept, skip = [], False
                for line in shown.splitlines():
                    if line.strip().startswith("File \""):
                        skip = True  # a frame and its code line under it
                        continue
                    if not skip:
                        kept.append(line)
                    skip = False
                found["failure message"].append("\n".join(kept))
    return found


def shares(found: dict[str, list[str]]) -> dict[str, tuple[int, int]]:
    """(Russian, English) word counts per category and in their union ("all")."""
    counts = {category: tuple(map(sum, zip(*(words(t) for t in texts)))) if texts else (0, 0) for category, texts in found.items()}
    counts["all"] = tuple(map(sum, zip(*counts.values())))
    return counts


def run_russian_student_edition(tmp_path):
    """Execute the Russian student edition of MODULE with its first exercise wrong: (executed notebook, exercise cells, bug)."""
    from tests.test_wrong_answers import PARSED, judged_exercises, kernel_name, wrong_version

    name = NOTEBOOK_SOURCES[MODULE].stem
    nb = nbformat.read(ROOT / "notebooks" / "ru" / "student" / f"{name}.ipynb", as_version=4)
    russian = pairing.read_source((ROOT / "notebooks" / "ru" / f"{name}.py").read_text(encoding="utf-8"))
    judged = judged_exercises(MODULE, PARSED[MODULE])
    exercise = judged[0]
    at = exercise.cell + 1  # the student edition has its guide after the first cell
    bug, nb.cells[at].source = wrong_version(exercise, russian.cells[exercise.cell].source)
    nbformat.write(nb, tmp_path / "one_wrong.ipynb")
    run = execute.run(tmp_path / "one_wrong.ipynb", tmp_path / "out", allow_errors=True, kernel_name=kernel_name())
    return nbformat.read(run.executed, as_version=4), {e.cell + 1 for e in judged}, bug


def report(counts: dict[str, tuple[int, int]]) -> str:
    """One line per category: Russian share and word counts."""
    return "\n".join(f"{category}: {ru / max(ru + en, 1):.0%} Russian ({ru} Russian, {en} English words)" for category, (ru, en) in counts.items())


def test_words_count_prose_only():
    ru, en = words("Упражнение 3: `split_heads(x)` returns $QK^T$ of shape (B, T) in 2.4 GB; MHA keeps softmax")
    assert (ru, en) == (1, 5), (ru, en)  # «Упражнение»; returns, of, shape, in, keeps


@pytest.mark.slow
def test_a_russian_student_meets_russian_words(tmp_path):
    executed, exercise_cells, bug = run_russian_student_edition(tmp_path)
    counts = shares(reader_text(executed, exercise_cells))
    shown = report(counts)
    assert all(ru + en for ru, en in counts.values()), f"a category is empty:\n{shown}"
    ru, en = counts["all"]
    assert ru / (ru + en) >= 0.9, f"with bug {bug.id}, fewer than 90% of the words a Russian student reads are Russian:\n{shown}"


def _figure_cell(caption: str) -> str:
    return f'show_figure(\n    plot_x(language=LANGUAGE),\n    {caption},\n    alt="One line per head.",\n)'


def test_a_caption_translation_is_data_never_code():
    import ast

    import polib

    from builder.translation.render import render_notebook
    from builder.translation.units import units

    evil = '"); import os; ("'
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('LANGUAGE = "en"'), nbformat.v4.new_code_cell(_figure_cell('"Read it left to right."'))])
    catalog = polib.POFile()
    for unit, text in zip(units(nb), (evil, "Одна линия на голову; \\ и \\n не код.")):
        catalog.append(polib.POEntry(msgctxt=unit.context, msgid=unit.text, msgstr=text))
    translated, english = render_notebook(nb, catalog, "ru")
    tree = ast.parse(translated.cells[1].source)
    call = tree.body[0].value
    assert english == [] and len(tree.body) == 1 and not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.Name)) and getattr(n, "id", "os") == "os"]
    assert ast.literal_eval(call.args[1]) == evil
    assert ast.literal_eval(call.keywords[0].value) == "Одна линия на голову; \\ и \\n не код."


def test_a_caption_translation_keeps_exactly_the_english_fstring_fields():
    import ast

    from builder.translation.units import code_texts, translate_code

    source = _figure_cell('f"Loss {loss:.2f} after {steps} steps."')
    [caption, _] = code_texts(source)
    assert caption.text == "Loss {loss:.2f} after {steps} steps." and caption.fields == ("{loss:.2f}", "{steps}")
    good, [done, _] = translate_code(source, ["Потери {loss:.2f} после {steps} шагов.", None])
    assert done and ast.parse(good)
    fields = [ast.unparse(v) for v in ast.walk(ast.parse(good)) if isinstance(v, ast.FormattedValue)]
    assert len(fields) == 2, fields
    for bad in ("Потери {loss:.2f} после шагов.",  # a field dropped
                "Потери {loss:.2f} после {steps} {__import__('os').getcwd()} шагов.",  # a field added
                "Потери {loss:.3f} после {steps} шагов."):  # a field changed
        kept, [written, _] = translate_code(source, [bad, None])
        assert not written and kept == source, bad


def test_the_message_table_is_written_as_data_and_keeps_the_english_fields():
    import ast

    import polib

    from builder.translation import messages
    from builder.translation.units import Unit

    found = [Unit("pass", "{label}: PASS, every contract property of {name} holds", 0),
             Unit("none", "none", 0), Unit("positions: 1", "positions start at 0, so row 0 is (0, 1, 0, 1, ...)", 0)]
    catalog = polib.POFile()
    for unit, text in zip(found, ("{label}: ПРОЙДЕНО ({nam})", '"); import os; ("', "позиции начинаются с 0, строка 0 — (0, 1, 0, 1, ...)")):
        catalog.append(polib.POEntry(msgctxt=unit.context, msgid=unit.text, msgstr=text))
    table = messages.table(catalog, found)
    assert "pass" not in table, "a translation with other fields keeps the English"
    line = messages.table_line(table)
    tree = ast.parse(line)
    assert len(tree.body) == 1 and not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert ast.literal_eval(tree.body[0].value.args[0]) == {"none": '"); import os; ("', found[2].text: "позиции начинаются с 0, строка 0 — (0, 1, 0, 1, ...)"}


def _russian_checks():
    """A namespace holding the exercise machinery under the committed Russian message table."""
    import copy

    from builder.contracts import exercises, messages, violations
    from builder.translation import messages as catalog

    saved = copy.deepcopy(messages.MESSAGES)
    messages.MESSAGES.update(catalog.table(catalog.load("ru"), catalog.units()))
    return saved, messages, exercises, violations


def test_a_russian_reader_sees_russian_labels_and_violations_and_show_reference_takes_both_labels(capsys):
    saved, messages, exercises, violations = _russian_checks()
    try:
        namespace = {"REFERENCE_SOURCES": {"Exercise 3": "def f():\n    return 3\n"}}
        exercises.show_reference("Упражнение 3", namespace)
        exercises.show_reference("Exercise 3", namespace)
        assert capsys.readouterr().out.count("def f():") == 2
        shown = violations.ContractViolation("position 0 is (0, 1, 0, 1, ...)", "x", "0.0", "1.0", "positions start at 0, so row 0 is (0, 1, 0, 1, ...)")
        lines = shown._render_traceback_()
        assert lines[0] == "ContractViolation: свойство контракта «позиция 0 — это (0, 1, 0, 1, ...)» не выполнено", lines
        assert lines[-1].startswith("  обычная причина: позиции начинаются с 0"), lines
        assert len({line.index(line.split(":", 1)[1].strip()) for line in lines[1:]}) == 1, "the values line up"
        exercises.exercise_summary({"EXERCISE_OUTCOMES": {"Exercise 1": "passed", "Exercise 2": "not attempted"}})
        out = capsys.readouterr().out
        assert "Упражнения, пройденные вашим собственным кодом: Упражнение 1" in out and "Exercise" not in out, out
    finally:
        messages.MESSAGES.clear()
        messages.MESSAGES.update(saved)


def test_the_last_cell_names_the_reference_values_left_waiting_instead_of_claiming_all_were_used(capsys):
    from builder.contracts.exercises import report_references
    from builder.contracts.frozen import Reference

    reference = Reference({"a": 1, "b": {"c": 2, "d": 3}}, "references/toy.json")
    reference.value("a")
    namespace = {"REFERENCE": reference, "REFERENCE_SOURCE": "references/toy.json", "EXERCISES_WAITING": {"f": "Exercise 2"}}
    assert report_references(namespace) == 1
    out = capsys.readouterr().out
    assert out == "1 of 3 reference values of references/toy.json were used or checked; the other 2 wait with the cells that wait for Exercise 2\n"
    assert "All" not in out
    namespace["EXERCISES_WAITING"] = {}
    with pytest.raises(AssertionError, match="2 value"):  # nothing waits: an unchecked value fails loudly, as before
        report_references(namespace)
    reference.value("b.c"), reference.value("b.d")
    assert report_references(namespace) == 3 and capsys.readouterr().out == "All 3 reference values of references/toy.json were used or checked by a cell.\n"


if __name__ == "__main__":  # measure without asserting
    import tempfile
    from pathlib import Path

    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as folder:
        executed, cells, bug = run_russian_student_edition(Path(folder))
        found = reader_text(executed, cells)
        print(report(shares(found)))
        if "-v" in sys.argv:
            for category, texts in found.items():
                print(f"== {category}\n" + "\n".join(texts))
