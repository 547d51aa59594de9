"""The Russian edition: built from the English source and its catalogs, checked for drift, and Russian indeed."""

import contextlib
import io
import re

import nbformat
import polib
import pytest

from builder import cli
from builder.config import load_course
from builder.translation import catalog as po
from builder.translation import glossary
from builder.translation.units import NOT_PROSE
from tests.support import ROOT

COURSE = load_course(ROOT)
RUSSIAN = [nb for nb in COURSE.translations if nb.language == "ru"]


def run(argv: list[str]) -> tuple[int, str]:
    """``python -m builder ARGV`` in-process: its exit code and everything it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = cli.main(argv)
    return code, out.getvalue()


def cyrillic_share(nb: nbformat.NotebookNode) -> float:
    """The share of Cyrillic letters among the letters of the markdown, code spans, math, links and tags left out.

    The glossary page is left out too: its English column is there on purpose.
    """
    prose = [c.source for c in nb.cells if c.cell_type == "markdown" and not c.source.startswith(f"## {glossary.PAGE_TITLE}")]
    text = NOT_PROSE.sub(" ", "\n".join(prose))
    letters = re.findall(r"[^\W\d_]", text)
    return sum(1 for c in letters if "\u0400" <= c <= "\u04ff") / len(letters)


def test_both_modules_have_a_russian_edition():
    assert [nb.name for nb in RUSSIAN] == [nb.name for nb in COURSE.notebooks]


@pytest.mark.parametrize("nb", RUSSIAN, ids=lambda nb: nb.edition)
@pytest.mark.parametrize("student", [False, True], ids=["solution", "student"])
def test_russian_markdown_is_russian(nb, student):
    share = cyrillic_share(nbformat.read(nb.student_ipynb if student else nb.ipynb, as_version=4))
    assert share > 0.9, f"{nb.edition}: only {share:.1%} of the markdown letters are Cyrillic"


@pytest.mark.parametrize("nb", RUSSIAN, ids=lambda nb: nb.edition)
def test_russian_edition_draws_russian_figures_and_links_its_own_colab(nb):
    text = nb.source.read_text(encoding="utf-8")
    assert 'LANGUAGE = "ru"' in text and 'LANGUAGE = "en"' not in text
    assert f"blob/{COURSE.branch}/notebooks/ru/{nb.name}.ipynb" in text


@pytest.mark.parametrize("nb", RUSSIAN, ids=lambda nb: nb.edition)
def test_catalog_translates_every_unit_and_keeps_every_number(nb):
    code, report = run(["--root", str(ROOT), "translations", nb.name])
    assert code == 0 and ", 0 finding(s)" in report, report


def _break(repo, edit) -> str:
    """Apply ``edit(source_text, catalog)`` to Module 3 in a copy of the repo; return what ``check`` reports."""
    english = repo / "notebooks" / "module3_basic_transformer.py"
    catalog_path = repo / "translations" / "ru" / "module3_basic_transformer.po"
    text, catalog = edit(english.read_text(encoding="utf-8"), polib.pofile(str(catalog_path), wrapwidth=0))
    english.write_text(text, encoding="utf-8")
    catalog_path.write_text(po.dumps(catalog, "ru", "notebooks/module3_basic_transformer.py"), encoding="utf-8")
    code, report = run(["--root", str(repo), "check"])
    assert code == 1, report
    return report


def _first_paragraph(catalog: polib.POFile) -> polib.POEntry:
    """The first translated prose paragraph under a section heading (not a heading, not a table)."""
    return next(e for e in catalog if not e.obsolete and "¶1" in e.msgctxt and e.msgid[:1].isalpha() and "\n|" not in e.msgid)


@pytest.mark.slow  # a copy of the repository and a full check or build
def test_check_names_a_stale_entry_with_the_english_diff(repo_copy):
    def edit(text, catalog):
        entry = _first_paragraph(catalog)
        first = entry.msgid.split("\n")[0]
        self_edit.update(context=entry.msgctxt, first=first)
        return text.replace("# " + first, "# " + first + " (edited)", 1), catalog
    self_edit = {}
    report = _break(repo_copy, edit)
    assert re.search(rf"module3_basic_transformer\.po\(\d+\): stale: \[{re.escape(self_edit['context'])}\]", report), report
    assert "+" + self_edit["first"] + " (edited)" in report


@pytest.mark.slow  # a copy of the repository and a full check or build
def test_check_names_a_missing_entry(repo_copy):
    def edit(text, catalog):
        return text.replace("# %% [markdown]\n", "# %% [markdown]\n# A brand-new paragraph for the check.\n#\n", 2), catalog
    assert re.search(r"module3_basic_transformer\.po\(0\): missing: \[", _break(repo_copy, edit))


@pytest.mark.slow  # a copy of the repository and a full check or build
def test_check_names_an_orphan_entry(repo_copy):
    def edit(text, catalog):
        catalog.append(polib.POEntry(msgctxt="Gone ¶1", msgid="A paragraph deleted from the English.", msgstr="Удалённый абзац."))
        return text, catalog
    assert re.search(r"module3_basic_transformer\.po\(\d+\): orphan: \[Gone ¶1\]", _break(repo_copy, edit))


@pytest.mark.slow  # a copy of the repository and a full check or build
def test_check_names_a_translation_that_changed_a_number(repo_copy):
    def edit(text, catalog):
        # Russian typography groups thousands with a no-break (or thin) space: «131 072»
        entry = next(e for e in catalog if not e.obsolete and re.search(r"\b131[\u00a0\u202f]072\b", e.msgstr))
        entry.msgstr = re.sub(r"\b131([\u00a0\u202f])072\b", r"131\g<1>073", entry.msgstr, count=1)
        return text, catalog
    report = _break(repo_copy, edit)
    assert re.search(r"number: \[.*\] number '131,?072' is in the English 1x more often", report), report  # compared by value


@pytest.mark.slow  # a copy of the repository and a full check or build
def test_a_stale_entry_builds_with_its_english_marked_and_fails_check_only_when_strict(repo_copy):
    english = repo_copy / "notebooks" / "module3_basic_transformer.py"
    english.write_text(english.read_text(encoding="utf-8").replace("# %% [markdown]\n# ## ", "# %% [markdown]\n# A new paragraph.\n#\n# ## ", 1), encoding="utf-8")
    code, report = run(["--root", str(repo_copy), "build"])
    assert code == 0 and "build: warning: module3_basic_transformer.ru: 1 unit(s) left in English" in report, report
    assert "# <!-- untranslated -->\n# A new paragraph." in (repo_copy / "notebooks" / "ru" / "module3_basic_transformer.py").read_text(encoding="utf-8")
    code, report = run(["--root", str(repo_copy), "check"])  # this course sets translations_strict
    assert code == 1 and "missing: [" in report and "translations are strict here" in report, report
    code, report = run(["--root", str(repo_copy), "check", "--no-strict-translations"])
    assert code == 0 and "check: warning: 1 unit(s) not translated yet (translations/ru/module3_basic_transformer.po: 1 missing)" in report, report


@pytest.mark.slow  # a copy of the repository and a full check or build
def test_update_merges_like_msgmerge(repo_copy):
    english = repo_copy / "notebooks" / "module3_basic_transformer.py"
    english.write_text(english.read_text(encoding="utf-8").replace("# %% [markdown]\n", "# %% [markdown]\n# A new paragraph.\n#\n", 2), encoding="utf-8")
    code, report = run(["--root", str(repo_copy), "translations", "module3", "--update"])
    assert code == 0 and "wrote translations/ru/module3_basic_transformer.po" in report, report
    catalog = polib.pofile(str(repo_copy / "translations" / "ru" / "module3_basic_transformer.po"))
    assert [e.msgid for e in catalog if not e.msgstr] == ["A new paragraph."]


def test_glossary_gives_each_term_one_rendering():
    glossary = polib.pofile(str(ROOT / "translations" / "ru" / "glossary.po"))
    terms = [e.msgid.lower() for e in glossary]
    assert len(terms) == len(set(terms)) and len(terms) >= 30


@pytest.mark.parametrize("nb", RUSSIAN, ids=lambda nb: nb.edition)
@pytest.mark.parametrize("student", [False, True], ids=["solution", "student"])
def test_russian_edition_ends_with_its_glossary_page(nb, student):
    last = nbformat.read(nb.student_ipynb if student else nb.ipynb, as_version=4).cells[-1]
    assert last.cell_type == "markdown" and last.source.startswith(f"## {glossary.PAGE_TITLE}")
    assert "| K/V head, KV head | KV-голова |" in last.source
