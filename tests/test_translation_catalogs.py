"""Catalogs the translator's tools can share: gettext's layout, the translator's header, stable references, flags, templates.

A save by gettext's own tools (what Poedit and Weblate do: wrap at 79 columns, add the translator's
header) followed by a merge changes almost nothing; a one-sentence English edit changes a few
catalog lines; every entry with ``{fields}`` is flagged ``python-brace-format``; the POT templates and
the glossary's Weblate files are what ``translations --update`` writes.
"""

import difflib
import shutil
import subprocess

import polib
import pytest

from builder.config import load_course
from builder.translation import catalog as po
from builder.translation import glossary, messages
from builder.translation.units import units
from tests.support import ROOT

TRANSLATOR = ('"Language: ru\\n"\n"Last-Translator: Ivan Petrov <ivan@example.org>\\n"\n"Language-Team: Russian\\n"\n'
              '"X-Generator: Poedit 3.4\\n"')


def changed_lines(before: str, after: str) -> int:
    """Lines added or removed between two texts."""
    return sum(1 for line in difflib.unified_diff(before.split("\n"), after.split("\n"), lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---")))


def catalogs():
    """(catalog path, its English units, its reference) of every catalog the course merges."""
    course = load_course(ROOT)
    found = [(nb.translated("ru").catalog, units(nb.source.read_text(encoding="utf-8"), ROOT), course.shown(nb.source))
             for nb in course.notebooks]
    return found + [(ROOT / "translations" / "ru" / messages.CATALOG, messages.units(ROOT), "builder/contracts")]


def merged(path, found, reference, text: str) -> str:
    """What ``translations --update`` writes for a catalog whose file holds ``text``."""
    return po.dumps(po.merge(po.load_text(text, str(path)), found, reference), "ru", reference, text)


@pytest.mark.skipif(shutil.which("msgcat") is None, reason="needs gettext's msgcat")
def test_a_save_by_gettexts_tools_then_a_merge_keeps_the_header_and_changes_under_two_percent(tmp_path):
    total = changed = 0
    for path, found, reference in catalogs():
        saved = subprocess.run(["msgcat", "--width=79", str(path)], capture_output=True, text=True, check=True).stdout
        saved = saved.replace('"Language: ru\\n"', TRANSLATOR, 1)
        after = merged(path, found, reference, saved)
        assert "Last-Translator: Ivan Petrov" in after and "X-Generator: Poedit 3.4" in after and "Plural-Forms: nplurals=3;" in after
        total, changed = total + saved.count("\n"), changed + changed_lines(saved, after)
    assert changed <= 0.02 * total, f"{changed} of {total} lines changed"


@pytest.mark.skipif(shutil.which("msgcat") is None, reason="needs gettext's msgcat")
def test_the_committed_catalogs_are_laid_out_nearly_as_msgcat_lays_them_out():
    total = changed = 0
    for path, *_ in catalogs():
        text = path.read_text(encoding="utf-8")
        saved = subprocess.run(["msgcat", "--width=79", str(path)], capture_output=True, text=True, check=True).stdout
        total, changed = total + text.count("\n"), changed + changed_lines(text, saved)
    assert changed <= 0.05 * total, f"msgcat relays {changed} of {total} lines"


def test_a_one_sentence_english_edit_changes_at_most_30_catalog_lines():
    course = load_course(ROOT)
    for nb in course.notebooks:
        text = nb.source.read_text(encoding="utf-8")
        at = text.index("# %% [markdown]\n# ## ", len(text) // 2)
        edited = text[:at] + "# %% [markdown]\n# One new sentence, not translated yet.\n\n" + text[at:]
        path, reference = nb.translated("ru").catalog, course.shown(nb.source)
        before = path.read_text(encoding="utf-8")
        after = merged(path, units(edited, ROOT), reference, before)
        assert 0 < changed_lines(before, after) <= 30, (nb.name, changed_lines(before, after))


def test_every_entry_with_fields_is_brace_format_and_every_reference_is_a_file():
    for path, found, _ in catalogs():
        with_fields = {(u.context, u.text) for u in found if u.fields}
        for entry in polib.pofile(str(path)):
            if entry.obsolete or not entry.msgid:
                continue
            assert ((entry.msgctxt, entry.msgid) in with_fields) == (po.BRACE_FORMAT in entry.flags), (path.name, entry.msgctxt)
            assert all(not line for _, line in entry.occurrences), entry.occurrences
        assert "Plural-Forms: nplurals=3;" in path.read_text(encoding="utf-8")


def test_the_templates_and_the_glossarys_weblate_files_are_current():
    for path, found, reference in catalogs():
        catalog = po.merge(po.load(path), found, reference)
        template = po.template_path(ROOT, path)
        assert template.read_text(encoding="utf-8") == po.template(catalog, reference), f"run `python -m builder translations --update`"
        assert all(not e.msgstr for e in polib.pofile(str(template)))
    terms = ROOT / "translations" / "ru" / glossary.GLOSSARY
    for written, text in glossary.weblate_files(terms, "ru", po.load(terms)).items():
        assert written.read_text(encoding="utf-8") == text, f"{written.name}: run `python -m builder translations --update`"


def test_the_translators_guide_exists_in_english_and_russian_and_names_what_it_promises():
    for name in ("translators.md", "translators.ru.md"):
        text = (ROOT / "docs" / name).read_text(encoding="utf-8")
        for needed in ("translations --update", "translations --typography", "msgcat --width=79", "python-brace-format",
                       "Plural-Forms", "translations/templates/", "glossary.tbx", "0{,}63", "131\\,072"):
            assert needed in text, (name, needed)
    russian = (ROOT / "docs" / "translators.ru.md").read_text(encoding="utf-8")
    assert sum(ch.isalpha() and "а" <= ch.lower() <= "я" for ch in russian) > 0.5 * sum(ch.isalpha() for ch in russian)
