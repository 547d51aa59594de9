"""Numbers as the reader's language writes them, for a translated edition's printed lines and captions.

A Russian edition writes ``{value:,}`` as ``131 072`` (a narrow no-break space groups the thousands)
and ``{value:.2f}`` as ``0,63``; the builder rewrites each field of a translated print or caption
into ``number(value, spec, language)``, so the format spec stays the English source's and only the
typography changes. Anything but a number (a string, a tensor, a bool) is formatted as the f-string would.
"""

__all__ = ["number", "NUMBER_FORMS", "localize_ticks"]

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


def localize_ticks(language="en"):
    """Make matplotlib write tick labels and axis offsets in ``language``'s numbers: ``0,5``, ``10 000`` in Russian.

    Every formatter's output is rewritten, the number in it and nothing else (``2.5 GB`` -> ``2,5 GB``);
    a translated edition calls this once, after ``number``. English keeps matplotlib's own labels.
    """
    import re

    import matplotlib.ticker as ticker

    if language == "en" or language not in NUMBER_FORMS or getattr(ticker, "course_language", None) == language:
        return
    thousands, decimal, group_from = NUMBER_FORMS[language]
    pattern = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\w,])")

    def local(text):
        def one(match):
            whole, fraction = match.group(1).replace(",", ""), match.group(2)
            if group_from and len(whole) >= group_from:
                whole = format(int(whole), ",").replace(",", thousands)
            return whole + (decimal + fraction if fraction else "")
        return pattern.sub(one, text) if isinstance(text, str) else text

    def wrapped(original):
        def call(self, *args, **kwargs):
            return local(original(self, *args, **kwargs))
        call.course_original = original
        return call

    for name in ("ScalarFormatter", "StrMethodFormatter", "FormatStrFormatter", "FuncFormatter", "PercentFormatter",
                 "LogFormatter", "EngFormatter", "FixedFormatter"):
        cls = getattr(ticker, name, None)
        for method in ("__call__", "get_offset", "format_data_short"):
            original = getattr(cls, method, None) if cls is not None else None
            if original is not None and method in vars(cls) and not hasattr(original, "course_original"):
                setattr(cls, method, wrapped(original))
    ticker.course_language = language
