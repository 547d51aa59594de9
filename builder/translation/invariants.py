"""What a translation must carry over unchanged: numbers (by value, in order), units, comparison operators, formulas, code spans, links and HTML tags.

Each item has a kind, and a finding is labelled by it. Numbers are compared by value: the English
``131,072`` and ``0.63`` become ``131072`` and ``0.63``, and a language whose typography writes them
otherwise (``131 072``, ``0,63``) gets a normaliser in ``NUMBER_FORMS``. Units are compared through
``UNIT_FORMS`` (ГБ is GB). Inside formulas the words of ``\text{...}`` may be translated, and a code
span that holds only words (``Runtime → Run all``) may be too; everything else in them stays as it is.
"""

import re
from collections import Counter
from collections.abc import Callable

from . import markup

_CODE = re.compile(r"`[^`\n]+`")
_DISPLAY_MATH = re.compile(r"\$\$.+?\$\$", re.DOTALL)
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\$)(?:[^$\n]|\n(?![ \t]*\n))+?(?<!\\)\$")
_URL = re.compile(r"\]\(([^)\s]+)\)")
_TAG = re.compile(r"</?[a-zA-Z][^>\n]*>")
# An ordinal suffix is not part of the number: "a 3.7th" and "в 3.7 раза" carry the same 3.7.
# A multiplier's sign is not either: "5x" and "в 5 раз" carry the same 5. Digits grouped by a no-break
# or thin space ("131 072") are one number.
_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:[\u00a0\u202f]\d{3})+(?:,\d+)?|\d+(?:[.,]\d+)*(?:e[-+]?\d+)?)(?:st|nd|rd|th|x)?(?!\w)")
_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
# Size and time units: "56 KiB" must not become "56 MiB", nor "5 ms" "5 µs". A bare s is left out: the Russian с is
# also the preposition "with" ("2 × 2 с маской").
_UNIT = re.compile(r"(?<!\w)(?:[KMGTP]iB|[kKMGTP]B|[КМГТП]иБ|[кКМГТП]Б|ms|мс|µs|мкс|ns|нс)(?![\w-])")
# \text{...} in a formula holds words, which a translation may translate; the formula around it may not change.
_MATH_TEXT = re.compile(r"\\(text|textrm|mbox|operatorname\*?)\{[^{}]*\}")
# A code span of words only, no code punctuation: the name of a menu or a button, which a translation may translate.
_PROSE_CODE = re.compile(r"`[^\W\d_]+(?:[ \u00a0→'’-]+[^\W\d_]+)+`")
# A comparison in prose or an exercise's instructions (`j <= i`); arrows and quote marks are not comparisons.
_OPERATOR = re.compile(r"<=|>=|==|!=|≤|≥|≠|(?<=\s)[<>](?=\s)")
# Line separators other than LF (str.splitlines and Python's tokenizer end a line at several of them).
LINE_SEPARATORS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"

# Extraction order matters: a code span may hold a dollar, a formula may hold digits. Links and tags are cut from the
# prose here only so that their digits are not read as numbers; ``markup.items`` finds them, with a real parser.
_SPANS = (("code", _CODE), ("math", _DISPLAY_MATH), ("math", _INLINE_MATH), ("link", _URL), ("tag", _TAG))
# Items a translation may not add: they would load, run or link to something the English does not.
MARKUP = ("link", "image", "tag")



def english_number(number: str) -> str:
    """The value of an English number as digits: ``131,072`` -> ``131072``, ``0.63`` stays."""
    return number.replace(",", "") if _GROUPED.fullmatch(number) else number


def russian_number(number: str) -> str:
    """The value of a number in Russian typography as English digits: ``131 072`` -> ``131072``, ``0,63`` -> ``0.63``.

    One comma is a decimal comma, as a Russian reader reads it: ``1,024`` is 1.024, so an English
    ``1,024`` left in Russian prose is a changed number. A decimal point (``0.63``, ``torch 2.4``)
    keeps its value; the typography lint (``typography.english_forms``) reports it where it is prose.
    """
    bare = number.replace("\u00a0", "").replace("\u202f", "")
    if re.fullmatch(r"\d+,\d+", bare):
        return bare.replace(",", ".")
    return english_number(bare)


# language -> how that language's typography writes a number, mapped to its value as English digits.
NUMBER_FORMS: dict[str, Callable[[str], str]] = {"ru": russian_number}
# language -> its own unit symbols, as the English writes them (Russian typography writes ГБ for GB).
UNIT_FORMS: dict[str, dict[str, str]] = {
    "ru": {"КиБ": "KiB", "МиБ": "MiB", "ГиБ": "GiB", "ТиБ": "TiB", "кБ": "kB", "КБ": "KB", "МБ": "MB", "ГБ": "GB", "ТБ": "TB",
           "мс": "ms", "мкс": "µs", "нс": "ns", "с": "s"},
}
_WORD_BEFORE = re.compile(r"(\w+)\W{0,2}$")


def invariants(text: str, language: str | None = None) -> Counter:
    """The multiset of (kind, text) items in ``text`` that a translation must keep as they are."""
    found: Counter = Counter()
    for kind, item in _items(text, language):
        found[(kind, item)] += 1
    return found


def _items(text: str, language: str | None) -> list[tuple[str, str]]:
    """Every invariant item of ``text`` in order: spans first, then units, operators and numbers in the prose left."""
    found, rest = list(markup.items(text)), text
    for kind, pattern in _SPANS:
        if kind not in MARKUP:
            found += [(kind, _span(kind, m.group(0))) for m in pattern.finditer(rest)]
        rest = pattern.sub(" ", rest)
    units = UNIT_FORMS.get(language or "", {})
    found += [("unit", units.get(m.group(0), m.group(0))) for m in _UNIT.finditer(rest)]
    found += [("operator", m.group(0)) for m in _OPERATOR.finditer(rest)]
    return found + [("number", number) for number, _ in _numbers(rest, language)]


def _span(kind: str, item: str) -> str:
    """A span as it must stay: a formula's \\text{} words and a code span of words only may be translated."""
    if kind == "math":
        return _MATH_TEXT.sub(lambda m: f"\\{m.group(1)}{{…}}", item)
    if kind == "code" and _PROSE_CODE.fullmatch(item):
        return "`…words…`"
    return item


def _numbers(prose: str, language: str | None) -> list[tuple[str, str]]:
    """(number, the word right before it) for each number of ``prose`` in order, as its value in English digits."""
    normal = NUMBER_FORMS.get(language or "", english_number)
    found = []
    for match in _NUMBER.finditer(prose):
        before = _WORD_BEFORE.search(prose[max(0, match.start() - 40):match.start()])
        found.append((normal(match.group(1)), before.group(1).lower() if before else ""))
    return found


def _prose(text: str) -> str:
    """``text`` without its code, math, links and tags."""
    for _, pattern in _SPANS:
        text = pattern.sub(" ", text)
    return text


def swapped(english: str, translation: str, language: str | None = None) -> list[str]:
    """Numbers that one English word labels ("pair 0 ... pair 1") and that the translation gives in another order.

    Only such runs are compared: a translation may move a clause, and its numbers with it.
    """
    runs: dict[str, list[str]] = {}
    numbers = _numbers(_prose(english), None)
    for number, word in numbers:
        runs.setdefault(word, []).append(number)
    order = [number for number, _ in _numbers(_prose(translation), language)]
    problems = []
    for word, run in runs.items():
        unique = [n for n in run if sum(1 for m, _ in numbers if m == n) == 1]
        if word and len(unique) > 1:
            theirs = [n for n in order if n in unique]
            if theirs != unique:
                problems.append(f"the English gives {word} {', '.join(unique)} in that order, the translation {', '.join(theirs)}")
    return problems


def russian_math(formula: str) -> str:
    """A formula in Russian typography (decimal ``0{,}63``, thousands ``5\\,120`` or ``2048``) with English decimals and no grouping."""
    formula = re.sub(r"(?<=\d)\{,\}(?=\d)", ".", formula)
    formula = re.sub(r"(?<=\d);(?=\s+\d)", ",", formula)  # a list of decimals: (2{,}0; 1{,}0) is (2.0, 1.0)
    return re.sub(r"(?<=\d)\\,(?=\d{3}(?!\d))", "", formula)


def _ungrouped(formula: str) -> str:
    """An English formula without its thousands groups (``131{,}072`` -> ``131072``)."""
    return re.sub(r"(?<=\d)\{,\}(?=\d{3}(?!\d))", "", formula)


# language -> how that language's typography writes a formula's numbers, as English decimals without grouping.
MATH_FORMS: dict[str, Callable[[str], str]] = {"ru": russian_math}


def _same_math(want: Counter, got: Counter, language: str | None) -> None:
    """Pair off (in place) each formula the translation writes in its language's number typography with its English one."""
    normal = MATH_FORMS.get(language or "")
    if normal is None:
        return
    for (kind, item), count in list((got - want).items()):
        if kind != "math":
            continue
        for english, left in (want - got).items():
            if english[0] == "math" and _ungrouped(english[1]) == normal(item):
                paired = min(count, left)
                got[(kind, item)] -= paired
                got[english] += paired
                break


def differences(english: str, translation: str, language: str | None = None) -> list[tuple[str, str]]:
    """(kind, what) for each way ``translation`` fails to carry ``english``'s invariants; kind ``markup`` for added links or tags."""
    want, got = invariants(english), invariants(translation, language)
    _same_math(want, got, language)
    problems = []
    for (kind, item), count in sorted((want - got).items()):
        problems.append((kind, f"{kind} {item!r} is in the English {count}x more often than in the translation"))
    for (kind, item), count in sorted((got - want).items()):
        label = "markup" if kind in MARKUP else kind
        problems.append((label, f"{kind} {item!r} is in the translation but not in the English" + (
            "; a translation may not add links or HTML" if label == "markup" else "")))
    if not problems:
        problems += [("order", what) for what in swapped(english, translation, language)]
    return problems + line_breaks(english, translation)


def line_breaks(english: str, translation: str) -> list[tuple[str, str]]:
    """A line that could end a comment or a string in the edition (a separator other than LF, or LF in a one-line unit),
    or that jupytext would read back as a cell marker or a magic (``code-line``)."""
    odd = sorted({repr(c) for c in translation if c in LINE_SEPARATORS})
    if odd:
        return [("line-break", f"holds the line separator(s) {', '.join(odd)}, which would end a comment line in the edition")]
    if "\n" in translation and "\n" not in english and english.lstrip().startswith(("#", "|")):
        return [("line-break", "breaks a one-line heading or table row into several lines; keep it on one line")]
    english_lines = set(markup.code_lines(english))
    return [("code-line", f"{what} when the edition's .py is read back; a translated line may not begin with %, !, "
                          "'# %%' or be one word ending in '?'") for what in markup.code_lines(translation) if what not in english_lines]


def unsafe(english: str, translation: str) -> bool:
    """Whether a translation adds a link, image or tag, or holds a line that could end a comment or become code."""
    if line_breaks(english, translation):
        return True
    wanted = Counter(item for item in markup.items(english))
    return bool(Counter(markup.items(translation)) - wanted)


def changed(english: str, translation: str, language: str | None = None) -> list[str]:
    """Human-readable differences between the invariants of ``english`` and of ``translation``."""
    return [what for _, what in differences(english, translation, language)]
