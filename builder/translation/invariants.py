"""What a translation must carry over unchanged: numbers, formulas, code spans, links and HTML tags."""

import re
from collections import Counter

_CODE = re.compile(r"`[^`\n]+`")
_DISPLAY_MATH = re.compile(r"\$\$.+?\$\$", re.DOTALL)
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\$)(?:[^$\n]|\n(?![ \t]*\n))+?(?<!\\)\$")
_URL = re.compile(r"\]\(([^)\s]+)\)")
_TAG = re.compile(r"</?[a-zA-Z][^>\n]*>")
# An ordinal suffix is not part of the number: "a 3.7th" and "в 3.7 раза" carry the same 3.7.
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)*(?:e[-+]?\d+)?)(?:st|nd|rd|th)?(?!\w)")

# Extraction order matters: a code span may hold a dollar, a formula may hold digits.
_SPANS = (("code", _CODE), ("math", _DISPLAY_MATH), ("math", _INLINE_MATH), ("link", _URL), ("tag", _TAG))


def invariants(text: str) -> Counter:
    """The multiset of (kind, text) items in ``text`` that a translation must keep as they are."""
    found: Counter = Counter()
    rest = text
    for kind, pattern in _SPANS:
        for match in pattern.finditer(rest):
            found[(kind, match.group(1) if kind == "link" else match.group(0))] += 1
        rest = pattern.sub(" ", rest)
    for match in _NUMBER.finditer(rest):
        found[("number", match.group(1))] += 1
    return found


def changed(english: str, translation: str) -> list[str]:
    """Human-readable differences between the invariants of ``english`` and of ``translation``."""
    want, got = invariants(english), invariants(translation)
    problems = []
    for (kind, item), count in sorted((want - got).items()):
        problems.append(f"{kind} {item!r} is in the English {count}x more often than in the translation")
    for (kind, item), count in sorted((got - want).items()):
        problems.append(f"{kind} {item!r} is in the translation but not in the English")
    return problems
