"""Russian typography for translated prose: numbers, multipliers, ranges, units, quotes and no-break spaces.

``typeset`` rewrites the prose of a translation and never touches code spans, formulas, links,
URLs, HTML tags or format fields. ``english_forms`` is the lint: each English-form number or unit
left in Russian prose (``1,024``, ``0.63``, ``5x``, ``2-4``, ``GB``, ``et al.``). ``rewrite`` applies
``typeset`` to whole catalogs and refuses, writing nothing, when a rewrite would change an invariant.
"""

import re
from collections.abc import Callable

from .invariants import UNIT_FORMS

NBSP = "\u00a0"
_PROTECTED = re.compile(
    r"```.*?```|`[^`\n]+`|\$\$.+?\$\$|(?<![\\$])\$(?!\$)(?:[^$\n]|\n(?![ \t]*\n))+?(?<!\\)\$"  # code and math
    r"|\]\([^)\s]+\)|https?://[^\s)>\]]+|</?[a-zA-Z][^>\n]*>|\{[^{}\n]*\}|%[sd]"  # URLs, tags, format fields (an f-string's may hold spaces)
    r"|(?<![\w.])[A-Za-z_]\w*=[^\s,;)\]]+",  # a code value: an argument as code writes it (sink=1.3, eps=1e-5) stays code
    re.DOTALL)
# A number with a dot that is a name, not a fraction: a module or section, a version, a model.
_NAMED_BEFORE = re.compile(
    r"(?<!\w)(?:модул\w*|Module|раздел\w*|§|torch|PyTorch|верси\w*|version|Llama|MLPerf|Python|CUDA|NumPy|numpy|"
    r"IPython|matplotlib|ipykernel|Colab|Qwen|Gemma|Gemini|Mistral|GPT|Claude|BY-SA|BY|рис\.|табл\.)[\s\u00a0(]*$", re.IGNORECASE)
_MODULE = re.compile(r"5\.[12]")
_FRACTION_AFTER = re.compile(r"^[\s\u00a0]*(?:раз|%|[КМГТ]?и?Б|[KMGT]i?B|мс|ms|байт|бит|нат|млрд|миллиард|USD)")
# English symbol -> Russian, from the table the invariants compare units by (a bare s stays: с is also "with")
_UNITS = {english: russian for russian, english in UNIT_FORMS["ru"].items() if english != "s"}
_NUMBER = r"\d+(?:[.,]\d+)?"
_GROUPED = re.compile(r"(?<![\w.,])([1-9]\d{0,2}(?:,\d{3})+)(?![\d]|[.,]\d)")
_DECIMAL = re.compile(r"(?<![\w.,])(?<!\w-)(\d+)\.(\d+)(?![\w]|\.\d)")
# A list of numbers closing a table cell or a parenthesis ("| 1, 0.5, 0.25 |", "(3, 0.5)").
_DECIMAL_LIST = re.compile(r"(?<![\w.,/])\d+(?:\.\d+)?(?:, \d+(?:\.\d+)?)+(?=[ \u00a0]*(?:[|)]|$))")
# "в 5x" and "до 5x" read «в 5 раз», «до 5 раз»; a bare "0.1×" needs a rewording, so the lint reports it and leaves it.
_TIMES = re.compile(rf"(?<!\w)(в|до)[ {NBSP}]+({_NUMBER})(?:[ {NBSP}]*[-–][ {NBSP}]*({_NUMBER}))?[x×](?!\w)")
_BARE_TIMES = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)?[x×](?!\w)")
_RANGE = re.compile(r"(?<![\w.,-])(\d+(?:[.,]\d+)?%?)-(\d+(?:[.,]\d+)?)(?![\w-])")
_UNIT = re.compile(r"(?<![\w-])(KiB|MiB|GiB|TiB|kB|KB|MB|GB|TB|ms|µs|ns)(?![\w-])")
_ET_AL = re.compile(r"\bet al\.")
# Quoted words, on one line or across a line break; not a quoted value in code-like prose ("m": m, == "error").
_QUOTES = re.compile(r'(?<![^\s(*\[])"(?=\S)([^"]*?(?: |[а-яё])[^"]*?)(?<=\S)"(?![\w"])', re.IGNORECASE)
_NUMBER_UNIT = re.compile(rf"(\d) ((?:{'|'.join(_UNITS.values())})(?![\w-])|%)")
# An em dash, or a hyphen standing for one between words; "d - 1" and "m_old - m_new" are minus signs.
_DASH = re.compile(r"(?<=\S) — |(?<=[а-яё»*)]) - (?=[а-яё«*])", re.IGNORECASE)
_MODEL = re.compile(r"\b(Llama|Qwen|Mistral|Gemma|gpt-oss|GPT) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?[BbМM])\b")
_MODEL_SIZE = re.compile(r"\b(Mistral|Mixtral|Llama|Qwen|Gemma) (\d+(?:\.\d+)?B)\b")


def times(number: str) -> str:
    """«раз» or «раза» after ``number`` (в 5 раз, в 2 раза, в 2,5 раза, в 21 раз)."""
    if not number.isdigit():
        return "раза"
    return "раза" if int(number) % 10 in (2, 3, 4) and int(number) % 100 not in (12, 13, 14) else "раз"


def _times(match: re.Match) -> str:
    """«в 5 раз» for ``5x``, «в 2–4 раза» for ``2-4×``, keeping «до» when the English says "up to"."""
    low, high = (_comma(n) if n else n for n in match.group(2, 3))
    numbers = f"{low}–{high}" if high else low
    return f"{match.group(1) or 'в'}{NBSP}{numbers}{NBSP}{times(high or low)}"


def _comma(number: str) -> str:
    """A decimal point as a decimal comma."""
    return number.replace(".", ",")


def _grouped(match: re.Match, english: frozenset[str]) -> str:
    """1,024 -> 1024 and 131,072 -> 131 072 (no-break space): Russian groups five digits and more.

    One comma (``2,125``) is left alone unless the English writes that number grouped: in Russian it
    may already be a decimal comma.
    """
    digits = match.group(1).replace(",", "")
    if match.group(1).count(",") == 1 and digits not in english:
        return match.group(1)
    if len(digits) <= 4:
        return digits
    groups = [digits[max(0, i - 3):i] for i in range(len(digits), 0, -3)][::-1]
    return NBSP.join(groups)


def _decimal(prose: str) -> str:
    """Decimal points as commas, except in names (модуль 5.2, torch 2.4, Llama 3.1); a list of decimals is split by «;»."""
    def named(match: "re.Match | _Shifted") -> bool:
        before = prose[max(0, match.start() - 30):match.start()]
        after = prose[match.end():match.end() + 12]
        if _MODULE.fullmatch(match.group(0)) and not _FRACTION_AFTER.match(after):
            return True
        return bool(_NAMED_BEFORE.search(before))

    prose = _DECIMAL_LIST.sub(lambda m: m.group(0).replace(", ", "; ") if "." in m.group(0) and not _all_named(m, prose, named) else m.group(0), prose)
    return _DECIMAL.sub(lambda m: m.group(0) if named(m) else f"{m.group(1)},{m.group(2)}", prose)


def _all_named(match: re.Match, prose: str, named: Callable[["_Shifted"], bool]) -> bool:
    """Whether every decimal of a list is a name (``5.1, 5.2``), so the list keeps its commas."""
    offset = match.start()
    return all(named(_Shifted(m, offset)) for m in _DECIMAL.finditer(match.group(0)))


class _Shifted:
    """A match inside a substring, seen at its place in the whole prose."""

    def __init__(self, match: re.Match, offset: int):
        self._match, self._offset = match, offset

    def start(self) -> int:
        return self._match.start() + self._offset

    def end(self) -> int:
        return self._match.end() + self._offset

    def group(self, index: int = 0) -> str:
        return self._match.group(index)


def grouped_in(english: str | None) -> frozenset[str]:
    """The numbers the English writes with thousands separators, as digits (``1,024`` -> ``1024``)."""
    return frozenset(m.group(1).replace(",", "") for m in _GROUPED.finditer(english or ""))


Rule = tuple[str, Callable[[str], str], bool]  # (name, rewrite, whether the lint reports it)


def rules(english: str | None = None) -> tuple[Rule, ...]:
    """(name, rewrite, whether the lint reports it: an English form a Russian reader would misread), in order."""
    grouped = grouped_in(english)
    return (
        ("et al.", lambda p: _ET_AL.sub("и др.", p), True),
        ("multiplier", lambda p: _TIMES.sub(_times, p), True),
        ("multiplier sign", lambda p: _BARE_TIMES.sub(lambda m: f"{m.group(0)[:-1]} раз(а)", p), True),
        ("grouped thousands", lambda p: _GROUPED.sub(lambda m: _grouped(m, grouped), p), True),
        ("decimal point", _decimal, True),
        ("hyphen range", lambda p: _RANGE.sub(r"\1–\2", p), True),
        ("English unit", lambda p: _UNIT.sub(lambda m: _UNITS[m.group(1)], p).replace("ТБ/s", "ТБ/с").replace("ГБ/s", "ГБ/с"), True),
        ("quotes", lambda p: _QUOTES.sub(r"«\1»", p), False),
        ("model name", lambda p: _MODEL_SIZE.sub(rf"\1{NBSP}\2", _MODEL.sub(rf"\1{NBSP}\2{NBSP}\3", p)), False),
        ("unit space", lambda p: _NUMBER_UNIT.sub(rf"\1{NBSP}\2", p), False),
        ("dash space", lambda p: _DASH.sub(f"{NBSP}— ", p), False),
    )


_MATH = re.compile(r"\$\$.+?\$\$|(?<![\\$])\$(?!\$)(?:[^$\n]|\n(?![ \t]*\n))+?(?<!\\)\$", re.DOTALL)
_MATH_DECIMAL = re.compile(r"(?<![\w.])(\d+)\.(\d+)(?![\w.])")
_MATH_GROUPED = re.compile(r"(?<![\d{}])\d{1,3}(?:\{,\}\d{3})+(?![\d{])")


# A list of numbers with a decimal among them, (2.0, 1.0, 0.5): with decimal commas its items are split by «;».
_MATH_LIST = re.compile(r"(?<![\w.{}])\d+(?:\.\d+)?(?:,\s*\d+(?:\.\d+)?)+(?![\w.{])")


def _math_list(match: re.Match) -> str:
    """A formula's list of numbers, its items split by «;» once one of them is a decimal."""
    return re.sub(r",(\s*)", lambda m: ";" + (m.group(1) or " "), match.group(0)) if "." in match.group(0) else match.group(0)


def _math_group(number: str) -> str:
    """An English formula's grouped number in Russian: ``5{,}120`` -> ``5120``, ``131{,}072`` -> ``131\\,072`` (as prose groups five digits and more)."""
    digits = number.replace("{,}", "")
    return digits if len(digits) <= 4 else number.replace("{,}", "\\,")


# "в {ratio:.1f}x" reads «в {ratio:.1f} раза»: a number with a fraction always takes «раза»; an integer's form depends on it.
_FIELD_TIMES = re.compile(rf"(?<!\w)(в|до)[ {NBSP}]+(\{{[^{{}}]*?(:[^{{}}]*\.[1-9][fg])?\}})[x×](?!\w)")


def math_rules(english: str | None = None) -> tuple[Rule, ...]:
    """The rules for a formula's numbers: ``0.63`` -> ``0{,}63``, and the English's ``5{,}120`` -> ``5\\,120`` (Russian thousands)."""
    grouped = {m.group(0) for m in _MATH_GROUPED.finditer(english or "")}
    return (
        ("grouped thousands in a formula", lambda f: _MATH_GROUPED.sub(lambda m: _math_group(m.group(0)) if m.group(0) in grouped else m.group(0), f), True),
        ("decimal point in a formula", lambda f: _MATH_DECIMAL.sub(r"\1{,}\2", _MATH_LIST.sub(_math_list, f)), True),
    )


def _pieces(text: str) -> list[tuple[bool, str]]:
    """``text`` cut into (is prose, piece): code, formulas, URLs, tags and format fields are not prose."""
    pieces, at = [], 0
    for match in _PROTECTED.finditer(text):
        pieces += [(True, text[at:match.start()]), (False, match.group(0))]
        at = match.end()
    return pieces + [(True, text[at:])]


def _apply(text: str, rules) -> str:
    """``text`` with ``rules`` applied to its prose only."""
    return _rewrite(_pieces(text), rules)


def _rewrite(pieces: list[tuple[bool, str]], rules, formula_rules=()) -> str:
    """The text of ``pieces`` (from ``_pieces``) with ``rules`` applied to the prose pieces and ``formula_rules`` to the formulas."""
    out = []
    for prose, piece in pieces:
        chosen = rules if prose else formula_rules if _MATH.fullmatch(piece) else ()
        for _, rule, _ in chosen:
            piece = rule(piece)
        out.append(piece)
    return "".join(out)


def typeset(text: str, english: str | None = None) -> str:
    """``text`` (translating ``english``) in Russian typography; code, formulas, URLs, tags and format fields stay as they are."""
    if not LINT_NUMBERS_IN_CODE:
        return _apply(text, [rule for rule in rules(english) if rule[0] not in LINT_ONLY])
    text = _FIELD_TIMES.sub(lambda m: f"{m.group(1)}{NBSP}{m.group(2)}{NBSP}раза" if m.group(3) else m.group(0), text)
    return _rewrite(_pieces(text), [rule for rule in rules(english) if rule[0] not in LINT_ONLY], math_rules(english))


# Whether typeset rewrites, and the lint reports, numbers in formulas and «в {field}x» as well as in prose.
LINT_NUMBERS_IN_CODE = True
# Reported, never rewritten: "стоит 0.1× от цены" needs a rewording («стоит 0,1 цены»), not a substitution.
LINT_ONLY = ("multiplier sign",)


def english_forms(text: str, english: str | None = None) -> list[str]:
    """Each kind of English-form number or unit left in the Russian prose of ``text`` (translating ``english``), with the fix."""
    found, pieces = [], _pieces(text)  # cut once; each lint rule is tried alone on the prose, each formula rule on the formulas
    times_field = _FIELD_TIMES.search(text) if LINT_NUMBERS_IN_CODE else None
    if times_field and times_field.group(3):
        found.append(f"multiplier {times_field.group(0)!r} in English form; Russian writes «в … раза» (a fraction) or «в … раз»: "
                     "`python -m builder translations --typography` rewrites a fraction's")
    tried: list[tuple[Rule | None, tuple[Rule, ...]]]
    tried = [(rule, ()) for rule in rules(english)] + [(None, (rule,)) for rule in math_rules(english) if LINT_NUMBERS_IN_CODE]
    for prose_rule, formula_rule in tried:
        name, _, lint = prose_rule or formula_rule[0]
        fixed = _rewrite(pieces, (prose_rule,) if prose_rule else (), formula_rule) if lint else text
        if fixed != text:
            first = next(i for i, (a, b) in enumerate(zip(text, fixed)) if a != b) if fixed[:len(text)] != text else len(text)
            shown = text[max(0, first - 15):first + 20].replace("\n", " ")
            found.append(f"{name} in English form near {shown!r}; Russian typography writes it otherwise "
                         "(`python -m builder translations --typography` rewrites it)")
    return found
