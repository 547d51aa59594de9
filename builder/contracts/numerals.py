"""Numbers as the reader's language writes them, for a translated edition's printed lines and captions.

A Russian edition writes ``{value:,}`` as ``131 072`` (a narrow no-break space groups the thousands)
and ``{value:.2f}`` as ``0,63``; the builder rewrites each field of a translated print or caption
into ``number(value, spec, language)``, so the format spec stays the English source's and only the
typography changes. Anything but a number (a string, a tensor, a bool) is formatted as the f-string would.
"""

__all__ = ["number", "NUMBER_FORMS"]

# language -> (thousands separator, decimal separator, group integers from this many digits without a spec)
NUMBER_FORMS = {"en": (",", ".", 0), "ru": ("\u202f", ",", 5)}


def number(value, spec="", language="en"):
    """``format(value, spec)`` in ``language``'s number typography: ru ``131 072``, ``0,63``, ``1,5e-05``."""
    import numbers

    text = format(value, spec)
    if language not in NUMBER_FORMS or isinstance(value, bool) or not isinstance(value, numbers.Real) or language == "en":
        return text
    thousands, decimal, group_from = NUMBER_FORMS[language]
    if not spec and isinstance(value, numbers.Integral) and group_from and len(str(abs(int(value)))) >= group_from:
        text = format(value, ",")
    return text.replace(",", "\x00").replace(".", decimal).replace("\x00", thousands)
