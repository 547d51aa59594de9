"""Translation catalogs: units, msgmerge-style merging, the four drift findings, rendering, glossary."""

import ast

import polib
import pytest

from builder import editions
from builder.translation import catalog as po
from builder.translation import glossary, lint
from builder.translation.invariants import changed, invariants
from builder.translation.render import StaleTranslationError, render
from builder.translation.units import blocks, units

SOURCE = '''# %% [markdown]
# <!-- builder:begin header -->
# # Module 9 · Toy
# <!-- builder:end sha256=0000 -->

# %% [markdown]
# ## 1. Masks
#
# A mask hides 3 of the 4 keys, so $p_i = 0$ there.
#
# $$
# z = x
# $$
#
# ```python
# print("not prose")
# ```

# %%
LANGUAGE = "en"  # figure labels

# %% tags=["exercise"]
# Exercise 1: return the causal mask of size `n`.
# Row i allows keys 0 ... i.
def mask(n):
    ### BEGIN SOLUTION
    return n
    ### END SOLUTION
'''


def translated(entries: dict[str, str]) -> polib.POFile:
    """A catalog merged from SOURCE with the given context -> translation pairs filled in."""
    merged = po.merge(polib.POFile(), units(SOURCE), "toy.py")
    for entry in merged:
        entry.msgstr = entries.get(entry.msgctxt, "")
    return merged


RU = {
    "1. Masks ¶0": "## 1. Маски",
    "1. Masks ¶1": "Маска скрывает 3 из 4 ключей, поэтому там $p_i = 0$.",
    "Exercise 1": "верните каузальную маску размера `n`.\nСтрока i разрешает ключи 0 ... i.",
}


def test_units_are_prose_paragraphs_and_exercise_instructions():
    found = units(SOURCE)
    assert [u.context for u in found] == ["1. Masks ¶0", "1. Masks ¶1", "Exercise 1"]
    assert found[2].text == "return the causal mask of size `n`.\nRow i allows keys 0 ... i."


def test_blocks_keep_fenced_code_and_display_math_whole():
    text = "a\n\n```\nx\n\ny\n```\n\n$$\nz\n\nw\n$$"
    assert blocks(text) == ["a", "```\nx\n\ny\n```", "$$\nz\n\nw\n$$"]


def test_invariants_separate_numbers_math_code_and_links():
    found = invariants("Keep 4,096 keys, `window=128`, $W+1$ and [docs](https://x.org/a).")
    assert found == {("number", "4096"): 1, ("code", "`window=128`"): 1, ("math", "$W+1$"): 1, ("link", "https://x.org/a"): 1}


def test_numbers_changed_is_a_finding():
    assert changed("window of 4,096", "окно в 4 096") != []
    assert changed("window of 4,096", "окно в 4,096") == []
    bad = translated({**RU, "1. Masks ¶1": "Маска скрывает 2 из 4 ключей, поэтому там $p_i = 0$."})
    kinds = [(f.kind, f.context) for f in po.findings(bad, units(SOURCE), "toy.po")]
    assert kinds == [("number", "1. Masks ¶1"), ("number", "1. Masks ¶1")]


def test_an_fstring_field_changed_by_a_translation_is_a_finding():
    """Typography once wrote {x[1.0]:.2f} as {x[1,0]:.2f}; the edition then fell back to English without a word."""
    from builder.translation.units import Unit

    unit = Unit("figure f: caption", "the row reaches {float(row[1.0]):.2f} at T = 1", 0, fields=("{float(row[1.0]):.2f}",))
    entry = polib.POEntry(msgctxt=unit.context, msgid=unit.text, msgstr="строка доходит до {float(row[1,0]):.2f} при T = 1")
    catalog = polib.POFile()
    catalog.append(entry)
    assert [f.kind for f in po.findings(catalog, [unit], "toy.po", "ru")] == ["field"]
    entry.msgstr = "строка доходит до {float(row[1.0]):.2f} при T = 1"
    assert po.findings(catalog, [unit], "toy.po", "ru") == []


def test_missing_translation_is_a_finding():
    found = po.findings(translated({k: v for k, v in RU.items() if k != "Exercise 1"}), units(SOURCE), "toy.po")
    assert [(f.kind, f.context) for f in found] == [("missing", "Exercise 1")]


def test_stale_translation_is_marked_fuzzy_with_the_english_diff(tmp_path):
    catalog = translated(RU)
    changed_source = SOURCE.replace("hides 3 of the 4 keys", "hides 2 of the 4 keys")
    found = po.findings(catalog, units(changed_source), "toy.po")
    assert [(f.kind, f.context) for f in found] == [("stale", "1. Masks ¶1")]
    assert "-A mask hides 3 of the 4 keys" in found[0].diff and "+A mask hides 2 of the 4 keys" in found[0].diff
    merged = po.merge(catalog, units(changed_source), "toy.py")
    entry = next(e for e in merged if e.msgctxt == "1. Masks ¶1")
    assert "fuzzy" in entry.flags and entry.previous_msgid.startswith("A mask hides 3")
    path = tmp_path / "toy.po"
    path.write_text(po.dumps(merged, "ru", "toy.py"), encoding="utf-8")
    again = po.findings(po.load(path), units(changed_source), str(path))
    assert [(f.kind, f.line > 0) for f in again] == [("stale", True)]
    assert str(again[0]).startswith(f"{path}({again[0].line}): stale: [1. Masks ¶1]")


def test_orphan_translation_is_a_finding_and_merge_keeps_it_obsolete():
    catalog = translated(RU)
    shorter = SOURCE.replace("# A mask hides 3 of the 4 keys, so $p_i = 0$ there.\n#\n", "")
    found = po.findings(catalog, units(shorter), "toy.po")
    assert [(f.kind, f.context) for f in found] == [("orphan", "1. Masks ¶1")]
    merged = po.merge(catalog, units(shorter), "toy.py")
    assert [e.msgctxt for e in merged if e.obsolete] == ["1. Masks ¶1"]


def test_moved_paragraph_keeps_its_translation():
    catalog = translated(RU)
    moved = SOURCE.replace("## 1. Masks", "## 1. Masks\n#\n# New first paragraph.")
    found = po.findings(catalog, units(moved), "toy.po")
    assert [(f.kind, f.context) for f in found] == [("missing", "1. Masks ¶1")]


def test_render_translates_prose_and_switches_the_figure_language():
    text, english = render(SOURCE, translated(RU), "ru")
    assert english == []
    assert "# Маска скрывает 3 из 4 ключей" in text and "A mask hides" not in text
    assert 'LANGUAGE = "ru"  # figure labels' in text
    assert "# Exercise 1 · Упражнение 1: верните каузальную маску размера `n`.\n# Строка i разрешает ключи 0 ... i.\ndef mask(n):" in text
    assert "<!-- builder:begin header -->" in text and 'print("not prose")' in text


def test_render_refuses_stale_units_unless_told_to_fall_back():
    catalog = translated(RU)
    changed_source = SOURCE.replace("hides 3 of", "hides 2 of")
    with pytest.raises(StaleTranslationError, match="1. Masks ¶1"):
        render(changed_source, catalog, "ru")
    text, english = render(changed_source, catalog, "ru", fallback=True)
    assert english == ["1. Masks ¶1"] and "A mask hides 2 of the 4 keys" in text


def test_render_needs_one_language_line():
    with pytest.raises(ValueError, match='LANGUAGE = "en"'):
        render(SOURCE.replace('LANGUAGE = "en"', 'LANG = "en"'), translated(RU), "ru")


def test_glossary_flags_a_term_rendered_two_ways():
    terms = polib.POFile()
    terms.append(polib.POEntry(msgid="mask", msgstr="маска", comment="stems: маск"))
    catalog = translated({**RU, "1. Masks ¶1": "Фильтр скрывает 3 из 4 ключей, поэтому там $p_i = 0$."})
    found = glossary.violations(catalog, glossary.load_terms(terms), "toy.po")
    assert [(f.kind, f.context) for f in found] == [("glossary", "1. Masks ¶1")]
    assert glossary.violations(translated(RU), glossary.load_terms(terms), "toy.po") == []


def test_real_sources_cut_into_units_with_unique_contexts(course):
    for nb in course.notebooks:
        found = units(nb.source.read_text(encoding="utf-8"))
        contexts = [u.context for u in found]
        assert len(contexts) == len(set(contexts)) and len(found) > 50, nb.name
        text, _ = render(nb.source.read_text(encoding="utf-8"), polib.POFile(), "ru", fallback=True)
        assert 'LANGUAGE = "ru"' in text


def test_inline_formula_may_wrap_a_line_and_ordinals_carry_their_number():
    assert invariants("so $a +\nb$ holds at a 3.7th of it") == {("math", "$a +\nb$"): 1, ("number", "3.7"): 1}


GLOSSARY = '''#. stems: каузальн
#. avoid: причинн
msgid "causal"
msgstr "каузальный"

#. stems: kv-голов
#. avoid: k/v-голов
msgid "KV head"
msgstr "KV-голова"

#. stems: размерност
#. avoid: ширин
msgid "width"
msgstr "размерность"

#. stems: разрядност
msgid "bit width"
msgstr "разрядность"
'''


def test_glossary_reports_a_rendering_it_avoids_even_where_the_english_lacks_the_term():
    terms = glossary.load_terms(polib.pofile(GLOSSARY))
    catalog = translated({**RU, "1. Masks ¶1": "Причинная маска скрывает 3 из 4 ключей, поэтому там $p_i = 0$."})
    found = glossary.violations(catalog, terms, "toy.po")
    assert [(f.kind, f.context) for f in found] == [("glossary", "1. Masks ¶1")] and "'причинн'" in found[0].message.lower()
    assert glossary.violations(translated(RU), terms, "toy.po") == []


def test_a_longer_term_has_its_own_rendering():
    terms = glossary.load_terms(polib.pofile(GLOSSARY))
    assert glossary.problems("trust no bit width", "не доверяйте никакой разрядности", terms) == []
    assert glossary.problems("a head of width 64", "голова размерности 64", terms) == []
    assert glossary.problems("a head of width 64", "голова ширины 64", terms) != []


FIGURES = '''
def plot(language):
    t = partial(localized, language)
    ax.set_title(localized(language, "causal mask", "причинная маска"))
    ax.set_xlabel(t("KV heads cached", "K/V-голов в кэше"))
    ax.set_ylabel(localized(language, f"head width {d}", f"размерность головы {d}"))
    titles = {"en": ("Future hidden (causal)", "Both"), "ru": ("Будущее скрыто", "Оба")}
'''


def test_glossary_covers_figure_labels_of_every_form():
    assert [pair[1:] for pair in glossary.figure_strings(FIGURES)] == [
        ("causal mask", "причинная маска"), ("KV heads cached", "K/V-голов в кэше"),
        ("head width ", "размерность головы "), ("Both", "Оба"), ("Future hidden (causal)", "Будущее скрыто")]
    found = glossary.source_violations(FIGURES, glossary.load_terms(polib.pofile(GLOSSARY)), "toy.py")
    assert [f.line for f in found] == [4, 4, 5, 5, 7]


def _labels_of_the_whole_parse(source):
    return sorted(glossary._pairs_in(ast.parse(source)))


# "# %%" lines inside a string: the cells are not Python one by one, so the whole source is parsed.
SPLIT_STRINGS = [
    'x = 1\n# %%\nNOTE = """\n# %%\nt("not", "a label")\n"""\n# %%\ny = t("mask", "маска")\n',
    'x = 1\n# %%\nNOTE = """\n# %%\nt("not", "a label")\n"""  # closes """\n',  # the last cell parses alone, wrongly
]


@pytest.mark.parametrize("source", SPLIT_STRINGS, ids=["unterminated-alone", "parses-alone"])
def test_figure_labels_parsed_by_cell_are_those_of_the_whole_source(source):
    """Only the cells that can hold a label are parsed; the labels found are those of one parse of the whole source."""
    glossary.figure_strings.cache_clear()
    assert list(glossary.figure_strings(source)) == _labels_of_the_whole_parse(source)


def test_figure_labels_of_every_course_source_are_those_of_the_whole_source():
    from tests.support import ROOT

    for path in sorted((ROOT / "notebooks").glob("*.py")):  # the English sources: the only ones check reads labels from
        source = path.read_text(encoding="utf-8")
        assert list(glossary.figure_strings(source)) == _labels_of_the_whole_parse(source), path


def test_the_course_renders_each_glossary_term_one_way():
    from builder.config import load_course
    from tests.support import ROOT

    course = load_course(ROOT)
    terms = glossary.load_terms(po.load(ROOT / "translations" / "ru" / "glossary.po"))
    found = lint.course_violations(course)
    for nb in course.notebooks:
        found += glossary.source_violations(nb.source.read_text(encoding="utf-8"), terms, nb.name)
    for edition in (e for e in course.translations if e.language == "ru"):
        found += glossary.violations(po.load(edition.catalog), terms, edition.name)
    assert [str(f) for f in found] == []


def test_the_glossary_page_lists_every_term_once():
    terms = glossary.load_terms(polib.pofile(GLOSSARY))
    text = glossary.page(terms)
    assert text.startswith("## Словарь терминов") and text.count("| KV head | KV-голова |") == 1


def test_a_formula_with_words_is_a_unit_and_a_formula_of_symbols_is_not():
    from builder.translation.units import is_prose

    assert is_prose(r"$$M_{ij} = 0 \text{ if allowed}, \; -\infty \text{ otherwise}$$")
    assert is_prose(r"$$\text{sink share} = \frac{e^{\sigma}}{Z}$$")
    assert not is_prose(r"$$j < n_{\text{sink}}, \quad c_{\text{tok}} \cdot n$$")
    english = r"$$M = 0 \text{ if allowed}, \; -\infty \text{ otherwise}$$"
    assert changed(english, r"$$M = 0 \text{ если разрешено}, \; -\infty \text{ иначе}$$", "ru") == []
    assert changed(english, r"$$M = 1 \text{ если разрешено}, \; -\infty \text{ иначе}$$", "ru") != []


def test_figure_labels_are_linted_in_the_text_being_built_not_the_file_on_disk(course):
    """``adopt`` builds from rewritten text: a figure label it brings is linted at once, not at the next check."""
    nb = course.select(["module5_1"])[0]
    text = nb.source.read_text(encoding="utf-8") + '\n# %%\nlabel = localized(LANGUAGE, "attention weights", "веса фокуса")\n'
    found = [str(f) for f in editions.editions(course, nb, text).findings if "веса фокуса" in str(f)]
    assert len(found) == 1 and "'attention' should be rendered 'внимание'" in found[0], found


def test_the_readers_word_for_an_exercise_is_the_messages_catalogs(tmp_path):
    from builder import student
    from builder.config import ROOT
    from builder.translation.messages import reader_word

    assert reader_word("Exercise", "en") == "Exercise"
    assert reader_word("Exercise", "ru") == po.load(ROOT / "translations/ru/messages.po").find("Exercise", msgctxt="Exercise").msgstr
    found = [student.Exercise(index=0, label="Exercise 1", instructions="", names=("f",), written=("f",))]
    assert student.listing(found, "ru") == f"- **{reader_word('Exercise', 'ru')} 1:** `f`"
    # Another word in the catalog is the word the guide and the cells get: no second table holds it.
    (tmp_path / "translations/ru").mkdir(parents=True)
    text = (ROOT / "translations/ru/messages.po").read_text(encoding="utf-8")
    (tmp_path / "translations/ru/messages.po").write_text(text.replace('msgstr "Упражнение"', 'msgstr "Задание"', 1), encoding="utf-8")
    assert reader_word("Exercise", "ru", tmp_path) == "Задание"
    assert reader_word("Exercise", "de", tmp_path) == "Exercise"  # no catalog yet: the English word


LABELLED = '''# %% [markdown]
# ## Weights
#
# The weights, drawn.

# %%
LANGUAGE = "en"
import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.set_title(tr("attention weights per key"))
ax.legend([tr("causal mask"), tr("no mask")])
'''


def test_a_figure_label_marked_with_tr_is_a_catalog_unit_and_the_edition_writes_its_translation():
    from builder.contracts.messages import tr

    found = [u for u in units(LABELLED) if "figure label" in u.context]
    assert [u.text for u in found] == ["attention weights per key", "causal mask", "no mask"]
    merged = po.merge(polib.POFile(), units(LABELLED), "toy.py")
    for entry in merged:
        entry.msgstr = {"attention weights per key": "веса внимания по ключам", "causal mask": "каузальная маска",
                        "no mask": "без маски", "The weights, drawn.": "Веса на рисунке."}.get(entry.msgid, entry.msgid)
    text, english = render(LABELLED, merged, "ru")
    assert english == [] and 'tr("веса внимания по ключам")' in text and 'tr("без маски")' in text and "no mask" not in text
    assert tr("anything") == "anything"


def test_an_inlined_helpers_tr_labels_are_messages_units():
    from builder.translation import messages

    source = 'def plot(ax):\n    """Draw."""\n    ax.set_title(tr("tiles visited"))\n    ax.set_xlabel(tr("key tile"))\n'
    assert messages.label_texts(source) == ["tiles visited", "key tile"]
