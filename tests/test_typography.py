"""Russian typography: numbers compared by value, units through their Russian symbols, the rewrite and its lint."""

from pathlib import Path

import polib
import pytest

from builder.translation import catalog as po
from builder.translation import lint
from builder.translation.invariants import changed
from builder.translation.typography import NBSP, english_forms, typeset
from builder.translation.units import units
from tests.support import ROOT

ENGLISH = "A token costs 131,072 bytes (128 KiB), 0.63 of it keys; 5x fewer, 2-4× faster at 1,024 tokens and 5 ms."
RUSSIAN = (f"Токен стоит 131{NBSP}072 байта (128{NBSP}КиБ), 0,63 из них ключи; в{NBSP}5{NBSP}раз меньше, "
           f"в{NBSP}2–4{NBSP}раза быстрее при 1024 токенах и 5{NBSP}мс.")


def test_russian_number_formatting_carries_the_english_values():
    assert changed(ENGLISH, RUSSIAN, "ru") == []
    assert changed("131,072", "131\u202f072", "ru") == []  # a thin space groups digits too


@pytest.mark.parametrize("mutant", [
    RUSSIAN.replace("131\u00a0072", "131\u00a0073"),  # a grouped number's value
    RUSSIAN.replace("0,63", "0,64"),  # a decimal comma's value
    RUSSIAN.replace("в\u00a05\u00a0раз", "в\u00a06\u00a0раз"),  # a multiplier
    RUSSIAN.replace("при 1024", "при 1,024"),  # a Russian reader reads 1,024 as 1.024
], ids=["grouped", "decimal", "multiplier", "english-grouping-read-as-decimal"])
def test_a_changed_number_value_is_a_finding(mutant):
    assert any(what.startswith("number") for what in changed(ENGLISH, mutant, "ru"))


@pytest.mark.parametrize("mutant", [
    RUSSIAN.replace("128\u00a0КиБ", "128\u00a0МиБ"),
    RUSSIAN.replace("128\u00a0КиБ", "128\u00a0КБ"),
    RUSSIAN.replace("5\u00a0мс", "5\u00a0мкс"),
], ids=["KiB-MiB", "KiB-KB", "ms-us"])
def test_a_changed_unit_is_a_finding(mutant):
    assert any(what.startswith("unit") for what in changed(ENGLISH, mutant, "ru"))


def test_formula_words_may_be_translated_but_not_its_operators():
    english = r"$$p_j = \begin{cases} s_j & \text{if allowed} \\ -\infty & \text{otherwise} \end{cases}, j \le i$$"
    russian = english.replace("if allowed", "если разрешено").replace("otherwise", "иначе")
    assert changed(english, russian, "ru") == []
    assert changed(english, russian.replace(r"\le", "<"), "ru") != []
    assert changed(english, russian.replace("-\\infty", "+\\infty"), "ru") != []


def test_a_code_span_of_words_may_be_translated_and_code_may_not():
    assert changed("Use `Runtime → Run all`.", "Выберите `Среда выполнения → Выполнить все`.", "ru") == []
    assert changed("Call `mask(4)`.", "Вызовите `маска(4)`.", "ru") != []


@pytest.mark.parametrize("english,russian,expected", [
    ("131,072 bytes", "131,072 байта", f"131{NBSP}072 байта"),
    ("1,024 keys", "1,024 ключа", "1024 ключа"),
    ("0.63 and 1.5", "0.63 и 1.5", "0,63 и 1,5"),
    ("5x fewer", "в 5x меньше", f"в{NBSP}5{NBSP}раз меньше"),
    ("2-4× the throughput", "в 2-4× выше", f"в{NBSP}2–4{NBSP}раза выше"),
    ("up to 22.2x", "до 22.2x", f"до{NBSP}22,2{NBSP}раза"),
    ("heads 0-3", "головы 0-3", "головы 0–3"),
    ("17.2 GB", "17.2 GB", f"17,2{NBSP}ГБ"),
    ("Vaswani et al.", "Vaswani et al.", "Vaswani и др."),
    ("Llama 3.1 8B - a model", "Llama 3.1 8B — модель", f"Llama{NBSP}3.1{NBSP}8B{NBSP}— модель"),
    ("torch 2.4, Module 5.2, section 3.1", "torch 2.4, модуль 5.2, раздел 3.1", "torch 2.4, модуль 5.2, раздел 3.1"),
    ("| 1, 0.5, 0.25 |", "| 1, 0.5, 0.25 |", "| 1; 0,5; 0,25 |"),
    ('"The cat sat"', '"The cat sat"', "«The cat sat»"),
    ('"The cat\nsat"', 'слова *"The cat\nsat"*', "слова *«The cat\nsat»*"),
    ('== "error" or "zero"', 'при == "error" и "zero"', 'при == "error" и "zero"'),  # quoted values stay
    ("2.125", "2,125", "2,125"),  # already a Russian decimal comma
])
def test_typeset_writes_russian_typography_and_keeps_the_values(english, russian, expected):
    assert typeset(russian, english) == expected
    assert changed(english, expected, "ru") == []
    assert typeset(expected, english) == expected  # a second run changes nothing


def test_typeset_never_touches_code_urls_or_minus_signs_and_gives_formulas_russian_decimals():
    text = "Код `x = 1,024 * 0.5`, формула $0.5 - 1{,}024$, [статья](https://arxiv.org/abs/2307.03172), d - 1 и {count}."
    assert typeset(text, "") == text.replace("$0.5 - ", "$0{,}5 - ")  # 1{,}024 is no English thousands group here: the English lacks it


def test_the_lint_reports_english_forms_and_is_silent_on_russian_ones():
    assert {f.split(" in English")[0] for f in english_forms("131,072 байта, 0.63, в 5x, 17.2 GB, Dao et al.", "131,072")} == {
        "grouped thousands", "decimal point", "multiplier", "multiplier sign", "English unit", "et al."}
    assert english_forms(RUSSIAN, ENGLISH) == []
    assert english_forms("стоит 0,1× цены", "") != []  # reported, never rewritten: it needs a rewording


SOURCE = '''# %% [markdown]
# A window of 4,096 keys costs 0.54 GB.

# %%
LANGUAGE = "en"
'''


def catalog_for(russian: str) -> polib.POFile:
    """A catalog for SOURCE with its one unit translated as ``russian``."""
    merged = po.merge(polib.POFile(), units(SOURCE), "toy.py")
    merged[0].msgstr = russian
    return merged


def test_check_accepts_russian_formatting_and_reports_english_forms():
    good = catalog_for(f"Окно в 4096 ключей стоит 0,54{NBSP}ГБ.")
    assert po.findings(good, units(SOURCE), "toy.po", "ru") == []
    bad = catalog_for("Окно в 4,096 ключей стоит 0.54 GB.")
    kinds = sorted({f.kind for f in po.findings(bad, units(SOURCE), "toy.po", "ru")})
    assert kinds == ["number", "typography"]


def test_rewrite_fixes_a_catalog_and_refuses_when_a_value_would_change(tmp_path, monkeypatch):
    path = tmp_path / "toy.po"
    path.write_text(po.dumps(catalog_for("Окно в 4,096 ключей стоит 0.54 GB."), "ru", "toy.py"), encoding="utf-8")
    outputs, refused = lint.rewrite([path], "ru", str)
    assert refused == [] and f"Окно в 4096 ключей стоит 0,54{NBSP}ГБ." in outputs[path]
    monkeypatch.setattr(lint, "typeset", lambda text, english=None: text.replace("4,096", "4097"))
    outputs, refused = lint.rewrite([path], "ru", str)
    assert len(refused) == 1 and "number '4097'" in refused[0]


def test_the_command_writes_nothing_when_a_rewrite_is_refused(monkeypatch):
    from builder import cli

    catalogs = sorted((ROOT / "translations" / "ru").glob("*.po"))
    before = {p: p.read_bytes() for p in catalogs}
    monkeypatch.setattr(lint, "typeset", lambda text, english=None: text.replace("1", "7"))
    assert cli.main(["translations", "--typography"]) != 0
    assert {p: p.read_bytes() for p in catalogs} == before


def test_the_course_catalogs_are_already_in_russian_typography():
    for path in sorted((ROOT / "translations" / "ru").glob("*.po")):
        for entry in po.load(path):
            if entry.msgstr and not entry.obsolete:
                assert typeset(entry.msgstr, entry.msgid) == entry.msgstr, (path.name, entry.msgctxt)


def test_figure_labels_are_linted_too():
    source = 'ax.set_title(localized(language, "17.2 GB at 1,048,576 tokens", "17.2 GB при 1,048,576 токенов"))\n'
    found = lint.label_findings(source, "toy.py")
    assert {(f.kind, f.line) for f in found} == {("typography", 1)} and len(found) == 3
    fixed = source.replace("17.2 GB при 1,048,576", f"17,2{NBSP}ГБ при 1{NBSP}048{NBSP}576")
    assert lint.label_findings(fixed, "toy.py") == []


def test_catalogs_no_notebook_owns_are_linted_and_glossary_checked(tmp_path):
    from types import SimpleNamespace


    folder = tmp_path / "translations" / "ru"
    folder.mkdir(parents=True)
    (folder / "glossary.po").write_text('#. stems: каузальн\n#. avoid: причинн\nmsgid "causal"\nmsgstr "каузальный"\n', encoding="utf-8")
    (folder / "messages.po").write_text('msgid "The causal mask hides 1,024 keys."\nmsgstr "Причинная маска скрывает 1,024 ключа."\n', encoding="utf-8")
    course = SimpleNamespace(languages=("ru",), root=tmp_path, translations=[], shown=lambda p: Path(p).name)
    assert {f.kind for f in lint.other_catalog_findings(course)} == {"typography"}
    assert [f.path for f in lint.course_violations(course)] == ["messages.po", "messages.po"]


def test_typography_leaves_an_fstring_field_with_spaces_alone():
    """A field is code: {float(row[False, 1.0]):.2f} keeps its 1.0, while the prose around it is typeset."""
    english = "reaches {float(row[False, 1.0]):.2f} at 0.5"
    assert typeset("доходит до {float(row[False, 1.0]):.2f} при 0.5", english) == "доходит до {float(row[False, 1.0]):.2f} при 0,5"


# ---- numbers in printed lines and formulas ------------------------------------------------------------

def test_number_writes_the_readers_typography_and_leaves_what_is_no_number():
    from builder.contracts.numerals import number

    assert [number(v, s, "ru") for v, s in ((131072, ","), (131072, ""), (0.6312, ".2f"), (1024, ""), (1.5e-5, ".1e"))] == [
        "131\u202f072", "131\u202f072", "0,63", "1024", "1,5e-05"]
    assert [number(v, "", "ru") for v in ("3.5", True, None)] == ["3.5", "True", "None"]
    assert number(131072, ",") == "131,072" and number(0.63, ".2f", "en") == "0.63"


def test_a_russian_edition_prints_its_fields_through_number_and_keeps_the_rest():
    from builder.translation.render import numbered

    cell = 'x = 3\nprint(f"всего {x:,} байт, доля {r:.2f}, {name!r}, {{x}}")\n'
    out = numbered(cell, "ru")
    assert "{number(x, ',', 'ru')}" in out and "{number(r, '.2f', 'ru')}" in out and "{name!r}" in out and "{{x}}" in out
    assert out.startswith("x = 3\n")


def test_the_russian_editions_print_russian_numbers():
    text = (ROOT / "notebooks" / "ru" / "module3_basic_transformer.py").read_text(encoding="utf-8")
    assert "def number(value" in text and "number(" in text.split("def number(value", 1)[1]
    assert "def number(value" not in (ROOT / "notebooks" / "module3_basic_transformer.py").read_text(encoding="utf-8")


@pytest.fixture
def formulas(monkeypatch):
    """The typography with formulas and «в {field}x» rules on."""
    from builder.translation import typography

    monkeypatch.setattr(typography, "LINT_NUMBERS_IN_CODE", True)
    return typography


def test_formulas_get_russian_decimals_and_thousands_and_keep_their_invariant(formulas):
    from builder.translation.invariants import differences

    english = "At $n = 131{,}072$ the share is $0.63$, $n = 1.25 d = 5{,}120$ and $(2.0, 1.0)$."
    russian = "При $n = 131{,}072$ доля $0.63$, $n = 1.25 d = 5{,}120$ и $(2.0, 1.0)$."
    fixed = formulas.typeset(russian, english)
    assert fixed == "При $n = 131\\,072$ доля $0{,}63$, $n = 1{,}25 d = 5120$ и $(2{,}0; 1{,}0)$."
    assert differences(english, fixed, "ru") == [] and formulas.english_forms(fixed, english) == []
    assert {f.split(" in English")[0] for f in formulas.english_forms(russian, english)} == {
        "grouped thousands in a formula", "decimal point in a formula"}
    assert "math" in [k for k, _ in differences(english, "При $n = 131\\,073$ доля $0{,}63$.", "ru")]


def test_a_fraction_multiplier_field_reads_v_raza(formulas):
    assert formulas.typeset("градиент в {r:.1f}x меньше", "gradient {r:.1f}x smaller") == "градиент в\u00a0{r:.1f}\u00a0раза меньше"
    assert formulas.english_forms("в {r:.1f}x меньше") and not formulas.english_forms("в {n:.0f}x меньше")


def test_a_code_value_in_prose_stays_code():
    assert typeset("окно, sink=1.3, eps=1e-5", "window, sink=1.3, eps=1e-5") == "окно, sink=1.3, eps=1e-5"


def test_a_russian_figure_writes_its_numbers_in_russian_and_keeps_versions():
    import subprocess
    import sys

    script = (
        "import matplotlib; matplotlib.use('Agg')\n"
        "import matplotlib.pyplot as plt\n"
        "from builder.contracts.numerals import localize_figures\n"
        "localize_figures('ru')\n"
        "fig, ax = plt.subplots(); ax.plot([0, 20000], [0, 0.5])\n"
        "texts = [ax.set_title(t).get_text() for t in ('M = 116,736', 'ядро = 1, 0.5, -0.25', '4,880 КиБ', 'Модуль 5.1', 'torch 2.4')]\n"
        "fig.canvas.draw()\n"
        "print(repr(texts)); print(repr([t.get_text() for t in ax.get_xticklabels()][-2:] + [t.get_text() for t in ax.get_yticklabels()][1:3]))\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True).stdout.splitlines()
    assert eval(out[0]) == ["M = 116\u202f736", "ядро = 1; 0,5; -0,25", "4880 КиБ", "Модуль 5.1", "torch 2.4"]
    assert eval(out[1]) == ["20\u202f000", "22\u202f500", "0,0", "0,1"], out[1]
