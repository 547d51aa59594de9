"""A PO file's line layout as gettext's tools write it, so a save by Poedit, Weblate or msgcat is no rewrite.

``rewrap`` takes polib's text (each string on one line per embedded newline) and lays each string out
as ``msgcat --width=79`` does: a string that fits stays on its keyword's line, any other starts with
``""`` and goes on in lines of at most 79 columns, cut after a newline, after spaces, and at the
other places gettext's Unicode line breaking cuts most often (after a hyphen between letters, a
slash, a closing brace before a word). A string whose text is unchanged since the file was read
keeps the layout it had there, whichever tool wrote it, as long as its lines fit in 79 columns.
"""

import re

import polib

WIDTH = 79
_STRING = re.compile(r'^(?P<prefix>#~\| |#~ |#\| )?(?:(?P<key>msgctxt|msgid|msgid_plural|msgstr(?:\[\d+\])?) )?"(?P<body>(?:[^"\\]|\\.)*)"$')
_PORTION = re.compile(r"(?:[^\\]|\\.)*?\\n|(?:[^\\]|\\.)+$")
_BREAK = re.compile(r"(?<= )(?=[^ ])|(?<=[^\W\d_]-)(?=[^\W\d_])|(?<=\})(?=\w)|(?<=[^\W\d_]\.)(?=[^\W\d_])|(?<=/)(?=\w)"
                    r"|(?<=[\])])(?=[\[(])")


def _fields(text: str) -> list[tuple[str, str, str, list[str]] | str]:
    """``text`` as its lines, each string field gathered: (prefix, keyword, escaped text, its lines) or a plain line."""
    out: list[tuple[str, str, str, list[str]] | str] = []
    lines, i = text.split("\n"), 0
    while i < len(lines):
        match = _STRING.match(lines[i])
        if not match or not match.group("key"):
            out.append(lines[i])
            i += 1
            continue
        prefix, key, body, start = match.group("prefix") or "", match.group("key"), match.group("body"), i
        i += 1
        while i < len(lines):
            more = _STRING.match(lines[i])
            if not more or more.group("key") or (more.group("prefix") or "") != prefix:
                break
            body += more.group("body")
            i += 1
        out.append((prefix, key, body, lines[start:i]))
    return out


def wrapped(prefix: str, keyword: str, escaped: str, width: int = WIDTH) -> list[str]:
    """One string field in gettext's layout."""
    one = f'{prefix}{keyword} "{escaped}"'
    inner = escaped[:-2] if escaped.endswith("\\n") else escaped
    if len(one) <= width and "\\n" not in inner:
        return [one]
    lines = [f'{prefix}{keyword} ""']
    for portion in _PORTION.findall(escaped):
        current = ""
        for word in (w for w in _BREAK.split(portion) if w):
            if current and len(prefix) + len(current) + len(word) + 2 > width:
                lines.append(f'{prefix}"{current}"')
                current = word
            else:
                current += word
        if current:
            lines.append(f'{prefix}"{current}"')
    return lines


def rewrap(text: str, original: str | None = None) -> str:
    """polib's ``text`` in gettext's layout; strings unchanged since ``original`` keep their lines from there."""
    kept: dict[tuple[str, str, str], list[str]] = {}
    for field in _fields(original or ""):
        if isinstance(field, tuple):
            prefix, key, body, lines = field
            kept.setdefault((prefix, key, polib.unescape(body)), lines)
    out = []
    for field in _fields(text):
        if isinstance(field, str):
            out.append(field)
            continue
        prefix, key, body, _ = field
        before = kept.get((prefix, key, polib.unescape(body)))
        # the lines kept from the original when gettext could have laid them out so
        if before is not None and all(len(line) <= WIDTH for line in before[1:] or before):
            out += before
        else:
            out += wrapped(prefix, key, body)
    return "\n".join(out)
