"""Numbers as the reader's language writes them, for a translated edition's printed lines and captions.

A Russian edition writes ``{value:,}`` as ``131 072`` (a narrow no-break space groups the thousands)
and ``{value:.2f}`` as ``0,63``; the builder rewrites each field of a translated print or caption
into ``number(value, spec, language)``, so the format spec stays the English source's and only the
typography changes. Anything but a number (a string, a tensor, a bool) is formatted as the f-string would.
"""

__all__ = ["number", "NUMBER_FORMS", "localize_figures"]

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


def localize_figures(language="en"):
    """Make matplotlib write every figure's numbers in ``language``'s typography: ticks, titles, labels, annotations.

    A translated edition calls this once, after ``number``: each text a figure is given is rewritten, its
    numbers and nothing else (``0.5`` -> ``0,5``, ``4,880 KiB`` -> ``4880 KiB``, ``131,072`` -> ``131 072``, a list
    ``1, 0.5, 0.25`` -> ``1; 0,5; 0,25``); a number that names a version or a module (``torch 2.4``, ``Module 5.1``)
    stays. English keeps matplotlib's own text.
    """
    import re

    import matplotlib.text

    if language == "en" or language not in NUMBER_FORMS or getattr(matplotlib.text, "course_language", None) == language:
        return
    thousands, decimal, group_from = NUMBER_FORMS[language]
    named = re.compile(r"(?:[Mm]odule|[\u041c\u043c]\u043e\u0434\u0443\u043b\u044c|torch|PyTorch|Python|CUDA|Llama|Qwen|Gemma|Mistral|GPT|§)[\s\u00a0]*$")
    numbers = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\w,]|\.\d)")
    listed = re.compile(r"(?<![\w.,])[-−]?\d+(?:\.\d+)?(?:, [-−]?\d+(?:\.\d+)?)+(?![\w.])")

    def one(match, text):
        if named.search(text[max(0, match.start() - 12):match.start()]):
            return match.group(0)
        whole, fraction = match.group(1).replace(",", ""), match.group(2)
        if group_from and len(whole) >= group_from:
            whole = format(int(whole), ",").replace(",", thousands)
        return whole + (decimal + fraction if fraction else "")

    def local(text):
        if not isinstance(text, str) or not any(c.isdigit() for c in text):
            return text
        text = listed.sub(lambda m: m.group(0).replace(", ", "; ") if "." in m.group(0) else m.group(0), text)
        return numbers.sub(lambda m: one(m, text), text)

    original = matplotlib.text.Text.set_text

    def set_text(self, s):
        return original(self, local(s if isinstance(s, str) or s is None else str(s)))

    matplotlib.text.Text.set_text = set_text
    matplotlib.text.course_language = language
