"""Authoring that never blocks and never lies (issue 26): each case the issue measured, on a copy of the repository.

The tests take the first notebook of ``[tool.course]`` and trim the copy's configuration to it, so they
do not depend on which modules the course has, and a build of the copy stays short.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import polib
import pytest

from builder import exits, files
from builder.config import load_course
from builder.translation import catalog as po
from tests.support import ROOT, run_builder

COMMAND = re.compile(r"`(python -m builder [^`]+)`")


def trim_to_first_notebook(root: Path, *, strict: bool | None = None):
    """Keep only the first notebook in the copy's [tool.course] (and set translations_strict); return it."""
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    entries = list(re.finditer(r"\[\[tool\.course\.notebooks\]\]\n(?:[^\[\n].*\n)*\n?", text))
    for entry in reversed(entries[1:]):
        text = text[:entry.start()] + text[entry.end():]
    if strict is not None:
        text = re.sub(r"^translations_strict = .*$", f"translations_strict = {'true' if strict else 'false'}", text, flags=re.MULTILINE)
        if "translations_strict" not in text:
            text = text.replace("[tool.course]\n", f"[tool.course]\ntranslations_strict = {'true' if strict else 'false'}\n", 1)
    pyproject.write_text(text, encoding="utf-8")
    return load_course(root).notebooks[0]


@pytest.fixture
def copy(repo_copy):
    """(root, notebook): the repository copy trimmed to its first notebook, translations not strict (a fork's default)."""
    return repo_copy, trim_to_first_notebook(repo_copy, strict=False)


def tree(root: Path) -> dict[str, bytes]:
    """Every file under notebooks/ and translations/ with its bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for folder in ("notebooks", "translations")
            for p in sorted((root / folder).rglob("*")) if p.is_file()}


def add_sentence(nb) -> None:
    """A one-sentence English edit: a new paragraph above the source's first second-level heading."""
    text = nb.source.read_text(encoding="utf-8")
    assert "# %% [markdown]\n# ## " in text, "the source needs a markdown cell that opens with a heading"
    nb.source.write_text(text.replace("# %% [markdown]\n# ## ", "# %% [markdown]\n# One new sentence, not translated yet.\n#\n# ## ", 1), encoding="utf-8")


def follow(root: Path, output: str) -> list[str]:
    """Run every builder command the output suggests, in order; each must succeed. Return them."""
    commands = list(dict.fromkeys(COMMAND.findall(output)))
    assert commands, f"the output suggests no command:\n{output}"
    for command in commands:
        result = run_builder(root, *command.split()[3:])
        assert result.returncode == exits.OK, f"the suggested `{command}` failed:\n{result.stdout}{result.stderr}"
    return commands


# ---- 1. Translations never block English ----------------------------------------------------------

@pytest.mark.slow  # builds and checks a repository copy
def test_a_one_sentence_english_edit_builds_and_checks_green_by_default_and_red_when_strict(copy):
    root, nb = copy
    add_sentence(nb)
    built = run_builder(root, "build")
    assert built.returncode == exits.OK, built.stdout + built.stderr
    assert f"build: warning: {nb.name}.ru: 1 unit(s) left in English" in built.stdout
    ru = nb.translated("ru")
    assert "# <!-- untranslated -->\n# One new sentence, not translated yet." in ru.source.read_text(encoding="utf-8")
    checked = run_builder(root, "check")
    assert checked.returncode == exits.OK, checked.stdout + checked.stderr
    assert f"check: warning: 1 unit(s) not translated yet (translations/ru/{nb.name}.po: 1 missing)" in checked.stdout
    strict = run_builder(root, "check", "--strict-translations")
    assert strict.returncode == exits.FAILED and f"translations/ru/{nb.name}.po(0): missing:" in strict.stdout
    trim_to_first_notebook(root, strict=True)
    assert run_builder(root, "check").returncode == exits.FAILED  # translations_strict = true in the config


@pytest.mark.slow  # builds a repository copy twice
def test_adopt_and_build_follow_one_policy(copy):
    root, nb = copy
    ipynb = json.loads(nb.ipynb.read_text(encoding="utf-8"))
    cell = next(c for c in ipynb["cells"] if c["cell_type"] == "markdown" and "".join(c["source"]).startswith("## "))
    cell["source"] = "A sentence written in Colab.\n\n" + "".join(cell["source"])
    nb.ipynb.write_text(json.dumps(ipynb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    adopted = run_builder(root, "adopt", nb.name)
    assert adopted.returncode == exits.OK, adopted.stdout + adopted.stderr
    assert f"build: warning: {nb.name}.ru: 1 unit(s) left in English" in adopted.stdout


@pytest.mark.slow  # builds a repository copy
def test_translations_prints_every_finding(copy):
    root, nb = copy
    add_sentence(nb)
    report = run_builder(root, "translations")
    assert f"translations/ru/{nb.name}.po(0): missing: [" in report.stdout, report.stdout
    assert "1 finding(s)" in report.stdout


def test_translations_update_changes_nothing_on_a_clean_tree_and_references_real_lines(course, tmp_path):
    """With strict translations (this course) the catalogs are kept merged; every #: reference names the unit's source file
    (file only: a line number would move whenever an unrelated line above it moves)."""
    from builder.translation.units import units

    for nb in course.notebooks:
        text = nb.source.read_text(encoding="utf-8")
        for edition in (nb.translated(language) for language in course.languages):
            catalog = po.load(edition.catalog)
            on_disk = edition.catalog.read_text(encoding="utf-8")
            merged = po.dumps(po.merge(catalog, units(text, course.root), course.shown(nb.source)), edition.language, course.shown(nb.source), on_disk)
            if course.translations_strict:
                assert merged == on_disk, (
                    f"{course.shown(edition.catalog)} is not merged with its English: run `python -m builder translations --update` and commit it")
            for entry in polib.pofile(merged):
                if entry.obsolete:
                    continue
                (where, line), = entry.occurrences
                assert where == course.shown(nb.source) and not line, entry.occurrences


# ---- 2. check covers every file build writes ------------------------------------------------------

def generated_files(course, nb) -> list[Path]:
    """Every file build writes for ``nb`` except its English source."""
    editions = [nb] + [nb.translated(language) for language in course.languages]
    return [p for e in editions for p in (e.source, e.ipynb, e.student_source, e.student_ipynb) if p != nb.source]


@pytest.mark.slow  # checks a repository copy once per generated file
def test_check_fails_naming_each_generated_file_edited_by_hand(copy):
    root, nb = copy
    course = load_course(root)
    for path in generated_files(course, nb):
        original = path.read_text(encoding="utf-8")
        if path.suffix == ".py":
            path.write_text(original + "print('appended by hand')\n", encoding="utf-8")
        else:
            data = json.loads(original)
            data["cells"][0]["source"] = "# A title edited by hand\n"
            path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        checked = run_builder(root, "check", "--no-strict-translations")
        shown = course.shown(path)
        assert checked.returncode == exits.FAILED and re.search(rf"^{re.escape(shown)}\(\d+\): ", checked.stdout, re.MULTILINE), (shown, checked.stdout)
        if path != nb.ipynb:
            assert f"generated from {course.shown(nb.source)}" in checked.stdout and "then run `python -m builder build --force`" in checked.stdout
        path.write_text(original, encoding="utf-8")


@pytest.mark.slow  # builds a repository copy
def test_build_refuses_to_discard_an_edit_of_a_generated_py_and_its_advice_works(copy):
    root, nb = copy
    target = nb.translated("ru").student_source
    target.write_text(target.read_text(encoding="utf-8") + "print('appended by hand')\n", encoding="utf-8")
    before = tree(root)
    refused = run_builder(root, "build")
    assert refused.returncode == exits.IPYNB_EDIT and load_course(root).shown(target) in refused.stderr, refused.stderr
    assert tree(root) == before
    follow(root, refused.stderr)
    assert "appended by hand" not in target.read_text(encoding="utf-8")
    assert run_builder(root, "check").returncode == exits.OK


# ---- 3. Advice that is always right ---------------------------------------------------------------

@pytest.mark.slow  # builds a repository copy
@pytest.mark.parametrize("which", ["student", "ru", "ru student"])
def test_an_edit_in_a_generated_ipynb_names_its_source_and_the_advice_works(copy, which):
    root, nb = copy
    edition = nb.translated("ru") if "ru" in which else nb
    path = edition.student_ipynb if "student" in which else edition.ipynb
    data = json.loads(path.read_text(encoding="utf-8"))
    cell = next(c for c in data["cells"] if c["cell_type"] == "markdown" and "builder:" not in "".join(c["source"]))
    cell["source"] = "".join(cell["source"]) + "\n\nEdited in Colab."
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    refused = run_builder(root, "build")
    assert refused.returncode == exits.IPYNB_EDIT, refused.stdout + refused.stderr
    assert "adopt" not in refused.stderr and f"generated from {load_course(root).shown(nb.source)}" in refused.stderr
    checked = run_builder(root, "check")
    assert checked.returncode == exits.FAILED and "adopt" not in checked.stdout
    assert follow(root, checked.stdout) == ["python -m builder build --force"]
    assert run_builder(root, "check").returncode == exits.OK


def edit_inside_inline_region(nb) -> None:
    """Edit, in the English .ipynb, a line inside the first inlined region, keeping the cell's id (as Jupyter does)."""
    data = json.loads(nb.ipynb.read_text(encoding="utf-8"))
    cell = next(c for c in data["cells"] if "# builder:begin inline" in "".join(c["source"]))
    text = "".join(cell["source"])
    start = text.index("# builder:begin inline")
    line_end = text.index("\n", start) + 1
    cell["source"] = text[:line_end] + "# an edit made in Jupyter inside the inlined code\n" + text[line_end:]
    nb.ipynb.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


@pytest.mark.slow  # checks and builds a repository copy
def test_an_edit_inside_an_inlined_region_is_not_offered_to_adopt_and_adopt_refuses_it_writing_nothing(copy):
    root, nb = copy
    edit_inside_inline_region(nb)
    checked = run_builder(root, "check")
    assert checked.returncode == exits.FAILED and "`python -m builder adopt" not in checked.stdout, checked.stdout
    assert "inside generated region" in checked.stdout
    before = tree(root)
    adopted = run_builder(root, "adopt", nb.name)
    assert adopted.returncode == exits.HAND_EDIT and "inside generated region" in adopted.stderr, adopted.stderr
    assert tree(root) == before
    follow(root, checked.stdout)
    assert run_builder(root, "check").returncode == exits.OK


@pytest.mark.slow  # checks a repository copy and follows its advice
def test_every_suggestion_for_an_english_ipynb_edit_works(copy):
    root, nb = copy
    data = json.loads(nb.ipynb.read_text(encoding="utf-8"))
    cell = next(c for c in data["cells"] if c["cell_type"] == "markdown" and "builder:" not in "".join(c["source"]))
    cell["source"] = "".join(cell["source"]) + "\n\nAdded in Jupyter."
    nb.ipynb.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    checked = run_builder(root, "check")
    assert follow(root, checked.stdout) == [f"python -m builder adopt {nb.name}"]
    assert "Added in Jupyter." in nb.source.read_text(encoding="utf-8")
    assert run_builder(root, "check").returncode == exits.OK


# ---- 4. No edit lost ------------------------------------------------------------------------------

def test_a_source_saved_while_the_build_ran_is_not_overwritten(tmp_path):
    source, generated = tmp_path / "a.py", tmp_path / "a.ipynb"
    source.write_text("read by the build\n")
    source.write_text("saved by an editor meanwhile\n")
    with pytest.raises(files.ChangedOnDisk, match="changed on disk"):
        files.write_all({source: "rewritten by the build\n", generated: "{}\n"}, unchanged_since={source: "read by the build\n"})
    assert source.read_text() == "saved by an editor meanwhile\n" and not generated.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["a.py"]  # no temporary file left


@pytest.mark.slow  # builds a repository copy
def test_build_refuses_to_overwrite_a_source_saved_after_it_was_read(copy, monkeypatch):
    from builder import editions

    root, nb = copy
    text = nb.source.read_text(encoding="utf-8")
    real = editions.editions

    def read_then_save(course, notebook, *override):
        result = real(course, notebook, *override)
        notebook.source.write_text(text + "# saved in an editor during the build\n", encoding="utf-8")
        return result

    monkeypatch.setattr(editions, "editions", read_then_save)
    built = run_builder(root, "build")
    assert built.returncode == exits.HAND_EDIT and "changed on disk" in built.stderr, built.stdout + built.stderr
    assert nb.source.read_text(encoding="utf-8").endswith("# saved in an editor during the build\n")


@pytest.mark.slow  # builds a repository copy
def test_build_refuses_to_overwrite_a_notebook_saved_in_jupyter_while_it_ran(copy, monkeypatch):
    from builder import drift

    root, nb = copy
    nb.source.write_text(nb.source.read_text(encoding="utf-8") + "\n# %%\nprint('a new cell')\n", encoding="utf-8")
    real = drift.refuse_lost_edits

    def decide_then_save(course, results):
        real(course, results)
        nb.ipynb.write_text(nb.ipynb.read_text(encoding="utf-8").replace('"cells": [', '"cells": [ ', 1), encoding="utf-8")

    monkeypatch.setattr(drift, "refuse_lost_edits", decide_then_save)
    built = run_builder(root, "build")
    assert built.returncode == exits.HAND_EDIT and load_course(root).shown(nb.ipynb) in built.stderr.replace(str(root) + "/", ""), built.stderr
    assert '"cells": [ ' in nb.ipynb.read_text(encoding="utf-8")


# ---- 5. Interrupts --------------------------------------------------------------------------------

def test_a_symlinked_notebook_stays_a_symlink_and_its_target_is_written(tmp_path):
    target, link = tmp_path / "real" / "a.ipynb", tmp_path / "a.ipynb"
    target.parent.mkdir()
    target.write_text("old\n")
    link.symlink_to(target)
    files.write_all({link: "new\n"})
    assert link.is_symlink() and target.read_text() == "new\n"


@pytest.mark.slow  # interrupts real builder processes
def test_ctrl_c_leaves_one_line_exit_130_and_no_temporary_file(copy):
    root, nb = copy
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the copy's own builder
    nb.source.write_text(nb.source.read_text(encoding="utf-8").replace("# %% [markdown]\n# ## ", "# %% [markdown]\n# Edited.\n#\n# ## ", 1), encoding="utf-8")
    for delay in (0.2, 0.8, 1.6, 2.4, 3.2):
        before = tree(root)
        process = subprocess.Popen([sys.executable, "-m", "builder", "--root", str(root), "build"], cwd=root, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
        after = tree(root)
        assert not [p for p in root.rglob("*.tmp")], f"a temporary file was left after Ctrl-C at {delay} s"
        if process.returncode == 130:
            assert err.strip() == "interrupted", f"Ctrl-C at {delay} s printed:\n{err}"
            assert after == before, f"Ctrl-C at {delay} s left a half-written tree"
        else:
            assert process.returncode == exits.OK, err  # it finished first: everything written
        if after != before:
            break


# ---- 6. Translations are data ---------------------------------------------------------------------

def break_catalog(root: Path, nb, edit) -> int:
    """Apply ``edit(entry)`` to the first translated exercise entry of the notebook's Russian catalog; return its line."""
    path = nb.translated("ru").catalog
    catalog = polib.pofile(str(path), wrapwidth=0)
    entry = next(e for e in catalog if e.msgstr and not e.obsolete and (e.msgctxt or "").startswith("Exercise"))
    edit(entry)
    path.write_text(str(catalog), encoding="utf-8")
    written = polib.pofile(str(path), wrapwidth=0)  # its line in the file as written (unwrapped), not as it was read
    return next(e.linenum for e in written if (e.msgctxt, e.msgid) == (entry.msgctxt, entry.msgid))


@pytest.mark.slow  # builds a repository copy
@pytest.mark.parametrize("payload, kind", [
    ("\rimport os  # code after a carriage return", "line-break"),
    ("\u2028import os", "line-break"),
    (' <script>alert(1)</script>', "markup"),
    (' ![x](https://evil.example/x.png)', "markup"),
    (' [docs](javascript:alert(1))', "markup"),
])
def test_a_translation_that_is_not_data_is_refused_by_build_and_check_with_its_catalog_line(copy, payload, kind):
    root, nb = copy

    def inject(entry):
        entry.msgstr = entry.msgstr.split("\n")[0] + payload

    line = break_catalog(root, nb, inject)
    where = re.compile(rf"translations/ru/{nb.name}\.po\((\d+)\): {kind}:")
    before = tree(root)
    built = run_builder(root, "build")
    found = where.search(built.stderr)
    assert built.returncode == exits.MALFORMED and found and 0 <= int(found.group(1)) - line < 40, (line, built.stderr)  # a line of that entry
    assert tree(root) == before
    checked = run_builder(root, "check")
    assert checked.returncode != exits.OK and where.search(checked.stdout + checked.stderr), checked.stdout + checked.stderr
    assert "numbers:" not in checked.stdout


@pytest.mark.slow  # checks a repository copy
def test_a_malformed_or_undecodable_catalog_names_its_line(copy):
    root, nb = copy
    path = nb.translated("ru").catalog
    lines = path.read_text(encoding="utf-8").split("\n")
    number = next(i for i, line in enumerate(lines, 1) if line.startswith('msgstr "') and len(line) > 10)
    broken = lines[:number - 1] + [lines[number - 1].rstrip('"')] + lines[number:]
    path.write_text("\n".join(broken), encoding="utf-8")
    checked = run_builder(root, "check")
    assert checked.returncode == exits.MALFORMED and f"translations/ru/{nb.name}.po({number}): not a PO line" in checked.stderr, checked.stderr
    path.write_bytes("\n".join(lines[:number - 1]).encode() + b'\nmsgstr "\xff"\n')
    checked = run_builder(root, "check")
    assert checked.returncode == exits.MALFORMED and f"translations/ru/{nb.name}.po({number}): byte 0xff" in checked.stderr, checked.stderr


# ---- 7. Meaning checks ----------------------------------------------------------------------------

@pytest.mark.parametrize("english, translation, kind", [
    ("may read key j exactly when j <= query_offset + r.", "может читать ключ j, когда j < query_offset + r.", "operator"),
    ("that is 57,344 bytes, 56 KiB per token.", "это 57,344 байта, 56 MiB на токен.", "unit"),
    ("pair 0 turns one radian and pair 1 turns less.", "пара 1 поворачивается на радиан, а пара 0 меньше.", "order"),
])
def test_operators_units_and_the_order_of_labelled_numbers_are_invariants(english, translation, kind):
    from builder.translation.invariants import differences

    assert kind in [k for k, _ in differences(english, translation, "ru")]


def test_russian_unit_symbols_and_a_moved_clause_are_not_findings():
    from builder.translation.invariants import differences

    assert differences("an 80 GB GPU", "GPU на 80 ГБ", "ru") == []
    assert differences("reach 32 × 4,096 = 131,072 under its convention (i reads i − 4,096)",
                       "по соглашению (i читает i − 4096) дальность 32 × 4096 = 131\u00a0072", "ru") == []


@pytest.mark.slow  # checks a repository copy
def test_a_prose_cell_holding_a_region_marker_is_a_finding(copy):
    root, nb = copy
    text = nb.source.read_text(encoding="utf-8")
    nb.source.write_text(text.replace("# <!-- builder:begin header -->\n", "# A sentence beside the header.\n#\n# <!-- builder:begin header -->\n", 1), encoding="utf-8")
    checked = run_builder(root, "check", "--strict-translations")
    assert checked.returncode == exits.FAILED and "untranslatable: the markdown cell starting 'A sentence beside the header.'" in checked.stdout


# ---- Rough edges ----------------------------------------------------------------------------------

@pytest.mark.slow  # adopts in a repository copy
@pytest.mark.parametrize("damage, words", [
    (lambda text: "", "(1): is empty"),
    (lambda text: "\ufeff" + text, "(1): starts with a byte-order mark"),
    (lambda text: "<<<<<<< HEAD\n" + text + "=======\n>>>>>>> theirs\n", "(1): holds a merge-conflict marker"),
])
def test_adopt_on_an_unreadable_ipynb_names_the_file_and_line(copy, damage, words):
    root, nb = copy
    nb.ipynb.write_text(damage(nb.ipynb.read_text(encoding="utf-8")), encoding="utf-8")
    adopted = run_builder(root, "adopt", nb.name)
    assert adopted.returncode == exits.MALFORMED and words in adopted.stderr, adopted.stderr


def test_a_bom_in_a_source_is_named_as_such(tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(b"\xef\xbb\xbf# %%\nx = 1\n")
    with pytest.raises(files.MalformedFile, match=r"a\.py\(1\): starts with a byte-order mark"):
        files.read_text(path, "a.py")


# ---- 8. Honest reference changes ------------------------------------------------------------------

def leaf_written_in(data, text: str, key: str = ""):
    """(key path, value) of the first whole-number leaf of ``data`` that ``text`` also writes by hand, or None."""
    from builder.frozen import written_forms

    if isinstance(data, dict):
        return next((found for k, v in data.items() if (found := leaf_written_in(v, text, f"{key}.{k}" if key else k))), None)
    if isinstance(data, int) and not isinstance(data, bool) and data >= 1000:
        return (key, data) if any(re.search(rf"(?<![\w.]){re.escape(form)}(?!\w)", text) for form in written_forms(data)) else None
    return None


@pytest.mark.slow  # rewrites a repository copy's reference file
def test_refs_update_lists_every_place_a_changed_value_is_written_by_hand(copy, monkeypatch):
    from builder import frozen

    root, nb = copy
    data = json.loads(nb.reference_path.read_text(encoding="utf-8"))
    found = leaf_written_in(data, nb.source.read_text(encoding="utf-8"))
    assert found, "no reference value of at least 1000 is written in the notebook's text"
    key, value = found
    changed = json.loads(json.dumps(data))
    node = changed
    for part in key.split(".")[:-1]:
        node = node[part]
    node[key.split(".")[-1]] = value + 1
    monkeypatch.setitem(frozen.GENERATORS, nb.reference, lambda: changed)
    updated = run_builder(root, "refs", "--update")
    assert updated.returncode == exits.OK, updated.stderr
    assert re.search(rf"notebooks/{nb.name}\.py\(\d+\): '[^']+' is {re.escape(key)}'s old value \(now {value + 1}\)", updated.stdout), updated.stdout


@pytest.mark.slow  # builds a repository copy
def test_a_reference_file_that_does_not_reproduce_fails_build_with_exit_3(copy):
    from builder import canonical

    root, nb = copy
    data = json.loads(nb.reference_path.read_text(encoding="utf-8"))
    data["an_extra_key"] = 1
    nb.reference_path.write_text(canonical.dumps(data), encoding="utf-8")
    before = tree(root)
    built = run_builder(root, "build")
    assert built.returncode == exits.MALFORMED and "an_extra_key" in built.stderr and "do not reproduce" in built.stderr, built.stderr
    assert tree(root) == before


@pytest.mark.slow  # runs a kernel
def test_an_execute_failure_names_the_source_line_prints_it_and_the_message_without_colour(tmp_path):
    from builder import execute, pairing

    folder = tmp_path / "notebooks"
    folder.mkdir()
    source = "# %% [markdown]\n# A title\n\n# %%\nx = 1\n\n# %%\ny = 2\nz = y / 0\nprint(z)\n"
    (folder / "toy.py").write_text(source)
    (folder / "toy.ipynb").write_text(pairing.to_ipynb(source))
    report = execute.report(execute.run(folder / "toy.ipynb", timeout=120))
    assert "FAILED at notebooks/toy.py(9) (cell 2): z = y / 0\n    ZeroDivisionError: division by zero" in report, report
    assert "\x1b[" not in report and "print(z)" not in report


# ---- 9. Adding an exercise ------------------------------------------------------------------------

@pytest.mark.slow  # adds an exercise to a repository copy and builds it
def test_new_exercise_writes_every_step_and_names_what_is_left(copy):
    from builder import authoring

    root, nb = copy
    heading = re.search(r"^# ## (.+)$", nb.source.read_text(encoding="utf-8"), re.MULTILINE).group(1)
    added = run_builder(root, "new-exercise", nb.name, "--function", "double_it", "--after", heading)
    assert added.returncode == exits.OK, added.stdout + added.stderr
    source = nb.source.read_text(encoding="utf-8")
    number = max(int(n) for n in re.findall(r"^# Exercise (\d+):", source, re.MULTILINE))
    assert f'check_exercise("Exercise {number}", check_double_it_contract, double_it, globals())' in source
    assert "def check_double_it_contract(double_it):" in source  # the empty inline region, filled by build
    assert f'"check_double_it_contract",' in "".join(p.read_text() for p in (root / "builder" / "contracts").glob("*.py"))
    assert 'Bug("double-it-todo"' in (root / "tests" / "bug_catalog.py").read_text(encoding="utf-8")
    catalog = polib.pofile(str(nb.translated("ru").catalog))
    assert [e.msgctxt for e in catalog if not e.msgstr and not e.obsolete] == [f"Exercise {number}"]
    assert len(authoring.stubs_left(load_course(root))) == 2  # the contract and the bug entry, until written
    assert "what is left" in added.stdout and "builder/contracts/" in added.stdout and "tests/bug_catalog.py" in added.stdout
    checked = run_builder(root, "check")
    assert checked.returncode == exits.OK, checked.stdout + checked.stderr  # green, with the new entry as a warning


def test_an_inline_name_missing_from_all_says_where_to_register_it():
    from builder import inline

    with pytest.raises(inline.InlineError, match=r"list it in that module's __all__"):
        inline.source_of("check_no_such_contract")
